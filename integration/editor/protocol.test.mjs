// The editor protocol of nexusd --stdio, driven as a VS Code extension
// drives it: the real binary ($NEXUSD), spawned on a fresh workspace per
// test, over vscode-jsonrpc. Run with scripts/editor-tests.sh.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { CancellationTokenSource, closeAll, eventually, makeWorkspace, Methods, Notifications, rpcError, withEditor } from './client.mjs';

// A bound on each test, so that a daemon that stops answering fails the
// test instead of hanging the suite; the conditions inside have their own,
// shorter deadlines.
const timeout = 30_000;
after(closeAll);

// JSON-RPC and nexusd error codes.
const ServerNotInitialized = -32002;
const InvalidRequest = -32600;
const InvalidParams = -32602;
const RequestCancelled = -32800;
const NotFound = -32004;
const Conflict = -32009;

const statusRank = { initiated: 0, running: 1, completed: 2, error: 2 };

// assertMonotonic checks that the statuses that arrived for one call never
// go back (updates may be coalesced, so some may be missing).
function assertMonotonic(calls) {
  const ranks = calls.map((c) => statusRank[c.status]);
  for (const r of ranks) {
    assert.notEqual(r, undefined, `unknown status in ${JSON.stringify(calls.map((c) => c.status))}`);
  }
  assert.deepEqual(ranks, [...ranks].sort((a, b) => a - b),
    `statuses out of order: ${calls.map((c) => c.status).join(' → ')}`);
  assert.ok(calls.filter((c) => statusRank[c.status] === 2).length <= 1,
    `more than one final status: ${calls.map((c) => c.status).join(' → ')}`);
}

