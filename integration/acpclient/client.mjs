// The official ACP TypeScript SDK's client (@agentclientprotocol/sdk)
// against Nexus's agent over the Agent Client Protocol: it launches the real
// "nexusd acp --workspace WS" and speaks newline-delimited JSON-RPC with it
// over stdio, as Zed or any ACP client does, and runs one step of
// integration/acp_ts_test.go, which sets up the workspace (its model is the
// local llama-server with a tiny random model) and runs this once per step.
//
// Usage: node client.mjs STEP, with NEXUSD (the nexusd binary) and
// NEXUS_WORKSPACE (the workspace) in the environment; the step mcp-server
// also needs ACP_MCP_SERVER (an MCP server on stdio). Node 22 and the SDK are
// the ones pinned by integration/mcpconformance/package-lock.json; the test
// runs a copy of this file beside their node_modules.
//
// The client declares fs.readTextFile and fs.writeTextFile, not terminal.
// Its readTextFile answers from its buffers (see Agent.buffers), else from
// the disk; its writeTextFile writes into its buffers, never to the disk, so
// that a write that reached the disk did not come through the client.
//
// The model is random: the steps check shapes (updates, tool calls, their
// statuses, stop reasons, which client methods were called), never the
// model's text. A turn whose random model called no tool is tried again, a
// few times.
//
// Steps:
//   initialize    protocol version 1; loadSession, promptCapabilities
//                 .embeddedContext; agentInfo.name "nexus".
//   session-new   session/new on the workspace: a session id, then an
//                 available_commands_update with "help".
//   prompt-tools  a turn whose model calls read_file or list_directory:
//                 tool_call, then tool_call_update completed, kind read; stop
//                 reason end_turn or max_turn_requests; no permission asked.
//   permission    write_file, which the policy asks about: the client gets
//                 session/request_permission with the four options and the
//                 ICERC record; allow_once → the write reaches the client's
//                 writeTextFile (WS/notes.txt, "hello") and completes; a
//                 second turn, reject_once → the call fails, nothing written.
//   fs-read       read_file of README.md reads the client's buffer (which
//                 differs from the disk) through fs/read_text_file; the
//                 completed call's rawOutput carries the buffer's text.
//   cancel        while a permission request is pending the client sends
//                 session/cancel and answers it cancelled: the prompt ends
//                 with stop reason cancelled; nothing is written.
//   load          a session with a turn; nexusd acp stops (stdin closed) and
//                 a new one loads the session: the user message and the tool
//                 calls are replayed before the session/load response;
//                 session/list lists it.
//   mcp-server    session/new with an MCP server on stdio: the client is
//                 asked to approve starting it (allow_always), and "/tools"
//                 lists its tools.
//   errors        a line that is not JSON (-32700, id null), an unknown
//                 method (-32601), session/new outside the workspace (names
//                 the cwd), session/prompt of an unknown session (names the
//                 id): each a JSON-RPC error, and the agent answers after
//                 each.
//   mode          the session's modes include read-only; after
//                 session/set_mode read-only the model's write_file fails
//                 naming read-only, and nothing is written.
//
// Stdout carries one JSON line, the step's result, for the test's own
// checks (the audit log, the disk); what the step did (every message on the
// wire) and why it failed go to stderr. Exit status 0 means the step passed.
// No step has a deadline: a step waits for what it needs, bounded only by
// the Go test's -timeout; a wait that nexusd acp's exit makes hopeless fails
// at once, saying what it waited for.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk";

const nexusd = process.env.NEXUSD;
const workspace = process.env.NEXUS_WORKSPACE;

// The four answers of a permission request, as Nexus names its options.
const choices = ["allow_once", "allow_always", "reject_once", "reject_always"];

// The random model is asked this many times for a turn with a tool call.
const tries = 5;

function log(...args) {
	process.stderr.write(`ts-client: ${args.join(" ")}\n`);
}

function short(value, max = 600) {
	const s = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
	return s.length > max ? `${s.slice(0, max)}…(${s.length} chars)` : s;
}

// describe is a JSON-RPC error as the test reports it.
function describe(err) {
	if (err instanceof acp.RequestError) {
		return `JSON-RPC error ${err.code}: ${err.message}${err.data === undefined ? "" : ` (data ${JSON.stringify(err.data)})`}`;
	}
	return String(err?.stack ?? err);
}

// errorText is all an error says: its message and its data.
function errorText(err) {
	return `${err?.message ?? ""} ${err?.data === undefined ? "" : JSON.stringify(err.data)}`;
}

// The SDK reports what it could not handle (a notification that fails its
// schema, a response to no request, a message that is no JSON-RPC) with
// console.error and goes on; each such report fails the step unless the
// step expects it (Agent.expectComplaint).
let current; // the Agent whose connection is open, for the SDK's reports
const consoleError = console.error;
console.error = (...args) => {
	consoleError("ts-client: the ACP SDK says:", ...args);
	current?.sdkSaid(args);
};

// Agent is one "nexusd acp" process and the SDK's client connection to it.
// Every message on the wire is kept in order (wire), as nexusd sent it:
// the checks read the wire for what came and in which order, and the SDK's
// handlers (which validate each message against ACP's schema) must have
// taken every session/update too.
class Agent {
	static count = 0;

