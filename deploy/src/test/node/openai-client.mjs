// The official OpenAI SDK as a client of a Clawfleet gateway's OpenAI-compatible endpoint (issue 14).
// Usage: CLAWFLEET_URL=http://127.0.0.1:8080 CLAWFLEET_API_KEY=... node openai-client.mjs
// Prints one JSON object with what the SDK saw, for the Java test to check.
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: process.env.CLAWFLEET_URL + '/v1', apiKey: process.env.CLAWFLEET_API_KEY, maxRetries: 0 });
const messages = [{ role: 'user', content: 'hello from the SDK' }];
const out = {};

const first = await client.chat.completions.create({ model: 'default', messages, user: 'sdk-chat-1' });
out.first = { id: first.id, object: first.object, content: first.choices[0].message.content, usage: first.usage };
const second = await client.chat.completions.create({ model: 'default', messages, user: 'sdk-chat-2' });
out.second = { id: second.id, usage: second.usage };

const stream = await client.chat.completions.create({
  model: 'default', messages, user: 'sdk-chat-3', stream: true, stream_options: { include_usage: true },
});
const chunks = [];
for await (const chunk of stream) {
  chunks.push({ id: chunk.id, choices: chunk.choices.length, delta: chunk.choices[0]?.delta?.content ?? null, usage: chunk.usage ?? null });
}
out.stream = { chunks: chunks.length, text: chunks.map((c) => c.delta ?? '').join(''), ids: [...new Set(chunks.map((c) => c.id))],
  last: chunks[chunks.length - 1] };

try {
  await client.chat.completions.create({
    model: 'default', messages, user: 'sdk-chat-4',
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }],
  });
  out.tools = { refused: false };
} catch (e) {
  out.tools = { refused: true, status: e.status, type: e.type ?? e.error?.type, code: e.code ?? e.error?.code, message: e.message };
}

try {
  await client.chat.completions.create({ model: 'no-such-bot/fast', messages });
  out.unknownModel = { refused: false };
} catch (e) {
  out.unknownModel = { refused: true, status: e.status, code: e.code ?? e.error?.code };
}

console.log(JSON.stringify(out));
