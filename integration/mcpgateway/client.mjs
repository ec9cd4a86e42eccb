// The official MCP TypeScript SDK's client (@modelcontextprotocol/sdk)
// against Nexus's MCP gateway: it launches the real "nexusd mcp" over stdio
// (StdioClientTransport), as Claude Desktop, Cursor or any MCP client
// does, and runs one step of integration/gateway_ts_test.go, which sets up
// the workspace and the daemon and runs this once per step.
//
// Usage: node client.mjs STEP, with NEXUSD (the nexusd binary) and
// NEXUS_WORKSPACE (the workspace) in the environment. Node 22 and the SDK
// are the ones pinned by integration/mcpconformance/package-lock.json; the
// test runs a copy of this file beside their node_modules.
//
// Steps:
//   tools                 initialize; tools/list has the core tools and the
//                         hub server slow's (slow__echo, at once or after
//                         list_changed); read_file and slow__echo answer.
//   list-changed          prints "await slow2" on stdout; the test then adds
//                         and approves the server slow2 in .nexus/mcp.json;
//                         notifications/tools/list_changed comes, the next
//                         tools/list has slow2__echo, and it answers.
//   elicit-server         the hub server asking's own question (its tool
//                         ask) reaches this client as elicitation/create
//                         with the server's message and schema; the answer
//                         reaches the server (the tool's result says it).
//   elicit-permission     write_file, which the default policy asks about,
//                         asks this client with a form whose field offers
//                         allow_once, allow_always, reject_once and
//                         reject_always: allow_once writes the file,
//                         reject_once refuses the call (isError, "denied").
//   unknown               an unknown tool, bad arguments and an unknown
//                         method each get a clear error; a line that is not
//                         JSON gets a parse error or ends only its own
//                         session; the session, a new one and the daemon
//                         keep serving.
//
// Stdout carries only "await NAME" lines for the test; what the step did
// and why it failed go to stderr. Exit status 0 means the step passed.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
	ElicitRequestSchema,
	EmptyResultSchema,
	McpError,
	ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const nexusd = process.env.NEXUSD;
const workspace = process.env.NEXUS_WORKSPACE;

// The four answers of a permission question (policy "ask").
const choices = ["allow_once", "allow_always", "reject_once", "reject_always"];

function log(...args) {
	console.error("ts-client:", ...args);
}

// guard bounds a wait on the gateway, so that a hung one fails the step with
// a message instead of running into go test's timeout; it is no assertion
// on speed.
const guardMs = 120_000;

function guard(promise, what) {
	let timer;
	const timeout = new Promise((_, reject) => {
		timer = setTimeout(() => reject(new Error(`no ${what} after ${guardMs / 1000}s`)), guardMs);
	});
	return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// connect launches nexusd mcp and initializes a session as a client that
// answers elicitations in form mode. The returned session records every
// elicitation/create (questions) and answers each with answer(request),
// and counts tools/list_changed notifications.
async function connect() {
	const session = {
		questions: [],
		answer: () => ({ action: "decline" }),
		listChanged: 0,
		waiters: [],
	};
	const client = new Client(
		{ name: "nexus-ts-client", version: "1.0.0" },
		{ capabilities: { elicitation: { form: {} } } },
	);
	client.setRequestHandler(ElicitRequestSchema, async (request) => {
		session.questions.push(request.params);
		log("elicitation/create:", JSON.stringify(request.params));
		return session.answer(request.params);
	});
	client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
		session.listChanged++;
		for (const w of session.waiters.splice(0)) w();
	});
	const transport = new StdioClientTransport({
		command: nexusd,
		args: ["mcp", "--workspace", workspace],
		stderr: "inherit",
	});
	await client.connect(transport);
	session.client = client;
	// nextListChanged resolves at the next tools/list_changed.
	session.nextListChanged = () => new Promise((resolve) => session.waiters.push(resolve));
	return session;
}