	constructor() {
		this.name = `nexusd acp #${++Agent.count}`;
		this.wire = []; // {dir: "in" | "out", msg} or {dir, raw} for bytes that are no JSON
		this.waiters = [];
		this.problems = []; // what fails the step at its end
		this.expected = []; // SDK reports the step expects (RegExps)
		this.wireUpdates = 0; // session/update notifications on the wire
		this.taken = 0; // … that the SDK's handler got
		this.rejected = []; // what the SDK said of those its schema refused
		this.untaken = []; // the wire's session/update the handler has not got (yet)
		this.permissions = []; // {requestId, params, answer}
		this.reads = []; // {requestId, params, content}
		this.writes = []; // {requestId, params}
		// buffers are the client's open files: readTextFile answers from
		// them first, writeTextFile writes into them.
		this.buffers = new Map();
		// onPermission answers a session/request_permission; unset, a
		// request is a problem (and answered cancelled).
		this.onPermission = undefined;
		this.exit = undefined;
	}

	static async start() {
		const a = new Agent();
		a.launch();
		return a;
	}

	launch() {
		log(`${this.name}: ${nexusd} acp --workspace ${workspace}`);
		const child = spawn(nexusd, ["acp", "--workspace", workspace], { stdio: ["pipe", "pipe", "inherit"] });
		this.child = child;
		// "close", not "exit": what nexusd wrote before it exited is read
		// by then.
		this.exited = new Promise((resolve) => {
			child.on("close", (code, signal) => {
				this.exit = { code, signal };
				log(`${this.name} exited: ${code ?? signal}`);
				resolve(this.exit);
				this.wake();
			});
		});
		child.on("error", (err) => this.problem(`${this.name}: ${err}`));
		child.stdin.on("error", (err) => log(`${this.name}'s stdin: ${err}`));

		// Every line nexusd writes is kept as it comes, before the SDK
		// reads it: a line that is no JSON is a problem (stdout is the
		// protocol), though the SDK only answers it with a parse error.
		let pending = "";
		const decoder = new TextDecoder();
		const tap = new TransformStream({
			transform: (chunk, controller) => {
				pending += decoder.decode(chunk, { stream: true });
				let nl;
				while ((nl = pending.indexOf("\n")) >= 0) {
					this.received(pending.slice(0, nl));
					pending = pending.slice(nl + 1);
				}
				controller.enqueue(chunk);
			},
			flush: () => {
				if (pending.trim()) this.received(pending);
			},
		});
		const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout).pipeThrough(tap));
		const writer = stream.writable.getWriter();
		const wire = {
			readable: stream.readable,
			writable: new WritableStream({
				write: (msg) => {
					this.record({ dir: "out", msg });
					return writer.write(msg);
				},
				close: () => writer.close(),
				abort: (reason) => writer.abort(reason),
			}),
		};

		const app = acp
			.client({ name: "nexus-acp-ts-client" })
			.onRequest(acp.methods.client.session.requestPermission, (cx) => this.permission(cx))
			.onRequest(acp.methods.client.fs.readTextFile, (cx) => this.readTextFile(cx))
			.onRequest(acp.methods.client.fs.writeTextFile, (cx) => this.writeTextFile(cx))
			.onNotification(acp.methods.client.session.update, ({ params }) => this.took(params))
			.onRequest("*", ({ method, params }) => {
				this.problem(`${this.name} called ${method} ${short(params)}, which this client did not offer`);
				throw acp.RequestError.methodNotFound(method);
			})
			.onNotification("*", ({ method, params }) => {
				log(`${this.name}: a notification this client does not know (ignored): ${method} ${short(params)}`);
			});
		this.conn = app.connect(wire);
		this.agent = this.conn.agent;
		current = this;
	}

	received(line) {
		if (!line.trim()) return;
		let msg;
		try {
			msg = JSON.parse(line);
		} catch {
			this.problem(`${this.name} wrote a line that is not JSON on stdout (the protocol's stream): ${short(line)}`);
			this.record({ dir: "in", raw: line });
			return;
		}
		const entry = { dir: "in", msg };
		if (msg?.method === acp.methods.client.session.update) {
			this.wireUpdates++;
			this.untaken.push(entry);
		}
		this.record(entry);
	}

	// took is the SDK's handler of session/update: what it gets passed the
	// SDK's schema; it matches the first untaken update on the wire of the
	// same session, kind and tool call.
	took(params) {
		const key = (p) => [p?.sessionId, p?.update?.sessionUpdate, p?.update?.toolCallId ?? ""].join(" ");
		const i = this.untaken.findIndex((e) => key(e.msg.params) === key(params));
		if (i >= 0) this.untaken.splice(i, 1);
		else this.problem(`the SDK handed over a session/update that is not on the wire: ${short(params)}`);
		this.taken++;
		this.wake();
	}

	record(entry) {
		entry.index = this.wire.length;
		this.wire.push(entry);
		log(`${this.name} ${entry.dir === "in" ? "<-" : "->"} ${short(entry.msg ?? entry.raw)}`);
		this.wake();
	}

	problem(what) {
		log(`PROBLEM: ${what}`);
		this.problems.push(what);
	}

	sdkSaid(args) {
		const text = args.map((a) => (typeof a === "string" ? a : short(a))).join(" ");
		if (args[0] === "Error handling notification" && args[1]?.method === acp.methods.client.session.update) {
			// Which one: settle says.
			this.rejected.push(text);
			this.wake();
			return;
		}
		const i = this.expected.findIndex((re) => re.test(text));
		if (i >= 0) {
			this.expected.splice(i, 1);
			return;
		}
		this.problem(`the ACP SDK reported: ${text}`);
	}

	// expectComplaint lets one SDK report that matches re pass.
	expectComplaint(re) {
		this.expected.push(re);
	}

	wake() {
		this.waiters = this.waiters.filter((w) => !w.check());
	}

	// until resolves with pred's first truthy value, checked whenever
	// something comes; it has no deadline, but fails once nexusd has
	// exited and pred still does not hold.
	until(what, pred) {
		return new Promise((resolve, reject) => {
			const w = {
				check: () => {
					let v;
					try {
						v = pred();
					} catch (err) {
						reject(err);
						return true;
					}
					if (v) {
						resolve(v);
						return true;
					}
					if (this.exit) {
						reject(new Error(`${this.name} exited (${this.exit.code ?? this.exit.signal}) while the client waited for ${what}`));
						return true;
					}
					return false;
				},
			};
			if (!w.check()) {
				log(`waiting for ${what}`);
				this.waiters.push(w);
			}
		});
	}

	// call sends a request through the SDK and returns its result or its
	// error, with the places of the request and of its response on the
	// wire.
	async call(method, params) {
		const from = this.wire.length;
		let result, error;
		try {
			result = await this.agent.request(method, params);
		} catch (err) {
			if (!(err instanceof acp.RequestError)) {
				throw new Error(`${method}: ${describe(err)}${this.exit ? ` (${this.name} exited: ${this.exit.code ?? this.exit.signal})` : ""}`);
			}
			error = err;
		}
		const req = this.wire.find((e) => e.index >= from && e.dir === "out" && e.msg?.method === method && e.msg.id !== undefined);
		assert.ok(req, `the ${method} request is not on the wire`);
		const resp = this.wire.find((e) => e.index > req.index && e.dir === "in" && e.msg && e.msg.method === undefined && e.msg.id === req.msg.id);
		assert.ok(resp, `the response to ${method} (id ${req.msg.id}) is not on the wire`);
		return { result, error, req: req.index, resp: resp.index };
	}

	// request is call for a request that must succeed.
	async request(method, params) {
		const { result, error } = await this.call(method, params);
		if (error) throw new Error(`${method} ${short(params)}: ${describe(error)}`);
		return result;
	}

	async initialize() {
		const init = await this.request(acp.methods.agent.initialize, {
			protocolVersion: acp.PROTOCOL_VERSION,
			clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
			clientInfo: { name: "nexus-acp-ts-client", version: "1.0.0" },
		});
		assert.equal(init?.protocolVersion, 1, `initialize did not negotiate protocol version 1: ${short(init)}`);
		this.init = init;
		return init;
	}

	async newSession(params = {}) {
		const res = await this.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [], ...params });
		assert.equal(typeof res?.sessionId, "string", `session/new answered no session id: ${short(res)}`);
		assert.ok(res.sessionId, "session/new answered an empty session id");
		return res;
	}

	// updates are the session/update notifications of a session on the
	// wire, between the indexes from and to (excluded).
	updates(sessionId, from = 0, to = Infinity) {
		return this.wire
			.filter((e) => e.index >= from && e.index < to && e.dir === "in" && e.msg?.method === acp.methods.client.session.update && e.msg.params?.sessionId === sessionId)
			.map((e) => e.msg.params.update);
	}

	// inbound are the ids of the requests nexusd sent between from and to.
	inbound(method, from, to) {
		return new Set(this.wire.filter((e) => e.index > from && e.index < to && e.dir === "in" && e.msg?.method === method).map((e) => e.msg.id));
	}

	// prompt runs one turn: its response (or error), its updates, its tool
	// calls, and the client requests made during it.
	async prompt(sessionId, text) {
		log(`session/prompt ${JSON.stringify(text)}`);
		const { result, error, req, resp } = await this.call(acp.methods.agent.session.prompt, {
			sessionId,
			prompt: [{ type: "text", text }],
		});
		const updates = this.updates(sessionId, req, resp);
		const during = (list, method) => {
			const ids = this.inbound(method, req, resp);
			return list.filter((r) => ids.has(r.requestId));
		};
		const turn = {
			response: result,
			error,
			updates,
			calls: toolCalls(updates),
			permissions: during(this.permissions, acp.methods.client.session.requestPermission),
			reads: during(this.reads, acp.methods.client.fs.readTextFile),
			writes: during(this.writes, acp.methods.client.fs.writeTextFile),
		};
		log(`the turn ended: ${error ? describe(error) : short(result)}; tool calls: ${short(turn.calls.map(brief))}`);
		return turn;
	}

	// promptUntil runs turns until one has want (a random model), at most
	// tries; llama-server's own mid-stream error ("peg-native") now and
	// then counts as a try.
	async promptUntil(sessionId, text, what, want) {
		let turn;
		for (let i = 1; i <= tries; i++) {
			turn = await this.prompt(sessionId, text);
			if (turn.error) {
				if (/peg-native/.test(errorText(turn.error))) {
					log(`try ${i}: llama-server's own mid-stream error; again`);
					continue;
				}
				throw new Error(`session/prompt ${JSON.stringify(text)}: ${describe(turn.error)}`);
			}
			if (want(turn)) return turn;
			log(`try ${i}: the turn had no ${what}; again`);
		}
		throw new Error(`no turn with ${what} in ${tries} tries; the last turn's updates: ${short(turn?.updates, 4000)}`);
	}

	async permission({ params, requestId }) {
		const rec = { requestId, params };
		this.permissions.push(rec);
		if (!this.onPermission) {
			this.problem(`an unexpected session/request_permission: ${short(params)}`);
			rec.answer = { outcome: { outcome: "cancelled" } };
		} else {
			rec.answer = await this.onPermission(params);
		}
		log(`answered session/request_permission ${requestId}: ${short(rec.answer)}`);
		this.wake();
		return rec.answer;
	}

	readTextFile({ params, requestId }) {
		const rec = { requestId, params };
		this.reads.push(rec);
		this.wake();
		let text = this.buffers.get(params.path);
		if (text === undefined) {
			try {
				text = fs.readFileSync(params.path, "utf8");
			} catch (err) {
				throw acp.RequestError.resourceNotFound(params.path);
			}
		}
		// line is 1-based; limit is a number of lines.
		if (params.line != null || params.limit != null) {
			const lines = text.split("\n");
			const start = Math.max((params.line ?? 1) - 1, 0);
			text = lines.slice(start, params.limit != null ? start + params.limit : undefined).join("\n");
		}
		rec.content = text;
		return { content: text };
	}

	writeTextFile({ params, requestId }) {
		this.writes.push({ requestId, params });
		this.buffers.set(params.path, params.content);
		this.wake();
		return {};
	}

	// settle waits until the SDK has taken (or refused) every
	// session/update that came; each one it refused is a problem.
	async settle() {
		await this.until("the SDK's handler to take every session/update on the wire", () => this.taken + this.rejected.length >= this.wireUpdates);
		for (const e of this.untaken) {
			this.problem(`a session/update that does not match ACP's schema (the SDK dropped it: ${this.rejected.join("; ")}): ${short(e.msg, 2000)}`);
		}
		this.untaken = [];
	}

	// stop closes nexusd acp's stdin, as a client that goes away does,
	// waits for it to exit (with 0: a client going is a normal stop), and
	// closes the connection. Unless after a failure, it first waits for
	// the SDK to take every update that came.
	async stop({ settle = true } = {}) {
		if (settle && !this.exit) await this.settle();
		this.child.stdin.end();
		if (!this.exit) log(`${this.name}: stdin closed, waiting for it to exit`);
		const { code, signal } = await this.exited;
		this.conn.close();
		if (current === this) current = undefined;
		if (code !== 0) this.problem(`${this.name} exited with ${code ?? signal} once its client went (want 0)`);
	}

	// check fails with every problem seen.
	check() {
		if (this.problems.length) {
			throw new Error(`${this.name}:\n  ${this.problems.join("\n  ")}`);
		}
	}
}

