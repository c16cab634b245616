// A minimal stdio MCP server with state, for the tests of warm sessions: "count" adds one to a counter kept in the
// process and answers it with the process id (so consecutive answers show whether one process served them), and
// "count_slowly" does so after waiting; both change state and carry no hints (a worker must not run them twice).
// "peek_slowly" reads the counter after waiting and is marked read-only and idempotent. JSON-RPC 2.0, one message
// per line.
const readline = require("readline");
const lines = readline.createInterface({ input: process.stdin });
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
let count = 0;
const text = (value) => ({ content: [{ type: "text", text: "count " + value + " pid " + process.pid }] });
const waiting = { type: "object", properties: { ms: { type: "integer" } } };
lines.on("line", (line) => {
  const request = JSON.parse(line);
  if (request.id === undefined) {
    return;
  }
  switch (request.method) {
    case "initialize":
      send({ id: request.id, result: { protocolVersion: request.params.protocolVersion, capabilities: { tools: {} },
        serverInfo: { name: "counter", version: "1" } } });
      break;
    case "tools/list":
      send({ id: request.id, result: { tools: [
        { name: "count", description: "Adds one and says the count.", inputSchema: { type: "object", properties: {} } },
        { name: "count_slowly", description: "Waits, adds one and says the count.", inputSchema: waiting },
        { name: "peek_slowly", description: "Waits and says the count.", inputSchema: waiting,
          annotations: { readOnlyHint: true, idempotentHint: true } }] } });
      break;
    case "tools/call": {
      const args = request.params.arguments || {};
      const answer = () => {
        if (request.params.name !== "peek_slowly") {
          count += 1;
        }
        send({ id: request.id, result: text(count) });
      };
      if (request.params.name === "count") {
        answer();
      } else {
        setTimeout(answer, args.ms || 0);
      }
      break;
    }
    default:
      send({ id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
