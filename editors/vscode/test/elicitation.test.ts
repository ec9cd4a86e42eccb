// The form of an MCP server's question (elicitationModel): the requested
// schema read as fields, what the person types checked and turned into
// content; and a round trip through the real nexusd --stdio and a real
// stdio MCP server that asks.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { groupOf } from '../src/activityModel';
import { contentOf, fieldsOf, questionText, questionTitle, Questions, safeURL } from '../src/elicitationModel';
import { call, type ElicitationParams, type ElicitationSchema, type McpServer, Methods, Notifications, Requests } from '../src/protocol';
import { Daemon, makeWorkspace, waitFor } from './nexusd';

const timeout = 30_000;

const schema: ElicitationSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Your name', default: 'John Doe', minLength: 2 },
    email: { type: 'string', format: 'email' },
    age: { type: 'integer', minimum: 0, maximum: 150, default: 30 },
    score: { type: 'number' },
    verified: { type: 'boolean', default: true },
    status: { type: 'string', enum: ['active', 'inactive'], enumNames: ['Active', 'Inactive'], default: 'active' },
    colour: { type: 'string', oneOf: [{ const: 'r', title: 'Red' }, { const: 'g', title: 'Green' }] },
    tags: { type: 'array', items: { anyOf: [{ const: 'a', title: 'Alpha' }, { const: 'b', title: 'Beta' }] }, maxItems: 1, default: ['b'] },
    when: { type: 'string', format: 'date' },
  },
  required: ['email', 'colour'],
};

test('elicitation: the fields of a requested schema, in its order, with their defaults', () => {
  const fields = fieldsOf(schema);
  assert.deepEqual(fields.map((f) => `${f.name}:${f.kind}`), [
    'name:string', 'email:string', 'age:integer', 'score:number', 'verified:boolean', 'status:choice', 'colour:choice', 'tags:choices', 'when:string',
  ]);
  const by = Object.fromEntries(fields.map((f) => [f.name, f]));
  assert.equal(by.name.label, 'Your name');
  assert.equal(by.name.default, 'John Doe');
  assert.equal(by.email.input, 'email');
  assert.equal(by.email.required, true);
  assert.equal(by.when.input, 'date');
  assert.deepEqual(by.status.options, [{ value: 'active', label: 'Active' }, { value: 'inactive', label: 'Inactive' }]);
  assert.deepEqual(by.colour.options?.map((o) => o.label), ['Red', 'Green']);
  assert.deepEqual(by.tags.default, ['b']);
  assert.equal(by.verified.default, true);
});

test('elicitation: what the server wrote is shown inert; the answer keeps its values', () => {
  const [f, g] = fieldsOf({
    type: 'object',
    properties: {
      token: { type: 'string', title: 'Nexus\u202e token', description: 'paste it\r\x1b[2Khere' },
      pick: { type: 'string', enum: ['a\x1b[8m'], enumNames: ['A\u2066'] },
    },
  });
  assert.equal(f.label, 'Nexus\\u202e token');
  assert.equal(f.description, 'paste it\\r\\x1b[2Khere');
  assert.deepEqual(g.options, [{ value: 'a\x1b[8m', label: 'A\\u2066' }]);
  const p: ElicitationParams = {
    requestId: 'q1',
    server: 'evil\x1b]0;x\x07',
    mode: 'form',
    message: 'line one\r\x1b[1ANexus asks for your token\u202e\nline two',
    toolCall: { toolCallId: 'c\u202e1', toolName: 'ask', serverName: 'evil', author: 'app:x\r', title: 'T\x1b[2K' } as ElicitationParams['toolCall'],
  };
  assert.equal(questionTitle(p), 'MCP server "evil\\x1b]0;x\\x07" asks (evil/ask, by app:x\\r)');
  assert.deepEqual(questionText(p), {
    message: 'line one\\r\\x1b[1ANexus asks for your token\\u202e\nline two',
    call: 'During the call c\\u202e1 (T\\x1b[2K).',
  });
});

test('elicitation: what the person typed is checked before it is sent', () => {
  const fields = fieldsOf(schema);
  const bad = contentOf(fields, { name: 'J', email: 'not-mail', age: '12.5', score: 'x', verified: false, status: 'active', colour: '', tags: ['a', 'b'], when: '2025-13' });
  assert.equal(bad.content, undefined);
  assert.deepEqual(Object.keys(bad.errors).sort(), ['age', 'colour', 'email', 'name', 'score', 'tags', 'when']);
  assert.match(bad.errors.colour, /Required/);
  assert.match(bad.errors.tags, /at most 1/);
  const ok = contentOf(fields, { name: '', email: 'ann@example.com', age: '41', score: '', verified: false, status: 'inactive', colour: 'g', tags: [], when: '' });
  // Empty fields are left out: the daemon fills in their defaults.
  assert.deepEqual(ok.content, { email: 'ann@example.com', age: 41, verified: false, status: 'inactive', colour: 'g' });
  assert.equal(safeURL('javascript:alert(1)'), undefined);
  assert.equal(safeURL('https://example.com/x')?.host, 'example.com');
});