// toolCalls gathers a turn's tool_call and tool_call_update by
// toolCallId, in order; each field keeps its last value.
function toolCalls(updates) {
	const calls = new Map();
	for (const u of updates) {
		if (u.sessionUpdate !== "tool_call" && u.sessionUpdate !== "tool_call_update") continue;
		let c = calls.get(u.toolCallId);
		if (!c) {
			c = { id: u.toolCallId, first: u.sessionUpdate, updates: [] };
			calls.set(u.toolCallId, c);
		}
		c.updates.push(u);
		for (const k of ["title", "kind", "status", "rawInput", "rawOutput", "content", "locations"]) {
			if (u[k] !== undefined && u[k] !== null) c[k] = u[k];
		}
	}
	return [...calls.values()];
}

function brief(c) {
	return { id: c.id, title: c.title, kind: c.kind, status: c.status };
}

// text is the text of tool call content or of content blocks.
function text(content) {
	return (content ?? [])
		.map((c) => (c.type === "content" ? c.content : c))
		.filter((b) => b?.type === "text")
		.map((b) => b.text)
		.join("\n");
}

// messageText is the agent_message_chunk text of some updates.
function messageText(updates) {
	return updates
		.filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text")
		.map((u) => u.content.text)
		.join("");
}

function stopReason(turn, ...want) {
	assert.ok(want.includes(turn.response?.stopReason), `stop reason ${short(turn.response)}, want ${want.join(" or ")}`);
}

