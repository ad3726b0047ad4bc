// The official TypeScript MCP SDK client as the serving-cost bench drives it: one session over streamable HTTP,
// CALLS sequential `tools/call`s of `echo`, each timed; prints "p50 p99 max" in microseconds.
//
// Usage: node ts_client.mjs URL CALLS NODE_MODULES   (the node_modules directory @modelcontextprotocol/sdk is in)
import { createRequire } from "node:module";
import { join } from "node:path";

// ESM resolution ignores NODE_PATH, so the SDK is resolved from the directory given.
const require = createRequire(join(process.argv[4], "resolve.js"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

const [url, calls] = [process.argv[2], Number(process.argv[3])];
const client = new Client({ name: "fisk-ai-bench", version: "1" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const call = () => client.callTool({ name: "echo", arguments: { words: ["hello"] } });
for (let i = 0; i < 50; i++) await call();
const lat = [];
for (let i = 0; i < calls; i++) {
  const t = process.hrtime.bigint();
  const r = await call();
  lat.push(Number(process.hrtime.bigint() - t) / 1000);
  if (r.isError) throw new Error(JSON.stringify(r));
}
lat.sort((a, b) => a - b);
const at = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
console.log(`${at(0.5).toFixed(0)} ${at(0.99).toFixed(0)} ${lat[lat.length - 1].toFixed(0)}`);
await client.close();
