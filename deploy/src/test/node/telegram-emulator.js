// Runs telegram-test-api (an emulated Telegram Bot API server) for TelegramEmulatorTest.
// Bots call {url}/bot<token>/<method>; tests play users through {url}/sendMessage and read what
// the bot sent through {url}/getUpdates. Prints "ready <port>" when it listens.
// The package exports the server class itself (module.exports = TelegramServer).
//
// Webhooks: the package posts an update to the webhook once, without the secret token, and concurrently with the
// next. Telegram sends the secret given to setWebhook in X-Telegram-Bot-Api-Secret-Token, posts a bot's updates one
// at a time with max_connections 1, and posts an update again until it is answered with a 2xx. addUserUpdate is
// replaced below to do the same; everything else is the package's own.
const axios = require('axios');
const TelegramServer = require('telegram-test-api');

const port = parseInt(process.env.PORT || '9000', 10);
const server = new TelegramServer({ port, host: '127.0.0.1', storeTimeout: 600 });

const queues = {};
server.addUserUpdate = function addUserUpdate(update) {
  const webhook = this.webhooks[update.botToken];
  this.updateId++;
  if (!webhook) {
    this.storage.userMessages.push(update);
    return Promise.resolve();
  }
  const body = TelegramServer.formatUpdate(update);
  const headers = webhook.secret_token ? { 'X-Telegram-Bot-Api-Secret-Token': webhook.secret_token } : {};
  const post = async () => {
    for (let attempt = 0; ; attempt++) {
      try {
        const answer = await axios({ url: webhook.url, method: 'POST', data: body, headers, timeout: 10000,
          validateStatus: () => true });
        if (answer.status >= 200 && answer.status < 300) {
          return;
        }
        console.log(`webhook answered ${answer.status} to update ${body.update_id}, posting it again`);
      } catch (e) {
        console.log(`webhook post of update ${body.update_id} failed (${e.message}), posting it again`);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 100 * 2 ** attempt)));
    }
  };
  queues[update.botToken] = (queues[update.botToken] || Promise.resolve()).then(post);
  return Promise.resolve();
};

server.start().then(() => console.log(`ready ${port}`));
const stop = () => server.stop().then(() => process.exit(0), () => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