// announced checks that each call began with a tool_call, that its id is
// a Nexus tool call id (a UUID; the test checks the audit log too) and
// that it ended (completed or failed) before the prompt's response.
function announced(turn) {
	const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
	for (const c of turn.calls) {
		assert.equal(c.first, "tool_call", `call ${c.id} was not announced with a tool_call before its tool_call_update: ${short(c.updates)}`);
		assert.match(c.id, uuid, `toolCallId ${c.id} is no Nexus tool call id`);
		assert.equal(typeof c.title, "string", `call ${c.id} has no title`);
		assert.ok(["completed", "failed"].includes(c.status), `call ${c.id} ended ${c.status} before the prompt's response: ${short(c.updates)}`);
	}
}

function samePath(got, want) {
	const real = path.join(fs.realpathSync(path.dirname(want)), path.basename(want));
	return got === want || got === real;
}

function permissionRequest(p, turn) {
	const ids = p.options?.map((o) => o.optionId) ?? [];
	for (const c of choices) {
		assert.ok(ids.includes(c), `session/request_permission offers no option ${c}: ${short(p.options)}`);
		const o = p.options.find((o) => o.optionId === c);
		assert.equal(o.kind, c, `option ${c} has kind ${o.kind}`);
		assert.ok(o.name, `option ${c} has no name`);
	}
	assert.ok(p.toolCall?.toolCallId, `session/request_permission names no tool call: ${short(p)}`);
	if (turn) {
		assert.ok(
			turn.calls.some((c) => c.id === p.toolCall.toolCallId),
			`session/request_permission is for ${p.toolCall.toolCallId}, which no tool_call of the turn announced: ${short(turn.calls.map(brief))}`,
		);
	}
	const icerc = text(p.toolCall.content);
	assert.match(icerc, /intent/i, `the permission request's toolCall content carries no ICERC intent: ${short(p.toolCall)}`);
	assert.match(icerc, /risk/i, `the permission request's toolCall content carries no ICERC risk: ${short(p.toolCall)}`);
}