test('sampling: an MCP server\'s sampling requests have their own group in Tool Activity', () => {
  const c = { toolCallId: '1', toolName: 'mcp_sampling', serverName: 'asking', argumentsJson: '{}', status: 'running', author: 'mcp:asking', startedAt: '' };
  assert.deepEqual(groupOf(c), { key: 'mcp:asking', label: 'MCP server asking' });
});

test('elicitation: questions end answered or withdrawn', async () => {
  const qs = new Questions();
  const params: ElicitationParams = { requestId: 'r', server: 's', mode: 'form', message: 'm' };
  const a = qs.add(params, new Date(), 'd1');
  const b = qs.add(params, new Date(), 'd2');
  assert.equal(qs.size, 2);
  assert.ok(qs.answer(a.question.id, { action: 'decline' }));
  assert.equal(qs.answer(a.question.id, { action: 'accept' }), false);
  qs.clear('d2');
  assert.deepEqual(await a.answer, { action: 'decline' });
  assert.equal(await b.answer, undefined);
  assert.equal(qs.size, 0);
});

/** A stdio MCP server (newline-delimited JSON-RPC, protocol 2025-11-25)
 * whose tool ask sends elicitation/create and answers with what it got. */
const askingServer = `import readline from 'node:readline';
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\\n');
const schema = ${JSON.stringify(schema)};
let calls = {};
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === undefined && m.id !== undefined && calls[m.id]) {
    const id = calls[m.id];
    delete calls[m.id];
    return send({ id, result: { content: [{ type: 'text', text: JSON.stringify(m.result ?? m.error) }] } });
  }
  if (m.id === undefined) { return; }
  switch (m.method) {
    case 'initialize':
      return send({ id: m.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'asking', version: '1.0.0' } } });
    case 'tools/list':
      return send({ id: m.id, result: { tools: [{ name: 'ask', description: 'Asks the person', inputSchema: { type: 'object' } }] } });
    case 'tools/call': {
      const q = 'q' + m.id;
      calls[q] = m.id;
      return send({ id: q, method: 'elicitation/create', params: { mode: 'form', message: 'Who are you?', requestedSchema: schema } });
    }
    case 'ping':
      return send({ id: m.id, result: {} });
    default:
      return send({ id: m.id, error: { code: -32601, message: 'method not found' } });
  }
});
`;

test('elicitation: a form answered through the real nexusd reaches the server, with the defaults', { timeout }, async () => {
  const ws = makeWorkspace();
  fs.writeFileSync(path.join(ws, 'asking.mjs'), askingServer);
  fs.writeFileSync(path.join(ws, '.nexus', 'mcp.json'), JSON.stringify({ mcpServers: { asking: { command: process.execPath, args: [path.join(ws, 'asking.mjs')] } } }));
  const d = new Daemon(ws);
  try {
    const servers = new Map<string, McpServer>();
    d.conn.onNotification(Notifications.mcpServerStatus, (s: McpServer) => servers.set(s.name, s));
    const asked: ElicitationParams[] = [];
    d.conn.onRequest(Requests.requestElicitation, (p: ElicitationParams) => {
      asked.push(p);
      // The person fills in the form as the webview would send it.
      const { content, errors } = contentOf(fieldsOf(p.requestedSchema), { name: '', email: 'ann@example.com', age: '41', verified: true, status: 'active', colour: 'g', tags: [] });
      assert.deepEqual(errors, {});
      return { action: 'accept', content };
    });
    const init = await d.initialize();
    assert.equal(init.capabilities.nexus.requestElicitation, true);
    await waitFor('the server waiting for approval', () => servers.get('asking')?.state === 'pending_approval');
    await call(d.conn, Methods.mcpTrust, { name: 'asking', pin: servers.get('asking')!.pin });
    await waitFor('the server ready', () => servers.get('asking')?.state === 'ready');
    const r = await call(d.conn, Methods.toolsExecute, { toolName: 'ask', serverName: 'asking', arguments: {} });
    assert.equal(r.success, true, r.message);
    const got = JSON.parse(JSON.parse(r.outputJson!).content[0].text);
    assert.deepEqual(got, {
      action: 'accept',
      content: { name: 'John Doe', email: 'ann@example.com', age: 41, verified: true, status: 'active', colour: 'g', tags: ['b'] },
    });
    assert.equal(asked.length, 1);
    assert.equal(asked[0].server, 'asking');
    assert.equal(asked[0].toolCall?.toolCallId, r.toolCallId);
    // The schema comes with its fields in the server's order.
    assert.deepEqual(Object.keys(asked[0].requestedSchema?.properties ?? {}), Object.keys(schema.properties!));
  } finally {
    await d.close();
  }
});