test('lifecycle: initialize, shutdown and exit', { timeout }, async (t) => {
  await withEditor(t, {}, async (ed) => {
    const early = await rpcError(ed.request('nexus/definitions/list', {}));
    assert.equal(early.code, ServerNotInitialized, early.message);

    const init = await ed.initialize();
    assert.equal(init.serverInfo.name, 'nexusd');
    assert.equal(typeof init.serverInfo.version, 'string');
    assert.ok(init.serverInfo.version.length > 0, 'serverInfo.version is empty');
    const caps = init.capabilities.nexus;
    for (const m of ['nexus/definitions/get', 'nexus/definitions/set', 'nexus/definitions/applyDiff',
      'nexus/definitions/delete', 'nexus/definitions/list', 'nexus/definitions/history',
      'nexus/definitions/diff', 'nexus/definitions/restore', 'nexus/runtime/get', 'nexus/runtime/set',
      'nexus/runtime/delete', 'nexus/runtime/list', 'nexus/tools/list', 'nexus/tools/get',
      'nexus/tools/execute', 'nexus/toolCalls/list', 'nexus/toolCalls/cancel', 'nexus/mcp/servers',
      'nexus/mcp/restart']) {
      assert.ok(caps.methods.includes(m), `capabilities.nexus.methods lacks ${m}`);
    }
    for (const n of ['nexus/toolCall', 'nexus/definitionChanged', 'nexus/runtimeChanged',
      'nexus/mcpServerStatus', 'nexus/log', '$/progress']) {
      assert.ok(caps.notifications.includes(n), `capabilities.nexus.notifications lacks ${n}`);
    }
    assert.equal(caps.requestPermission, true);
    assert.equal(caps.workDoneProgress, true);
    const info = init.nexus;
    assert.equal(info.workspace, ed.workspace);
    assert.equal(info.definitionsRoot, path.join(ed.workspace, '.nexus', 'definitions'));
    assert.equal(info.watchDebounce, '100ms');
    assert.match(info.grpcAddress, /^unix:\/\/\//);
    const sock = info.grpcAddress.slice('unix://'.length);
    assert.ok(fs.statSync(sock).isSocket(), `${sock} is not a socket`);

    const again = await rpcError(ed.request('initialize', { processId: process.pid, capabilities: {} }));
    assert.equal(again.code, InvalidRequest, again.message);

    // A method works once initialized.
    const list = await ed.request('nexus/definitions/list', {});
    assert.deepEqual(list.entries, []);

    assert.equal(await ed.request('shutdown'), null);
    const late = await rpcError(ed.request('nexus/definitions/list', {}));
    assert.equal(late.code, InvalidRequest, late.message);
    await ed.notify('exit');
    assert.deepEqual(await ed.waitExit(), { code: 0, signal: null });
  });

  await t.test('exit without shutdown exits 1', { timeout }, async (t) => {
    await withEditor(t, {}, async (ed) => {
      await ed.initialize();
      await ed.notify('exit');
      assert.deepEqual(await ed.waitExit(), { code: 1, signal: null });
    });
  });

  await t.test('closing stdin ends the daemon', { timeout }, async (t) => {
    await withEditor(t, {}, async (ed) => {
      await ed.initialize();
      ed.proc.stdin.end();
      assert.deepEqual(await ed.waitExit(), { code: 1, signal: null });
    });
  });
});

test('definitions: a round trip through the methods', { timeout }, async (t) => {
  await withEditor(t, {}, async (ed) => {
    await ed.initialize();
    const p = 'app/flow.yaml';
    const v1 = 'name: flow\nsteps: 1\n';
    const v2 = 'name: flow\nsteps: 2\n';
    const v3 = 'name: flow\nsteps: 3\n';

    const { revision: rev1 } = await ed.request('nexus/definitions/set', { path: p, content: v1, commitMessage: 'add flow' });
    assert.match(rev1, /^[0-9a-f]{40}$/);
    const added = await ed.waitForNote('nexus/definitionChanged', (c) => c.revision === rev1);
    assert.equal(added.path, p);
    assert.equal(added.author, 'editor');
    assert.equal(added.change, 'ADDED');
    assert.equal(added.message, 'add flow');
    assert.deepEqual(await ed.request('nexus/definitions/get', { path: p }), { content: v1, revision: rev1 });

    const { revision: rev2 } = await ed.request('nexus/definitions/set', { path: p, content: v2, expectedRevision: rev1 });
    assert.notEqual(rev2, rev1);
    const modified = await ed.waitForNote('nexus/definitionChanged', (c) => c.revision === rev2);
    assert.equal(modified.change, 'MODIFIED');

    // rev1 is stale now.
    const conflict = await rpcError(ed.request('nexus/definitions/set', { path: p, content: 'lost\n', expectedRevision: rev1 }));
    assert.equal(conflict.code, Conflict, conflict.message);
    assert.equal(conflict.data?.code, 'conflict');
    assert.equal((await ed.request('nexus/definitions/get', { path: p })).content, v2);

    const diff = `--- a/${p}\n+++ b/${p}\n@@ -1,2 +1,2 @@\n name: flow\n-steps: 2\n+steps: 3\n`;
    const applied = await ed.request('nexus/definitions/applyDiff', { path: p, diff, expectedRevision: rev2 });
    assert.equal(applied.content, v3);
    const rev3 = applied.revision;
    assert.deepEqual(await ed.request('nexus/definitions/get', { path: p, revision: rev1 }), { content: v1, revision: rev1 });

    const top = await ed.request('nexus/definitions/list', {});
    assert.deepEqual(top.entries.map((e) => [e.name, e.type]), [['app', 'DIRECTORY']]);
    const all = await ed.request('nexus/definitions/list', { recursive: true });
    const file = all.entries.find((e) => e.path === p);
    assert.ok(file, `recursive list lacks ${p}: ${JSON.stringify(all.entries)}`);
    assert.deepEqual(file, { name: 'flow.yaml', path: p, type: 'FILE', size: Buffer.byteLength(v3) });

    const hist = await ed.request('nexus/definitions/history', { path: p });
    assert.deepEqual(hist.entries.map((e) => e.revision), [rev3, rev2, rev1]);
    assert.deepEqual(hist.entries.map((e) => e.change), ['MODIFIED', 'MODIFIED', 'ADDED']);
    assert.ok(hist.entries.every((e) => e.author === 'editor'), JSON.stringify(hist.entries));
    assert.equal(hist.entries[2].message, 'add flow');
    // Paging: one entry at a time gives the same history.
    const paged = [];
    let pageToken;
    do {
      const page = await ed.request('nexus/definitions/history', { path: p, limit: 1, pageToken });
      assert.ok(page.entries.length <= 1);
      paged.push(...page.entries.map((e) => e.revision));
      pageToken = page.nextPageToken;
      assert.ok(paged.length <= 3, `paging does not end: ${paged}`);
    } while (pageToken);
    assert.deepEqual(paged, [rev3, rev2, rev1]);

    const { diff: d } = await ed.request('nexus/definitions/diff', { path: p, fromRevision: rev1, toRevision: rev3 });
    assert.match(d, /^-steps: 1$/m);
    assert.match(d, /^\+steps: 3$/m);

    const restored = await ed.request('nexus/definitions/restore', { path: p, revision: rev1 });
    assert.equal(restored.content, v1);
    assert.equal((await ed.request('nexus/definitions/get', { path: p })).revision, restored.revision);

    const { revision: rev5 } = await ed.request('nexus/definitions/delete', { path: p });
    const deleted = await ed.waitForNote('nexus/definitionChanged', (c) => c.revision === rev5);
    assert.equal(deleted.change, 'DELETED');
    const gone = await rpcError(ed.request('nexus/definitions/get', { path: p }));
    assert.equal(gone.code, NotFound, gone.message);
    assert.equal(gone.data?.code, 'not_found');

    // Invalid params name the field that is wrong.
    for (const [method, params, field] of [
      ['nexus/definitions/get', { path: 5 }, 'path'],
      ['nexus/definitions/set', { path: p }, 'content'],
      ['nexus/definitions/set', { path: p, content: 'x', bogus: true }, 'bogus'],
      ['nexus/definitions/diff', { path: p }, 'fromRevision'],
    ]) {
      const err = await rpcError(ed.request(method, params));
      assert.equal(err.code, InvalidParams, `${method} ${JSON.stringify(params)}: ${err.message}`);
      assert.ok(err.message.includes(field), `${method} ${JSON.stringify(params)}: "${err.message}" does not name ${field}`);
    }
    const escape = await rpcError(ed.request('nexus/definitions/get', { path: '../../etc/passwd' }));
    assert.equal(escape.code, InvalidParams, escape.message);
  });
});

test('runtime: set, get, list, delete and their notifications', { timeout }, async (t) => {
  await withEditor(t, {}, async (ed) => {
    await ed.initialize();
    assert.deepEqual(await ed.request('nexus/runtime/set', { namespace: 'ns', key: 'k1', value: 'one' }), {});
    await ed.request('nexus/runtime/set', { namespace: 'ns', key: 'k2', value: 'two', ttlSeconds: 3600 });
    const changed = await ed.waitForNote('nexus/runtimeChanged', (c) => c.key === 'k1');
    assert.equal(changed.namespace, 'ns');
    assert.equal(changed.value, 'one');
    const got = await ed.request('nexus/runtime/get', { namespace: 'ns', key: 'k2' });
    assert.equal(got.found, true);
    assert.equal(got.value, 'two');
    assert.ok(got.expiresAt, 'a value with a TTL has no expiresAt');
    assert.deepEqual((await ed.request('nexus/runtime/list', { namespace: 'ns', prefix: 'k' })).keys.sort(), ['k1', 'k2']);
    assert.deepEqual(await ed.request('nexus/runtime/delete', { namespace: 'ns', key: 'k1' }), { deleted: true });
    assert.equal((await ed.request('nexus/runtime/get', { namespace: 'ns', key: 'k1' })).found, false);
    const err = await rpcError(ed.request('nexus/runtime/set', { namespace: 'ns', key: 'k3' }));
    assert.equal(err.code, InvalidParams);
    assert.ok(err.message.includes('value'), err.message);
  });
});

test('tools: list, execute, the tool-call stream and $/progress', { timeout }, async (t) => {
  await withEditor(t, {}, async (ed) => {
    await ed.initialize();
    const { tools } = await ed.request('nexus/tools/list', {});
    const byName = new Map(tools.map((x) => [x.name, x]));
    for (const name of ['read_file', 'write_file', 'list_directory', 'execute_command', 'get_current_time']) {
      const tool = byName.get(name);
      assert.ok(tool, `nexus/tools/list lacks ${name}: ${[...byName.keys()]}`);
      assert.ok(tool.description, `${name} has no description`);
      assert.equal(JSON.parse(tool.inputSchemaJson).type, 'object', `${name}'s inputSchemaJson`);
      assert.ok(tool.kind && tool.risk, `${name} lacks kind or risk: ${JSON.stringify(tool)}`);
    }
    const got = await ed.request('nexus/tools/get', { name: 'read_file' });
    assert.equal(got.found, true);
    assert.equal(got.tool.name, 'read_file');
    assert.deepEqual(await ed.request('nexus/tools/get', { name: 'no_such_tool' }), { found: false });

    const now = await ed.request('nexus/tools/execute', { toolName: 'get_current_time', arguments: {} });
    assert.equal(now.success, true, JSON.stringify(now));
    assert.ok(JSON.parse(now.outputJson).iso8601, now.outputJson);

    // The stream of one call the editor started, with argumentsJson as a
    // JSON string this time.
    ed.progress('run-1');
    const res = await ed.request('nexus/tools/execute', {
      toolName: 'execute_command',
      argumentsJson: JSON.stringify({ command: 'echo hello from nexus' }),
      workDoneToken: 'run-1',
    });
    assert.equal(res.success, true, JSON.stringify(res));
    assert.match(res.outputJson, /hello from nexus/);
    const final = await ed.waitForNote('nexus/toolCall', (c) => c.toolCallId === res.toolCallId && c.status === 'completed');
    assert.equal(final.toolName, 'execute_command');
    assert.deepEqual(JSON.parse(final.argumentsJson), { command: 'echo hello from nexus' });
    assert.deepEqual(JSON.parse(final.resultJson), JSON.parse(res.outputJson));
    assert.ok(final.startedAt && final.endedAt, JSON.stringify(final));
    assertMonotonic(ed.notifications('nexus/toolCall', (c) => c.toolCallId === res.toolCallId));

    await ed.waitForNote('$/progress', (p) => p.token === 'run-1' && p.value.kind === 'end');
    const kinds = ed.notifications('$/progress', (p) => p.token === 'run-1').map((p) => p.value.kind);
    assert.equal(kinds[0], 'begin', kinds.join(' '));
    assert.equal(kinds.at(-1), 'end', kinds.join(' '));
    assert.ok(kinds.slice(1, -1).every((k) => k === 'report'), kinds.join(' '));

    const listed = await ed.request('nexus/toolCalls/list', { status: 'completed' });
    assert.ok(listed.toolCalls.some((c) => c.toolCallId === res.toolCallId), 'nexus/toolCalls/list lacks the call');
    assert.deepEqual(await ed.request('nexus/toolCalls/cancel', { toolCallId: res.toolCallId }), { cancelled: false });
    const unknown = await rpcError(ed.request('nexus/toolCalls/cancel', { toolCallId: 'no-such-call' }));
    assert.equal(unknown.code, NotFound, unknown.message);

    // A tool that fails reports it in the result, not as a JSON-RPC error.
    const failed = await ed.request('nexus/tools/execute', { toolName: 'read_file', arguments: { path: 'missing.txt' } });
    assert.equal(failed.success, false, JSON.stringify(failed));
    assert.ok(failed.errorCode, JSON.stringify(failed));
    const failedNote = await ed.waitForNote('nexus/toolCall', (c) => c.toolCallId === failed.toolCallId && c.status === 'error');
    assert.equal(failedNote.error.code, failed.errorCode);

    const bad = await rpcError(ed.request('nexus/tools/execute', { toolName: 'get_current_time', argumentsJson: '{}', arguments: {} }));
    assert.equal(bad.code, InvalidParams, bad.message);
    assert.ok(bad.message.includes('argumentsJson'), bad.message);

    // This workspace configures no MCP servers.
    assert.deepEqual(await ed.request('nexus/mcp/servers'), { servers: [] });
    const noServer = await rpcError(ed.request('nexus/mcp/restart', { name: 'nope' }));
    assert.equal(noServer.code, NotFound, noServer.message);
    assert.equal(noServer.data?.code, 'not_found');
  });
});

const askWrites = 'tools:\n  policy:\n    write_file: ask\n';

test('permission prompts: allow_once and reject_once', { timeout }, async (t) => {
  await withEditor(t, { config: askWrites }, async (ed) => {
    await ed.initialize();

    ed.permission = () => 'allow_once';
    const allowed = await ed.request('nexus/tools/execute', {
      toolName: 'write_file',
      arguments: { path: 'allowed.txt', content: 'yes' },
      intent: 'save the answer',
      expectedOutcome: 'allowed.txt holds yes',
    });
    assert.equal(ed.prompts.length, 1);
    const prompt = ed.prompts[0];
    assert.equal(prompt.toolCall.toolCallId, allowed.toolCallId);
    assert.equal(prompt.toolCall.toolName, 'write_file');
    assert.deepEqual(JSON.parse(prompt.toolCall.argumentsJson), { path: 'allowed.txt', content: 'yes' });
    assert.equal(prompt.icerc.intent, 'save the answer');
    assert.equal(prompt.icerc.expectedOutcome, 'allowed.txt holds yes');
    assert.ok(prompt.icerc.command, JSON.stringify(prompt.icerc));
    assert.ok(prompt.icerc.risk?.level, JSON.stringify(prompt.icerc));
    assert.deepEqual(prompt.options, ['allow_once', 'allow_always', 'reject_once', 'reject_always']);
    assert.equal(allowed.success, true, JSON.stringify(allowed));
    assert.equal(fs.readFileSync(path.join(ed.workspace, 'allowed.txt'), 'utf8'), 'yes');
    await ed.waitForNote('nexus/toolCall', (c) => c.toolCallId === allowed.toolCallId && c.status === 'completed');

    // Once means once: the next write asks again. This answer uses the
    // object form.
    ed.permission = () => ({ answer: 'reject_once' });
    const rejected = await ed.request('nexus/tools/execute', {
      toolName: 'write_file',
      arguments: { path: 'rejected.txt', content: 'no' },
    });
    assert.equal(ed.prompts.length, 2);
    assert.equal(ed.prompts[1].toolCall.toolCallId, rejected.toolCallId);
    assert.equal(rejected.success, false, JSON.stringify(rejected));
    assert.equal(rejected.errorCode, 'permission_denied', JSON.stringify(rejected));
    assert.equal(fs.existsSync(path.join(ed.workspace, 'rejected.txt')), false, 'a rejected write wrote its file');
    const note = await ed.waitForNote('nexus/toolCall', (c) => c.toolCallId === rejected.toolCallId && c.status === 'error');
    assert.equal(note.error.code, 'permission_denied');

    // Tools the policy allows are not prompted for.
    const read = await ed.request('nexus/tools/execute', { toolName: 'read_file', arguments: { path: 'allowed.txt' } });
    assert.equal(read.success, true, JSON.stringify(read));
    assert.equal(ed.prompts.length, 2);
  });
});

test('disk edits arrive as nexus/definitionChanged from "disk"', { timeout }, async (t) => {
  // A debounce well above the time a burst of synchronous writes takes.
  const config = 'definitions:\n  debounce: 300ms\n';
  await withEditor(t, { config }, async (ed) => {
    const init = await ed.initialize();
    assert.equal(init.nexus.watchDebounce, '300ms');
    const root = init.nexus.definitionsRoot;

    // The daemon's own write to disk must not come back as a disk edit.
    const { revision: editorRev } = await ed.request('nexus/definitions/set', { path: 'editor.md', content: 'mine\n' });

    const p = 'notes/plan.md';
    const file = path.join(root, p);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, 'draft 0\n');
    const first = await ed.waitForNote('nexus/definitionChanged', (c) => c.path === p && c.author === 'disk');
    assert.equal(first.change, 'ADDED');
    let hist = await ed.request('nexus/definitions/history', { path: p });
    assert.deepEqual(hist.entries.map((e) => [e.revision, e.author]), [[first.revision, 'disk']]);
    assert.deepEqual(await ed.request('nexus/definitions/get', { path: p }), { content: 'draft 0\n', revision: first.revision });

    const editorHist = await ed.request('nexus/definitions/history', { path: 'editor.md' });
    assert.deepEqual(editorHist.entries.map((e) => [e.revision, e.author]), [[editorRev, 'editor']],
      'the daemon recorded its own write as a disk edit');

    // A burst of writes, faster than the debounce, is one commit.
    const start = process.hrtime.bigint();
    for (let i = 1; i <= 10; i++) {
      fs.writeFileSync(file, `draft ${i}\n`);
    }
    const burstMs = Number(process.hrtime.bigint() - start) / 1e6;
    await ed.waitForNote('nexus/definitionChanged', (c) => c.path === p && c.author === 'disk' && c.revision !== first.revision);
    // Updates of one path may be coalesced: wait until the last write is
    // recorded, then count the commits it took.
    const last = await eventually('the last write of the burst to be recorded', async () => {
      const cur = await ed.request('nexus/definitions/get', { path: p });
      return cur.content === 'draft 10\n' && cur;
    });
    const lastNote = await ed.waitForNote('nexus/definitionChanged', (c) => c.revision === last.revision);
    assert.equal(lastNote.author, 'disk');
    assert.equal(lastNote.change, 'MODIFIED');
    hist = await ed.request('nexus/definitions/history', { path: p });
    assert.ok(hist.entries.every((e) => e.author === 'disk'), JSON.stringify(hist.entries));
    assert.equal(hist.entries[0].revision, last.revision);
    if (burstMs < 300) {
      assert.equal(hist.entries.length, 2, `a burst of 10 writes in ${burstMs.toFixed(1)}ms made ${hist.entries.length - 1} commits`);
    } else {
      t.diagnostic(`the burst took ${burstMs.toFixed(1)}ms, longer than the debounce; not counting its commits`);
    }
  });
});

