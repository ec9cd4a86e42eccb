// The terminal rule in the editor: what a model, a server or an app wrote
// shows inert in the permission prompt, the chat's cards and the tool
// activity, and as plain text (no link the notification would make).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { label } from '../src/activityModel';
import { MAX_PROMPT_MESSAGE, promptDetail, promptMessage, promptPick } from '../src/approvalsModel';
import { emptyChat, reduce, view } from '../src/chatModel';
import { inertLine, inertText, noLinks } from '../src/inert';
import type { PermissionParams, ToolCall } from '../src/protocol';

test('inert: each class of character is escaped, the rest kept', () => {
  const cases: [name: string, input: string, line: string, text: string][] = [
    ['plain', 'go test ./...', 'go test ./...', 'go test ./...'],
    ['letters and emoji', 'héllo 世界 👨\u200d👩', 'héllo 世界 👨\u200d👩', 'héllo 世界 👨\u200d👩'],
    ['backslashes stay', 'a\\nb', 'a\\nb', 'a\\nb'],
    ['new line and tab', 'a\nb\tc', 'a\\nb\\tc', 'a\nb\tc'],
    ['carriage return', 'ok\rrm', 'ok\\rrm', 'ok\\rrm'],
    ['CRLF', 'a\r\nb', 'a\\r\\nb', 'a\r\nb'],
    ['ESC CSI', '\x1b[2K\r command: ls', '\\x1b[2K\\r command: ls', '\\x1b[2K\\r command: ls'],
    ['NUL, BEL, DEL', '\x00\x07\x7f', '\\x00\\x07\\x7f', '\\x00\\x07\\x7f'],
    ['C1', '\u009b2K\u0085', '\\u009b2K\\u0085', '\\u009b2K\\u0085'],
    ['bidi overrides and isolates', '\u202a\u202e\u2066\u2069', '\\u202a\\u202e\\u2066\\u2069', '\\u202a\\u202e\\u2066\\u2069'],
    ['bidi marks', '\u200e\u200f\u061c', '\\u200e\\u200f\\u061c', '\\u200e\\u200f\\u061c'],
    ['invisible format characters', 'r\u200bm\ufeff\u{e0041}', 'r\\u200bm\\ufeff\\U000e0041', 'r\\u200bm\\ufeff\\U000e0041'],
    ['separators', 'a\u2028b\u2029', 'a\\u2028b\\u2029', 'a\\u2028b\\u2029'],
    ['lone surrogate', 'a\ud800b', 'a\\ud800b', 'a\\ud800b'],
  ];
  for (const [name, input, line, text] of cases) {
    assert.equal(inertLine(input), line, name);
    assert.equal(inertText(input), text, name);
    assert.equal(inertLine(inertLine(input)), inertLine(input), `${name}: escaped twice`);
  }
  assert.equal(noLinks('[Allow once](command:workbench.action.terminal.sendSequence)'), '[Allow once](\u200bcommand:workbench.action.terminal.sendSequence)');
});

function hostilePermission(command: string, always?: string): PermissionParams {
  return {
    toolCall: {
      toolCallId: 'c1',
      toolName: 'execute_command',
      argumentsJson: '{}',
      status: 'initiated',
      startedAt: '',
      author: 'agent:s1',
    } as ToolCall,
    icerc: {
      intent: '\x1b[2K\rrun the tests [Allow](command:nexus.answerApproval) \u202e',
      command,
      expectedOutcome: 'tests pass\u2066',
      risk: { level: 'high', scope: 'shell command in the workspace root', details: ['runs several commands (; && || or new lines)'] },
      asker: 'agent session s1 acting for the person',
      always,
    },
    options: ['allow_once', 'allow_always', 'reject_once', 'reject_always'],
  };
}

test('permission prompt: who asks, the command, what "always" covers; the caller\'s words inert and without links', () => {
  const p = hostilePermission('go test ./...\npython3 -c "import shutil;shutil.rmtree(\'src\')"', 'allow or reject execute_command "go" for the person');
  const msg = promptMessage(p);
  assert.equal(
    msg,
    'Nexus: agent session s1 acting for the person asks to run execute_command: go test ./...\\npython3 -c "import shutil;shutil.rmtree(\'src\')" — ' +
      '"Always" remembers: allow or reject execute_command "go" for the person. ' +
      'In the caller\'s words: "\\x1b[2K\\rrun the tests [Allow](\u200bcommand:nexus.answerApproval) \\u202e"',
  );
  const detail = promptDetail(p);
  assert.equal(
    detail,
    [
      'Asked by: agent session s1 acting for the person',
      'Command: go test ./...',
      '       | python3 -c "import shutil;shutil.rmtree(\'src\')"',
      'Risk: high (shell command in the workspace root)',
      '  - runs several commands (; && || or new lines)',
      '"Always" remembers: allow or reject execute_command "go" for the person',
      "In the caller's words, not checked by Nexus:",
      '  Intent: \\x1b[2K\\rrun the tests [Allow](command:nexus.answerApproval) \\u202e',
      '  Expected outcome: tests pass\\u2066',
    ].join('\n'),
  );
  assert.deepEqual(promptPick(p), { label: 'execute_command', description: 'go test ./...\\npython3 -c "import shutil;shutil.rmtree(\'src\')"' });

  // No "always" scope: it counts once. A command too long for a
  // notification is cut with a note, never silently.
  const long = promptMessage(hostilePermission(`ls ${' '.repeat(2000)}; rm -rf src`));
  assert.ok(long.length <= MAX_PROMPT_MESSAGE + 200, `${long.length}`);
  assert.match(long, /the command goes on for \d+ more characters: see it in Pending Approvals/);
  assert.match(long, /"Always" counts once here: nothing is remembered\.$/);
});

test('chat and activity cards: what the model and the tools wrote is inert', () => {
  const s = emptyChat();
  reduce(s, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Done.\x1b]0;owned\x07 \u202eexe.gnp [x](command:evil)' } });
  reduce(s, { sessionUpdate: 'tool_call', toolCallId: 't1', title: 'Run\rrm -rf src', kind: 'execute', status: 'pending' });
  reduce(s, {
    sessionUpdate: 'tool_call_update',
    toolCallId: 't1',
    status: 'failed',
    content: [{ type: 'content', content: { type: 'text', text: 'boom\x1b[2J\u2067' } }],
  });
  const v = view(s, new Map([['t1', 'Asked by: agent session s1\nCommand: rm -rf src']]));
  const agent = v.entries[0];
  assert.equal(agent.kind, 'agent');
  assert.equal(agent.html, '<p>Done.\\x1b]0;owned\\x07 \\u202eexe.gnp [x](command:evil)</p>');
  const tool = v.entries[1];
  assert.ok(tool.kind === 'tool');
  assert.equal(tool.title, 'Run\\rrm -rf src');
  assert.equal(tool.detail, 'boom\\x1b[2J\\u2067');
  assert.equal(tool.waiting, true);
  assert.equal(tool.prompt, 'Asked by: agent session s1\nCommand: rm -rf src', 'a waiting card shows its prompt');
  assert.equal(label({ toolCallId: 'x', toolName: 'evil\u202etool', argumentsJson: '{}', status: 'running', startedAt: '' } as ToolCall), 'evil\\u202etool');
});