const answer = (optionId) => () => ({ outcome: { outcome: "selected", optionId } });

const steps = {
	async initialize() {
		const a = await Agent.start();
		const init = await a.initialize();
		assert.equal(init.agentCapabilities?.loadSession, true, `agentCapabilities.loadSession: ${short(init.agentCapabilities)}`);
		assert.equal(init.agentCapabilities?.promptCapabilities?.embeddedContext, true, `promptCapabilities.embeddedContext: ${short(init.agentCapabilities)}`);
		assert.equal(init.agentInfo?.name, "nexus", `agentInfo: ${short(init.agentInfo)}`);
		assert.ok(init.agentInfo?.version, "agentInfo has no version");
		assert.ok(!init.authMethods || Array.isArray(init.authMethods), `authMethods: ${short(init.authMethods)}`);
		return { agent: a, result: { protocolVersion: init.protocolVersion, agentInfo: init.agentInfo, agentCapabilities: init.agentCapabilities } };
	},

	async "session-new"() {
		const a = await Agent.start();
		await a.initialize();
		const { sessionId } = await a.newSession();
		const u = await a.until("an available_commands_update for the new session", () =>
			a.updates(sessionId).find((u) => u.sessionUpdate === "available_commands_update"),
		);
		const names = (u.availableCommands ?? []).map((c) => c.name);
		assert.ok(names.includes("help"), `available_commands_update has no help: ${short(u)}`);
		for (const c of u.availableCommands) {
			assert.ok(c.name && !c.name.startsWith("/"), `command name ${JSON.stringify(c.name)} (ACP: without the slash)`);
			assert.equal(typeof c.description, "string", `command ${c.name} has no description`);
		}
		return { agent: a, result: { sessionId, commands: names } };
	},

	async "prompt-tools"() {
		const a = await Agent.start();
		await a.initialize();
		const { sessionId } = await a.newSession();
		const turn = await a.promptUntil(sessionId, "Look at the workspace.", "tool call", (t) => t.calls.length > 0);
		stopReason(turn, "end_turn", "max_turn_requests");
		announced(turn);
		for (const c of turn.calls) {
			assert.equal(c.kind, "read", `call ${c.id} (${c.title}) has kind ${c.kind}, want read`);
			assert.equal(c.status, "completed", `call ${c.id} (${c.title}) ended ${c.status}: ${short(c.updates)}`);
		}
		assert.equal(turn.permissions.length, 0, "reads, which the policy allows, asked for permission");
		for (const u of turn.updates.filter((u) => u.sessionUpdate === "usage_update")) {
			assert.ok(Number.isInteger(u.used) && Number.isInteger(u.size), `usage_update: ${short(u)}`);
		}
		return { agent: a, result: { sessionId, stopReason: turn.response.stopReason, toolCalls: turn.calls.map(brief) } };
	},

	async permission() {
		const a = await Agent.start();
		await a.initialize();
		const { sessionId } = await a.newSession();
		const notes = path.join(workspace, "notes.txt");

		a.onPermission = answer("allow_once");
		const allowed = await a.promptUntil(sessionId, "Write a file.", "tool call", (t) => t.calls.length > 0);
		stopReason(allowed, "end_turn", "max_turn_requests");
		announced(allowed);
		assert.ok(allowed.permissions.length > 0, `write_file did not ask for permission (tools.policy write_file: ask): ${short(allowed.calls.map(brief))}`);
		for (const p of allowed.permissions) permissionRequest(p.params, allowed);
		for (const c of allowed.calls) {
			assert.equal(c.kind, "edit", `write_file's call ${c.id} has kind ${c.kind}`);
			assert.equal(c.status, "completed", `write_file allowed once ended ${c.status}: ${short(c.updates)}`);
			assert.ok(allowed.permissions.some((p) => p.params.toolCall.toolCallId === c.id), `call ${c.id} ran without asking`);
		}
		assert.equal(allowed.writes.length, allowed.calls.length, `${allowed.calls.length} completed write_file calls, ${allowed.writes.length} fs/write_text_file requests: ${short(allowed.writes)}`);
		for (const w of allowed.writes) {
			assert.equal(w.params.sessionId, sessionId, "fs/write_text_file's sessionId");
			assert.ok(samePath(w.params.path, notes), `fs/write_text_file's path ${w.params.path}, want ${notes}`);
			assert.equal(w.params.content, "hello", "fs/write_text_file's content");
		}
		assert.ok(!fs.existsSync(notes), "the allowed write reached the disk, not (only) the client's writeTextFile");

		a.onPermission = answer("reject_once");
		const rejected = await a.promptUntil(sessionId, "Write a file.", "tool call", (t) => t.calls.length > 0);
		stopReason(rejected, "end_turn", "max_turn_requests");
		announced(rejected);
		assert.ok(rejected.permissions.length > 0, "write_file did not ask again after allow_once (allow_once is for one call)");
		for (const p of rejected.permissions) permissionRequest(p.params, rejected);
		for (const c of rejected.calls) {
			assert.equal(c.status, "failed", `write_file rejected once ended ${c.status}: ${short(c.updates)}`);
		}
		assert.equal(rejected.writes.length, 0, `a rejected write_file reached the client: ${short(rejected.writes)}`);
		assert.ok(!fs.existsSync(notes), "a rejected write_file wrote the disk");
		return {
			agent: a,
			result: { sessionId, allowed: allowed.calls.map(brief), rejected: rejected.calls.map(brief), writes: allowed.writes.map((w) => w.params) },
		};
	},

	async "fs-read"() {
		const a = await Agent.start();
		const readme = path.join(workspace, "README.md");
		const disk = fs.readFileSync(readme, "utf8");
		const buffer = "# README as the editor's unsaved buffer has it\n";
		assert.notEqual(disk, buffer);
		a.buffers.set(readme, buffer);
		a.buffers.set(path.join(fs.realpathSync(workspace), "README.md"), buffer);
		await a.initialize();
		const { sessionId } = await a.newSession();
		const turn = await a.promptUntil(sessionId, "Read the README.", "tool call", (t) => t.calls.length > 0);
		announced(turn);
		const reads = turn.reads.filter((r) => samePath(r.params.path, readme));
		assert.ok(reads.length > 0, `read_file of README.md did not ask the client (fs/read_text_file): reads ${short(turn.reads.map((r) => r.params))}, calls ${short(turn.calls.map(brief))}`);
		for (const r of reads) assert.equal(r.params.sessionId, sessionId, "fs/read_text_file's sessionId");
		const done = turn.calls.filter((c) => c.status === "completed");
		assert.ok(done.length > 0, `no read_file completed: ${short(turn.calls.map(brief))}`);
		for (const c of done) {
			const out = JSON.stringify(c.rawOutput ?? null);
			assert.ok(out.includes(JSON.stringify(buffer.trim()).slice(1, -1)), `read_file's rawOutput does not carry the client's buffer: ${short(c.rawOutput)}`);
			assert.ok(!out.includes(JSON.stringify(disk.trim()).slice(1, -1)), `read_file's rawOutput carries the disk's README: ${short(c.rawOutput)}`);
		}
		return { agent: a, result: { sessionId, toolCalls: turn.calls.map(brief), reads: turn.reads.map((r) => r.params) } };
	},

	async cancel() {
		const a = await Agent.start();
		await a.initialize();
		const { sessionId } = await a.newSession();
		let cancels = 0;
		// As the spec says: the client sends session/cancel, and answers
		// every pending permission request cancelled.
		a.onPermission = async () => {
			if (cancels++ === 0) {
				log("session/cancel while the permission request is pending");
				await a.agent.notify(acp.methods.agent.session.cancel, { sessionId });
			}
			return { outcome: { outcome: "cancelled" } };
		};
		let turn;
		for (let i = 1; i <= tries && !turn?.permissions.length; i++) {
			turn = await a.prompt(sessionId, "Write a file.");
			if (turn.error && !/peg-native/.test(errorText(turn.error))) throw new Error(`session/prompt: ${describe(turn.error)}`);
		}
		assert.ok(turn.permissions.length > 0, `no turn asked for permission in ${tries} tries: ${short(turn.updates)}`);
		assert.equal(turn.error, undefined, `the cancelled prompt answered an error: ${turn.error && describe(turn.error)}`);
		assert.equal(turn.response?.stopReason, "cancelled", `the cancelled prompt's response: ${short(turn.response)}`);
		for (const c of turn.calls) {
			assert.notEqual(c.status, "completed", `call ${c.id} completed though cancelled: ${short(c.updates)}`);
		}
		assert.equal(a.writes.length, 0, `a cancelled write reached the client: ${short(a.writes)}`);
		assert.ok(!fs.existsSync(path.join(workspace, "notes.txt")), "a cancelled write wrote the disk");

		// The session goes on.
		a.onPermission = undefined;
		const help = await a.prompt(sessionId, "/help");
		assert.equal(help.error, undefined, `/help after the cancel: ${help.error && describe(help.error)}`);
		stopReason(help, "end_turn");
		return { agent: a, result: { sessionId, stopReason: turn.response.stopReason, toolCalls: turn.calls.map(brief) } };
	},

	async load() {
		const a = await Agent.start();
		await a.initialize();
		const { sessionId } = await a.newSession();
		const said = "Look at the workspace.";
		const turn = await a.promptUntil(sessionId, said, "tool call", (t) => t.calls.length > 0);
		announced(turn);
		await a.stop();
		a.check();

		const b = await Agent.start();
		const init = await b.initialize();
		assert.equal(init.agentCapabilities?.loadSession, true, "loadSession after the restart");
		const load = await b.call(acp.methods.agent.session.load, { sessionId, cwd: workspace, mcpServers: [] });
		if (load.error) throw new Error(`session/load ${sessionId}: ${describe(load.error)}`);
		const replay = b.updates(sessionId, 0, load.resp);
		const user = replay.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content?.text ?? "").join("");
		assert.ok(user.includes(said), `session/load replayed no user_message_chunk with the prompt before its response: ${short(replay, 4000)}`);
		// The replayed calls are the turn's, as the client saw them live:
		// the same ids (Nexus tool call ids), titles, kinds and end
		// statuses. A difference is a problem, and the step goes on to
		// session/list and the loaded session's next prompt.
		const replayed = toolCalls(replay);
		const missing = turn.calls.filter((c) => !replayed.some((r) => r.id === c.id));
		if (missing.length) {
			b.problem(
				`session/load replayed ${replayed.length} tool calls for the turn's ${turn.calls.length}, not with their ids:\n    live:     ${short(turn.calls.map(brief), 3000)}\n    replayed: ${short(replayed.map(brief), 3000)}`,
			);
		}
		for (const c of turn.calls) {
			const r = replayed.find((r) => r.id === c.id);
			if (!r) continue;
			if (r.first !== "tool_call") b.problem(`the replayed call ${c.id} begins with ${r.first}, not tool_call`);
			for (const k of ["title", "kind", "status"]) {
				if (r[k] !== c[k]) b.problem(`the replayed call ${c.id} has ${k} ${JSON.stringify(r[k])}; live it had ${JSON.stringify(c[k])}`);
			}
		}
		const after = b.updates(sessionId, load.resp).filter((u) => u.sessionUpdate === "user_message_chunk" || u.sessionUpdate === "tool_call");
		assert.equal(after.length, 0, `history came after session/load's response: ${short(after)}`);

		assert.ok(init.agentCapabilities?.sessionCapabilities?.list, `sessionCapabilities.list is not offered: ${short(init.agentCapabilities)}`);
		const list = await b.request(acp.methods.agent.session.list, {});
		const s = list?.sessions?.find((s) => s.sessionId === sessionId);
		assert.ok(s, `session/list does not list ${sessionId}: ${short(list)}`);
		assert.ok(samePath(s.cwd, workspace), `the listed session's cwd ${s.cwd}, want ${workspace}`);
		const mine = await b.request(acp.methods.agent.session.list, { cwd: workspace });
		assert.ok(mine?.sessions?.some((s) => s.sessionId === sessionId), `session/list with cwd ${workspace} does not list ${sessionId}: ${short(mine)}`);

		// The loaded session goes on.
		const help = await b.prompt(sessionId, "/help");
		assert.equal(help.error, undefined, `/help on the loaded session: ${help.error && describe(help.error)}`);
		stopReason(help, "end_turn");
		return { agent: b, result: { sessionId, toolCalls: turn.calls.map(brief), replayed: replayed.map(brief) } };
	},

	async "mcp-server"() {
		const command = process.env.ACP_MCP_SERVER;
		assert.ok(command, "ACP_MCP_SERVER (an MCP server on stdio) is not set");
		const name = "acpslow";
		const a = await Agent.start();
		const init = await a.initialize();
		log(`mcpCapabilities: ${short(init.agentCapabilities?.mcpCapabilities)}`);
		a.onPermission = answer("allow_always");
		const { sessionId } = await a.newSession({ mcpServers: [{ name, command, args: [], env: [] }] });
		const tools = await a.prompt(sessionId, "/tools");
		assert.equal(tools.error, undefined, `/tools: ${tools.error && describe(tools.error)}`);
		stopReason(tools, "end_turn");
		assert.ok(a.permissions.length > 0, "the client was not asked to approve starting the MCP server it gave");
		for (const p of a.permissions) {
			const ids = p.params.options?.map((o) => o.optionId) ?? [];
			assert.ok(ids.includes("allow_always"), `the MCP server's permission request offers no allow_always: ${short(p.params.options)}`);
			const said = JSON.stringify(p.params.toolCall ?? {});
			assert.ok(said.includes(name) || said.includes(command), `a permission request whose toolCall names neither the MCP server ${name} nor its command: ${short(p.params)}`);
		}
		const listed = messageText(tools.updates);
		for (const tool of ["echo", "wait"]) {
			assert.match(listed, new RegExp(`${name}\\S*__${tool}\\b`), `/tools does not list ${name}'s ${tool} in an agent_message_chunk: ${short(listed, 4000)}`);
		}
		return { agent: a, result: { sessionId, asked: a.permissions.length } };
	},

	async errors() {
		const a = await Agent.start();
		await a.initialize();
		const alive = async (after) => {
			const { sessionId } = await a.newSession().catch((err) => {
				throw new Error(`after ${after}, session/new: ${err.message}`);
			});
			return sessionId;
		};

		// A line that is not JSON: a parse error whose id is null. It is
		// answered when read, so before the next request's response.
		const from = a.wire.length;
		a.expectComplaint(/Got response to unknown request/);
		a.record({ dir: "out", raw: "{this is not JSON" });
		a.child.stdin.write("{this is not JSON\n");
		await alive("a line that is not JSON");
		const parse = a.wire.find((e) => e.index >= from && e.dir === "in" && e.msg && e.msg.method === undefined && e.msg.id === null);
		assert.ok(parse, "no answer with id null to a line that is not JSON (want a -32700 parse error) before the answer to the next request");
		assert.equal(parse.msg.error?.code, -32700, `the answer to a line that is not JSON: ${short(parse.msg)}`);
		assert.ok(parse.msg.error?.message, "the parse error has no message");

		// An unknown method.
		const unknown = await a.call("session/no_such_method", { sessionId: "x" });
		assert.ok(unknown.error, `an unknown method succeeded: ${short(unknown.result)}`);
		assert.equal(unknown.error.code, -32601, `an unknown method: ${describe(unknown.error)}`);
		await alive("an unknown method");

		// session/new outside the workspace.
		const outside = fs.mkdtempSync(path.join(os.tmpdir(), "acp-outside-"));
		try {
			const res = await a.call(acp.methods.agent.session.new, { cwd: outside, mcpServers: [] });
			assert.ok(res.error, `session/new with cwd ${outside}, outside the workspace ${workspace}, succeeded: ${short(res.result)}`);
			assert.ok(errorText(res.error).includes(outside), `the error does not name the cwd ${outside}: ${describe(res.error)}`);
			log(`session/new outside: ${describe(res.error)}`);
		} finally {
			fs.rmSync(outside, { recursive: true, force: true });
		}
		await alive("session/new outside the workspace");

		// session/prompt of a session that does not exist.
		const ghost = "no-such-session-4f1c";
		const res = await a.call(acp.methods.agent.session.prompt, { sessionId: ghost, prompt: [{ type: "text", text: "hi" }] });
		assert.ok(res.error, `session/prompt of the unknown session ${ghost} succeeded: ${short(res.result)}`);
		assert.ok(errorText(res.error).includes(ghost), `the error does not name the session ${ghost}: ${describe(res.error)}`);
		log(`session/prompt of an unknown session: ${describe(res.error)}`);

		const sessionId = await alive("session/prompt of an unknown session");
		const help = await a.prompt(sessionId, "/help");
		assert.equal(help.error, undefined, `/help after the errors: ${help.error && describe(help.error)}`);
		stopReason(help, "end_turn");
		return { agent: a, result: { sessionId } };
	},

	async mode() {
		const a = await Agent.start();
		await a.initialize();
		const res = await a.newSession();
		const { sessionId, modes } = res;
		const ids = modes?.availableModes?.map((m) => m.id) ?? [];
		for (const id of ["default", "ask", "auto-edit", "read-only"]) {
			assert.ok(ids.includes(id), `session/new's modes have no ${id}: ${short(modes)}`);
		}
		assert.ok(ids.includes(modes.currentModeId), `currentModeId ${modes.currentModeId} is not one of the modes`);
		await a.request(acp.methods.agent.session.setMode, { sessionId, modeId: "read-only" });
		// Whatever asks, read-only must still refuse the write.
		a.onPermission = answer("allow_once");
		const turn = await a.promptUntil(sessionId, "Write a file.", "tool call", (t) => t.calls.length > 0);
		announced(turn);
		for (const c of turn.calls) {
			assert.equal(c.status, "failed", `write_file in read-only mode ended ${c.status}: ${short(c.updates)}`);
			const said = `${text(c.content)} ${JSON.stringify(c.rawOutput ?? "")}`;
			assert.match(said, /read-only/i, `the failed write_file does not name read-only: ${short(c.updates)}`);
		}
		assert.equal(a.writes.length, 0, `a write in read-only mode reached the client: ${short(a.writes)}`);
		assert.ok(!fs.existsSync(path.join(workspace, "notes.txt")), "a write in read-only mode wrote the disk");
		return { agent: a, result: { sessionId, modes: ids, asked: turn.permissions.length, toolCalls: turn.calls.map(brief) } };
	},
};

async function main() {
	const name = process.argv[2];
	const step = steps[name];
	if (!step || !nexusd || !workspace) {
		process.stderr.write(`usage: NEXUSD=... NEXUS_WORKSPACE=... node client.mjs {${Object.keys(steps).join("|")}}\n`);
		process.exit(2);
	}
	let agent, result;
	try {
		({ agent, result } = await step());
	} catch (err) {
		// Stop nexusd acp, still saying why the step failed.
		if (current) {
			await current.settle().catch(() => {});
			await current.stop({ settle: false }).catch(() => {});
		}
		throw err;
	}
	await agent.stop();
	agent.check();
	process.stdout.write(`${JSON.stringify(result)}\n`);
	log(`${name}: ok`);
}

main().catch((err) => {
	process.stderr.write(`ts-client: ${process.argv[2]}: FAIL: ${err?.stack ?? err}\n`);
	if (current?.problems.length) process.stderr.write(`ts-client: and: ${current.problems.join("\n  ")}\n`);
	process.exit(1);
});
