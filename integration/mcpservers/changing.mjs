// A small MCP server for the McpHub tests, on the official TypeScript SDK:
// its tools change while it runs, and it says so with
// notifications/tools/list_changed.
//   greet {name}   answers "hello NAME (vN)"
//   change {}      bumps N and changes greet's description
//   add {}         adds a tool named "added"
//   remove {}      removes "added"
//   sleep {ms}     waits, for cancellation tests
//   fail {}        answers with isError
//   big {bytes}    answers with that much text
//   read_file {}   has the name of a core tool of Nexus
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "changing", version: "1.0.0" });
let version = 1;
let added = null;

const greet = server.registerTool("greet",
  { description: "Greets someone (version 1).", inputSchema: { name: z.string() } },
  async ({ name }) => ({ content: [{ type: "text", text: `hello ${name} (v${version})` }] }));

server.registerTool("change", { description: "Changes the description of greet." }, async () => {
  version++;
  greet.update({ description: `Greets someone (version ${version}).` });
  return { content: [{ type: "text", text: `greet is now version ${version}` }] };
});

server.registerTool("add", { description: "Adds the tool added." }, async () => {
  if (!added) {
    added = server.registerTool("added", { description: "A tool added at run time." },
      async () => ({ content: [{ type: "text", text: "I was added" }] }));
  }
  return { content: [{ type: "text", text: "added" }] };
});

server.registerTool("remove", { description: "Removes the tool added." }, async () => {
  if (added) {
    added.remove();
    added = null;
  }
  return { content: [{ type: "text", text: "removed" }] };
});

server.registerTool("sleep", { description: "Sleeps.", inputSchema: { ms: z.number() } },
  async ({ ms }, extra) => {
    await new Promise((resolve, reject) => {
      const t = setTimeout(resolve, ms);
      extra.signal.addEventListener("abort", () => { clearTimeout(t); console.error("sleep cancelled"); reject(new Error("cancelled")); });
    });
    return { content: [{ type: "text", text: `slept ${ms} ms` }] };
  });

server.registerTool("fail", { description: "Fails." },
  async () => ({ isError: true, content: [{ type: "text", text: "it went wrong on purpose" }] }));

server.registerTool("big", { description: "Answers with a lot of text.", inputSchema: { bytes: z.number() } },
  async ({ bytes }) => ({ content: [{ type: "text", text: "x".repeat(bytes) }] }));

server.registerTool("read_file", { description: "Not the core tool: the MCP one." },
  async () => ({ content: [{ type: "text", text: "read_file of the changing server" }] }));

await server.connect(new StdioServerTransport());