test('$/cancelRequest cancels a running tool call', { timeout }, async (t) => {
  await withEditor(t, {}, async (ed) => {
    await ed.initialize();
    const cts = new CancellationTokenSource();
    ed.progress('sleep-1');
    const pending = ed.request('nexus/tools/execute',
      { toolName: 'execute_command', arguments: { command: 'sleep 30' }, workDoneToken: 'sleep-1' }, cts.token);
    const running = await ed.waitForNote('nexus/toolCall', (c) => c.toolName === 'execute_command' && c.status === 'running');
    cts.cancel();
    const err = await rpcError(pending);
    assert.equal(err.code, RequestCancelled, err.message);
    const ended = await ed.waitForNote('nexus/toolCall', (c) => c.toolCallId === running.toolCallId && statusRank[c.status] === 2);
    assert.equal(ended.status, 'error', JSON.stringify(ended));
    assert.equal(ended.error?.code, 'cancelled', JSON.stringify(ended));
    assertMonotonic(ed.notifications('nexus/toolCall', (c) => c.toolCallId === running.toolCallId));
    await ed.waitForNote('$/progress', (p) => p.token === 'sleep-1' && p.value.kind === 'end');

    // nexus/toolCalls/cancel does the same for a call it names.
    const second = ed.request('nexus/tools/execute', { toolName: 'execute_command', arguments: { command: 'sleep 30' } });
    const running2 = await ed.waitForNote('nexus/toolCall',
      (c) => c.toolName === 'execute_command' && c.status === 'running' && c.toolCallId !== running.toolCallId);
    assert.deepEqual(await ed.request('nexus/toolCalls/cancel', { toolCallId: running2.toolCallId }), { cancelled: true });
    const res = await second;
    assert.equal(res.success, false, JSON.stringify(res));
    assert.equal(res.errorCode, 'cancelled', JSON.stringify(res));

    // The daemon still serves requests.
    const now = await ed.request('nexus/tools/execute', { toolName: 'get_current_time', arguments: {} });
    assert.equal(now.success, true, JSON.stringify(now));
    assert.deepEqual(await ed.shutdown(), { code: 0, signal: null });
  });
});

