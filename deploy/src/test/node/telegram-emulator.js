// Runs telegram-test-api (an emulated Telegram Bot API server) for TelegramEmulatorTest.
// Bots call {url}/bot<token>/<method>; tests play users through {url}/sendMessage and read what
// the bot sent through {url}/getUpdates. Prints "ready <port>" when it listens.
// The package exports the server class itself (module.exports = TelegramServer).
const TelegramServer = require('telegram-test-api');

const port = parseInt(process.env.PORT || '9000', 10);
const server = new TelegramServer({ port, host: '127.0.0.1', storeTimeout: 600 });
server.start().then(() => console.log(`ready ${port}`));
const stop = () => server.stop().then(() => process.exit(0), () => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
