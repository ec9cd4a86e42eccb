// The Agent Chat's model: the markdown renderer escapes everything, and the
// reducer folds a session's nexus/agent/update stream into entries.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PendingApprovals } from '../src/approvalsModel';
import { emptyChat, endTurn, escapeHtml, reduce, renderMarkdown, view } from '../src/chatModel';
import type { PermissionParams } from '../src/protocol';

test('chat markdown: HTML in text, code and lists is escaped', () => {
  const evil = '<script>alert(1)</script> & <img src=x onerror=alert(1)> "q" \'s\'';
  const html = renderMarkdown(`${evil}\n\n- item <b>x</b>\n\n\`<i>code</i>\`\n\n\`\`\`html\n<div onclick="x">\n\`\`\`\n[link](javascript:alert(1))`);
  assert.ok(!/<script|<img|<b>|<i>|<div/.test(html), html);
  assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt; &quot;q&quot; &#39;s&#39;'), html);
  assert.ok(html.includes('<li>item &lt;b&gt;x&lt;/b&gt;</li>'), html);
  assert.ok(html.includes('<code>&lt;i&gt;code&lt;/i&gt;</code>'), html);
  assert.ok(html.includes('<pre><code class="language-html">&lt;div onclick=&quot;x&quot;&gt;</code></pre>'), html);
  assert.ok(!html.includes('<a'), html);
  assert.equal(escapeHtml('<&>"\''), '&lt;&amp;&gt;&quot;&#39;');
  // A language name cannot break out of its attribute.
  assert.ok(!renderMarkdown('```"><x\nA\n```').includes('"><x'));
});

test('chat markdown: paragraphs, code blocks, inline code, bold, italic, lists', () => {
  assert.equal(renderMarkdown('one\ntwo\n\nthree'), '<p>one<br>two</p><p>three</p>');
  assert.equal(renderMarkdown('**bold** and *it* and `x*y*`'), '<p><strong>bold</strong> and <em>it</em> and <code>x*y*</code></p>');
  assert.equal(renderMarkdown('- a\n- b\n\n1. c\n2. d'), '<ul><li>a</li><li>b</li></ul><ol><li>c</li><li>d</li></ol>');
  assert.equal(renderMarkdown('```\n**not bold**\n```'), '<pre><code>**not bold**</code></pre>');
  assert.equal(renderMarkdown('snake_case_name'), '<p>snake_case_name</p>');
});

test('chat reducer: chunks join, tool calls update in place, commands and the stop reason', () => {
  const s = emptyChat();
  s.sessionId = 's1';
  reduce(s, { sessionUpdate: 'available_commands_update', availableCommands: [{ name: 'cost', description: 'the cost' }] });
  reduce(s, { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'write it' } });
  reduce(s, { sessionUpdate: 'user_message_chunk', content: { type: 'image', text: '', data: 'iVBORw0K', mimeType: 'image/png' } });
  reduce(s, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Sure, ' } });
  reduce(s, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: '**done**' } });
  reduce(s, { sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Write file', kind: 'edit', status: 'pending' });
  reduce(s, { sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'in_progress' });
  reduce(s, {
    sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'completed',
    content: [{ type: 'content', content: { type: 'text', text: '{"ok":true}' } }],
  });
  reduce(s, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'after' } });
  reduce(s, { sessionUpdate: 'usage_update', used: 1500, size: 8000 });
  reduce(s, { sessionUpdate: 'something_new' });
  endTurn(s, 'max_turn_requests');
  assert.deepEqual(s.commands, [{ name: 'cost', description: 'the cost' }]);
  assert.deepEqual(s.entries, [
    { kind: 'user', text: 'write it [image, image/png]' },
    { kind: 'agent', text: 'Sure, **done**' },
    { kind: 'tool', toolCallId: 'c1', title: 'Write file', toolKind: 'edit', status: 'completed', detail: '{"ok":true}' },
    { kind: 'agent', text: 'after' },
    { kind: 'stop', text: '(max_turn_requests)' },
  ]);
  assert.equal(s.usage, '1.5k / 8.0k tokens');
  assert.equal(s.running, false);
  const v = view(s, new Set(['c1']));
  assert.equal(v.entries[1].html, '<p>Sure, <strong>done</strong></p>');
  assert.equal(v.entries[2].waiting, true);
});

test('approvals: a request is answered by its tool call id', async () => {
  const m = new PendingApprovals();
  const params = { toolCall: { toolCallId: 'c9', toolName: 'write_file', author: 'agent:s1' }, icerc: {}, options: [] } as unknown as PermissionParams;
  const { answer } = m.add(params);
  assert.equal(m.byToolCall('c9')?.params, params);
  assert.equal(m.answerToolCall('nope', 'allow_once'), false);
  assert.equal(m.answerToolCall('c9', 'allow_once'), true);
  assert.equal(await answer, 'allow_once');
  assert.equal(m.answerToolCall('c9', 'allow_once'), false);
});

test('chat reducer: a plan update replaces the turn\'s plan in place; a later turn starts its own; the steps are inert', () => {
  const s = emptyChat();
  const plan = (...steps: [string, string][]): void => {
    reduce(s, { sessionUpdate: 'plan', entries: steps.map(([content, status]) => ({ content, priority: 'medium', status })) });
  };
  reduce(s, { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'do it' } });
  plan(['Read', 'in_progress'], ['Write', 'pending']);
  reduce(s, { sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Read file', kind: 'read', status: 'completed' });
  plan(['Read', 'completed'], ['Write\u202e\n[x] forged', 'in_progress']);
  reduce(s, { sessionUpdate: 'plan', entries: [{ content: 7 }, null, { content: 'No status' }] });
  assert.deepEqual(s.entries.filter((e) => e.kind === 'plan'), [{ kind: 'plan', steps: [{ content: 'No status', status: 'pending' }] }]);
  plan(['Read', 'completed'], ['Write\u202e\n[x] forged', 'in_progress']);
  assert.equal(s.entries.length, 3, 'one plan entry in the turn, where it started');
  assert.equal(s.entries[1].kind, 'plan');
  reduce(s, { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'next' } });
  reduce(s, { sessionUpdate: 'plan' });
  assert.deepEqual(s.entries[4], { kind: 'plan', steps: [] }, 'a cleared plan in a new turn');
  const v = view(s, new Set());
  assert.deepEqual(v.entries[1], {
    kind: 'plan',
    steps: [{ content: 'Read', status: 'completed' }, { content: 'Write\\u202e\\n[x] forged', status: 'in_progress' }],
  });
});

test('chat reducer: a subagent\'s tool call is marked with the task call it is under', () => {
  const s = emptyChat();
  reduce(s, { sessionUpdate: 'tool_call', toolCallId: 't1', title: 'Subagent reviewer: read a.txt', kind: 'think', status: 'in_progress' });
  reduce(s, { sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'reviewer: Read a.txt', kind: 'read', status: 'pending', parentToolCallId: 't1' });
  reduce(s, { sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'completed', parentToolCallId: 't1' });
  const v = view(s, new Set());
  assert.equal((v.entries[0] as { parent?: string }).parent, undefined);
  assert.equal((v.entries[1] as { parent?: string }).parent, 't1');
  assert.equal((v.entries[1] as { status?: string }).status, 'completed');
});