async function toolNames(client) {
	const { tools } = await client.listTools();
	return new Set(tools.map((t) => t.name));
}

// toolsWith returns the names of tools/list once it has name: at once, or
// after the notifications/tools/list_changed that brings it.
async function toolsWith(s, name) {
	for (;;) {
		const next = s.nextListChanged();
		const names = await toolNames(s.client);
		if (names.has(name)) return names;
		await guard(next, `notifications/tools/list_changed bringing ${name} (tools/list: ${[...names].join(" ")})`);
	}
}

// text is the text content of a tools/call result.
function text(result) {
	return (result.content ?? [])
		.filter((c) => c.type === "text")
		.map((c) => c.text)
		.join("");
}

async function call(client, name, args) {
	const result = await client.callTool({ name, arguments: args });
	log(`${name}:`, JSON.stringify(result));
	return result;
}

function noQuestions(session) {
	assert.deepEqual(session.questions, [], "no elicitation/create was expected in this step");
}

const steps = {
	async tools(s) {
		const { client } = s;
		assert.equal(client.getServerVersion()?.name, "nexus", "the server's name");
		assert.ok(client.getServerCapabilities()?.tools?.listChanged, "the server says its tools list changes");
		// When nexusd mcp is the daemon, slow starts after the session.
		const names = await toolsWith(s, "slow__echo");
		for (const n of ["read_file", "write_file", "execute_command", "slow__echo", "slow__wait"]) {
			assert.ok(names.has(n), `tools/list has no ${n}: ${[...names].join(" ")}`);
		}

		const read = await call(client, "read_file", { path: "hello.txt" });
		assert.ok(!read.isError, `read_file failed: ${text(read)}`);
		assert.match(text(read), /hello from the workspace/, "read_file's content");

		const echo = await call(client, "slow__echo", { text: "through the TypeScript SDK" });
		assert.ok(!echo.isError, `slow__echo failed: ${text(echo)}`);
		assert.equal(text(echo), "through the TypeScript SDK");
		noQuestions(s);
	},

	async "list-changed"(s) {
		const { client } = s;
		const before = await toolNames(client);
		assert.ok(before.has("slow__echo") && !before.has("slow2__echo"), `tools before: ${[...before].join(" ")}`);
		const changed = s.listChanged;
		console.log("await slow2"); // the test adds and approves slow2
		const names = await toolsWith(s, "slow2__echo");
		assert.ok(s.listChanged > changed, "slow2's tools came without notifications/tools/list_changed");
		assert.ok(names.has("slow__echo"), "slow's tools are still there");
		const echo = await call(client, "slow2__echo", { text: "from the new server" });
		assert.ok(!echo.isError, `slow2__echo failed: ${text(echo)}`);
		assert.equal(text(echo), "from the new server");
		noQuestions(s);
	},

	async "elicit-server"(s) {
		const { client } = s;
		assert.ok((await toolNames(client)).has("asking__ask"), "tools/list has asking__ask");
		const schema = {
			type: "object",
			properties: {
				name: { type: "string", title: "Name" },
				age: { type: "integer", minimum: 0 },
			},
			required: ["name"],
		};
		const message = "What is your name, and your age?";

		// Accept with content: the server gets it.
		s.answer = () => ({ action: "accept", content: { name: "Ada", age: 36 } });
		let result = await call(client, "asking__ask", { message, schema: JSON.stringify(schema) });
		assert.equal(s.questions.length, 1, "the hub server's question did not reach this client as one elicitation/create (the gateway must pass it on to the client whose call it is)");
		const q = s.questions[0];
		assert.ok(q.mode === undefined || q.mode === "form", `mode ${q.mode}`);
		assert.ok(q.message.includes(message), `the question does not carry the server's message: ${q.message}`);
		assert.deepEqual(Object.keys(q.requestedSchema?.properties ?? {}).sort(), ["age", "name"], "the requested schema's fields");
		assert.ok(!result.isError, `asking__ask failed: ${text(result)}`);
		assert.deepEqual(JSON.parse(text(result)), { action: "accept", content: { name: "Ada", age: 36 } }, "what the server got");

		// Decline: the server gets that too.
		s.answer = () => ({ action: "decline" });
		const more = { type: "object", properties: { more: { type: "string" } } };
		result = await call(client, "asking__ask", { message: "Anything else?", schema: JSON.stringify(more) });
		assert.equal(s.questions.length, 2, "the second question did not reach the client");
		assert.ok(!result.isError, `asking__ask (declined) failed: ${text(result)}`);
		assert.deepEqual(JSON.parse(text(result)), { action: "decline" }, "what the server got");
	},

	async "elicit-permission"(s) {
		const { client } = s;
		// choiceField is the field of a permission question that offers the
		// four choices, as enum or as oneOf/anyOf of consts.
		const choiceField = (q) => {
			for (const [name, p] of Object.entries(q.requestedSchema?.properties ?? {})) {
				const values = new Set([...(p.enum ?? []), ...[...(p.oneOf ?? []), ...(p.anyOf ?? [])].map((o) => o.const)]);
				if (choices.every((c) => values.has(c))) return name;
			}
			return undefined;
		};
		const answerWith = (choice) => (q) => {
			const field = choiceField(q);
			if (!field) return { action: "decline" };
			const content = { [field]: choice };
			// Any other field keeps its default.
			for (const [name, p] of Object.entries(q.requestedSchema.properties)) {
				if (name !== field && p.default !== undefined) content[name] = p.default;
			}
			return { action: "accept", content };
		};
		const question = (n) => {
			assert.equal(s.questions.length, n, "write_file did not ask this client (the gateway must ask a client that can answer elicitations about its own calls)");
			const q = s.questions[n - 1];
			assert.ok(q.mode === undefined || q.mode === "form", `mode ${q.mode}`);
			assert.ok(q.message, "the question has a message");
			assert.ok(choiceField(q), `no field of the requested schema offers ${choices.join(", ")}: ${JSON.stringify(q.requestedSchema)}`);
		};

		s.answer = answerWith("allow_once");
		const allowed = path.join(workspace, "allowed.txt");
		let result = await call(client, "write_file", { path: "allowed.txt", content: "written after allow_once\n" });
		question(1);
		assert.ok(!result.isError, `write_file allowed once failed: ${text(result)}`);
		assert.equal(fs.readFileSync(allowed, "utf8"), "written after allow_once\n", "the file allow_once let write_file write");

		s.answer = answerWith("reject_once");
		const rejected = path.join(workspace, "rejected.txt");
		result = await call(client, "write_file", { path: "rejected.txt", content: "must not be written\n" });
		question(2);
		assert.ok(result.isError, `write_file rejected once did not fail: ${text(result)}`);
		assert.match(text(result), /denied/i, "the refusal says denied");
		assert.ok(!fs.existsSync(rejected), "write_file rejected once wrote the file");
	},

	async unknown(s) {
		const { client } = s;
		// An unknown tool: an error that names it (JSON-RPC error or isError).
		let said;
		try {
			const result = await call(client, "no_such_tool", {});
			assert.ok(result.isError, "calling no_such_tool succeeded");
			said = text(result);
		} catch (err) {
			assert.ok(err instanceof McpError, `calling no_such_tool: ${err}`);
			said = err.message;
		}
		log("no_such_tool:", said);
		assert.match(said, /no_such_tool/, "the error names the unknown tool");
		assert.match(said, /unknown|not found|no tool/i, "the error says the tool is unknown");

		// Arguments that do not match the schema: refused, not run.
		const bad = await call(client, "read_file", { path: 42 });
		assert.ok(bad.isError, `read_file with a number for path: ${text(bad)}`);
		assert.match(text(bad), /invalid|path/i, "the error says the arguments are invalid");

		// A method no MCP server has: JSON-RPC's method not found.
		await assert.rejects(
			client.request({ method: "nexus/no-such-method", params: {} }, EmptyResultSchema),
			(err) => err instanceof McpError && err.code === -32601,
			"an unknown method is not answered with method not found (-32601)",
		);

		// A line that is not JSON, and one that is no JSON-RPC message, on
		// another session of nexusd mcp: each answered with its error, and
		// that session goes on.
		await malformedSession();

		// This session, a new one and the daemon still serve.
		const read = await call(client, "read_file", { path: "hello.txt" });
		assert.ok(!read.isError, `read_file after the errors: ${text(read)}`);
		assert.match(text(read), /hello from the workspace/);
		await client.ping();
		noQuestions(s);
		const fresh = await connect();
		try {
			const again = await call(fresh.client, "read_file", { path: "hello.txt" });
			assert.ok(!again.isError, `read_file on a new session: ${text(again)}`);
		} finally {
			await fresh.client.close();
		}
	},
};

