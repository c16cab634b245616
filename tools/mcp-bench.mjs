#!/usr/bin/env node
// Load on a bot's MCP endpoint (docs/MCP.md, docs/PERFORMANCE.md): C clients, each with its own session, send one
// kind of request back to back for S seconds; prints requests/s and latency percentiles per kind.
//
//   node tools/mcp-bench.mjs --url http://127.0.0.1:8080/mcp/v1/bots/main --key cf_... [--clients 8] [--seconds 10]
//                            [--kinds ping,tools/list,resources/read,send_message]
//
// Node.js 18+ (fetch with keep-alive). send_message talks to the bot: run it against the mock model
// (./clawfleet mock-llm) unless you mean to pay for the calls.

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, arg, i, all) =>
    arg.startsWith('--') ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs, []));
if (!args.url || !args.key) {
  console.error('usage: node tools/mcp-bench.mjs --url <bot MCP URL> --key <chat key> [--clients N] [--seconds S] [--kinds a,b]');
  process.exit(2);
}
const clients = Number(args.clients ?? 8);
const seconds = Number(args.seconds ?? 10);
const kinds = (args.kinds ?? 'ping,tools/list,resources/read,send_message').split(',');

const base = {'authorization': `Bearer ${args.key}`, 'content-type': 'application/json', 'accept': 'application/json'};

async function post(session, message) {
  const response = await fetch(args.url, {
    method: 'POST', headers: session ? {...base, 'mcp-session-id': session} : base, body: JSON.stringify(message)});
  const text = await response.text();
  if (response.status !== 200 && response.status !== 202) {
    throw new Error(`${message.method}: HTTP ${response.status} ${text}`);
  }
  return {response, body: text ? JSON.parse(text) : null};
}

async function open() {
  const {response} = await post(null, {jsonrpc: '2.0', id: 0, method: 'initialize', params: {
    protocolVersion: '2025-11-25', capabilities: {}, clientInfo: {name: 'mcp-bench', version: '1'}}});
  const session = response.headers.get('mcp-session-id');
  await post(session, {jsonrpc: '2.0', method: 'notifications/initialized'});
  return session;
}

function request(kind, id, client) {
  switch (kind) {
    case 'send_message':
      return {jsonrpc: '2.0', id, method: 'tools/call',
        // a new chat every 100 messages: a chat may send 120 a minute (limits.chatMessagesPerMinute)
        params: {name: 'send_message', arguments: {text: `bench ${client}-${id}`, chat: `bench-${client}-${Math.floor(id / 100)}`}}};
    case 'resources/read':
      return {jsonrpc: '2.0', id, method: 'resources/read',
        params: {uri: args.url.replace(/^https?:\/\/[^/]+\/mcp\/v1\/bots\/([^/]+).*$/, 'clawfleet://bots/$1/workspace/IDENTITY.md')}};
    default:
      return {jsonrpc: '2.0', id, method: kind, params: {}};
  }
}

function percentile(sorted, p) {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p / 100 * sorted.length))];
}

const sessions = await Promise.all(Array.from({length: clients}, open));
const report = [];
for (const kind of kinds) {
  const latencies = [];
  let errors = 0;
  let firstError = null;
  const deadline = performance.now() + seconds * 1000;
  await Promise.all(sessions.map(async (session, client) => {
    for (let id = 1; performance.now() < deadline; id++) {
      const started = performance.now();
      try {
        const {body} = await post(session, request(kind, id, client));
        if (body.error || body.result?.isError) {
          errors++;
          firstError ??= JSON.stringify(body.error ?? body.result.content);
        }
        latencies.push(performance.now() - started);
      } catch (e) {
        errors++;
        firstError ??= String(e.message);
      }
    }
  }));
  latencies.sort((a, b) => a - b);
  report.push({kind, requests: latencies.length, perSecond: Math.round(latencies.length / seconds), errors,
    p50ms: +percentile(latencies, 50).toFixed(2), p99ms: +percentile(latencies, 99).toFixed(2)});
  if (firstError) {
    console.error(`${kind}: ${errors} errors, the first: ${firstError.slice(0, 300)}`);
  }
}
await Promise.all(sessions.map(session => fetch(args.url, {method: 'DELETE', headers: {...base, 'mcp-session-id': session}})));
console.log(`${clients} clients, ${seconds} s per kind, ${args.url}`);
console.table(report);
console.log(JSON.stringify(report));