// The MCP servers the Go tests run (scripts/mcp-servers.sh), for the tests
// of the McpHub's notifications.
const mcpServers = process.env.NEXUS_MCP_SERVERS;

test('mcp: a server\'s templates, the editor\'s subscription and its updates, the server\'s log messages', { timeout: 60_000, skip: !mcpServers && 'NEXUS_MCP_SERVERS is not set' }, async (t) => {
  const ws = makeWorkspace();
  t.after(() => fs.rmSync(ws, { recursive: true, force: true }));
  fs.mkdirSync(path.join(ws, '.nexus'), { recursive: true });
  fs.writeFileSync(path.join(ws, '.nexus', 'mcp.json'), JSON.stringify({
    mcpServers: { everything: { command: path.join(mcpServers, 'node_modules', '.bin', 'mcp-server-everything') } },
  }));
  await withEditor(t, { workspace: ws }, async (ed) => {
    await ed.initialize();
    await ed.request(Methods.mcpTrust, { name: 'everything' });
    await ed.waitForNote(Notifications.mcpServerStatus, (s) => s.name === 'everything' && s.state === 'ready', 30_000);

    const { templates } = await ed.request(Methods.mcpResourcesTemplates, { serverName: 'everything' });
    assert.ok(templates.length > 0 && templates.every((tm) => tm.serverName === 'everything' && tm.uriTemplate), JSON.stringify(templates));
    const { resources } = await ed.request(Methods.mcpResourcesList, { serverName: 'everything' });
    const uri = resources[0].uri;

    await ed.request(Methods.mcpResourcesSubscribe, { serverName: 'everything', uri });
    // server-everything logs the subscription at info, the daemon's level.
    const log = await ed.waitForNote(Notifications.log, (l) => l.source === 'mcp' && l.message.includes(`Received Subscribe Resource request for URI: ${uri}`));
    assert.equal(log.server, 'everything');
    assert.equal(log.level, 'info');
    assert.equal(typeof log.data, 'string');
    assert.ok(!Number.isNaN(Date.parse(log.time)), log.time);

    const res = await ed.request(Methods.toolsExecute, { serverName: 'everything', toolName: 'toggle-subscriber-updates', arguments: {} });
    assert.equal(res.success, true, JSON.stringify(res));
    const upd = await ed.waitForNote(Notifications.mcpResourceUpdated, (u) => u.server === 'everything' && u.uri === uri);
    assert.ok(!Number.isNaN(Date.parse(upd.time)), upd.time);

    await ed.request(Methods.mcpResourcesUnsubscribe, { serverName: 'everything', uri });
    await ed.waitForNote(Notifications.log, (l) => l.server === 'everything' && l.message.includes(`Received Unsubscribe Resource request: ${uri}`));
  });
});