// malformedSession runs nexusd mcp by hand, initializes, and writes a line
// that is not JSON (answered with a parse error, -32700) and one that is
// JSON but no message (-32600, with its id); a ping still gets its answer
// after them, and nexusd mcp exits 0 when its client goes.
async function malformedSession() {
	const child = spawn(nexusd, ["mcp", "--workspace", workspace], { stdio: ["pipe", "pipe", "inherit"] });
	const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
	const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
	// next is the next response (a message with an id), or undefined at
	// the end of the output.
	const next = async (what) => {
		for (;;) {
			const { value, done } = await guard(lines.next(), what);
			if (done) return undefined;
			const msg = JSON.parse(value);
			if (msg.id !== undefined) return msg;
		}
	};
	const send = (msg) => child.stdin.write(`${JSON.stringify(msg)}\n`);
	send({
		jsonrpc: "2.0",
		id: 1,
		method: "initialize",
		params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
	});
	const init = await next("initialize's result");
	assert.ok(init?.result?.serverInfo, `initialize by hand: ${JSON.stringify(init)}`);
	send({ jsonrpc: "2.0", method: "notifications/initialized" });
	child.stdin.write("{this is not JSON\n");
	const answer = await next("an answer to a line that is not JSON");
	log("a line that is not JSON:", JSON.stringify(answer));
	assert.equal(answer?.error?.code, -32700, `the answer to a line that is not JSON: ${JSON.stringify(answer)}`);
	assert.equal(answer.id, null, "a parse error's id is null");
	child.stdin.write(`${JSON.stringify({ jsonrpc: "1.0", id: 7, method: "ping" })}\n`);
	const invalid = await next("an answer to a message of another JSON-RPC version");
	assert.equal(invalid?.error?.code, -32600, `the answer to an invalid request: ${JSON.stringify(invalid)}`);
	assert.equal(invalid.id, 7, "an invalid request's answer names its id");
	send({ jsonrpc: "2.0", id: 2, method: "ping" });
	const pong = await next("the answer to a ping after the bad lines");
	assert.deepEqual(pong, { jsonrpc: "2.0", id: 2, result: {} }, `ping after the bad lines: ${JSON.stringify(pong)}`);
	child.stdin.end();
	const { code, signal } = await guard(exited, "nexusd mcp's exit once its client went");
	assert.equal(code, 0, `nexusd mcp exited with ${code ?? signal}`);
}

async function main() {
	const name = process.argv[2];
	const step = steps[name];
	if (!step || !nexusd || !workspace) {
		console.error(`usage: NEXUSD=... NEXUS_WORKSPACE=... node client.mjs {${Object.keys(steps).join("|")}}`);
		process.exit(2);
	}
	const session = await connect();
	try {
		await step(session);
	} finally {
		await session.client.close();
	}
	log(`${name}: ok`);
}

main().catch((err) => {
	console.error(`ts-client: ${process.argv[2]}: FAIL: ${err?.stack ?? err}`);
	process.exit(1);
});
