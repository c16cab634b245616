// A minimal stdio MCP server whose one tool always answers with isError: true, for the tests of how
// a tool error reaches the model. JSON-RPC 2.0, one message per line.
const readline = require("readline");
const lines = readline.createInterface({ input: process.stdin });
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
lines.on("line", (line) => {
  const request = JSON.parse(line);
  if (request.id === undefined) {
    return;
  }
  switch (request.method) {
    case "initialize":
      send({ id: request.id, result: { protocolVersion: request.params.protocolVersion, capabilities: { tools: {} },
        serverInfo: { name: "failing", version: "1" } } });
      break;
    case "tools/list":
      send({ id: request.id, result: { tools: [{ name: "tide.check", description: "Always fails.",
        inputSchema: { type: "object", properties: {} } }] } });
      break;
    case "tools/call":
      send({ id: request.id, result: { isError: true, content: [{ type: "text", text: "the tide gauge is offline" }] } });
      break;
    default:
      send({ id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
