// Completion and checks of .nexus/config.yaml from the JSON Schema the
// extension ships (generated from the config types by make schema).

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { complete, problems, type Completion, type Schema } from '../src/configModel';

const schema = JSON.parse(fs.readFileSync(path.join(process.cwd(), 'schemas', 'nexus-config.schema.json'), 'utf8')) as Schema;

/** at completes where "|" stands in text. */
function at(text: string): Completion {
  const lines = text.split('\n');
  const line = lines.findIndex((l) => l.includes('|'));
  return complete(schema, text.replace('|', ''), line, lines[line].indexOf('|'));
}

function keys(c: Completion): string[] {
  assert.equal(c.kind, 'keys', JSON.stringify(c));
  return c.kind === 'keys' ? c.items.map((i) => i.key) : [];
}

test('config completion: the keys valid at the cursor, with their descriptions', () => {
  assert.deepEqual(keys(at('|')), ['definitions', 'runtime', 'apps', 'tools', 'mcp', 'llm', 'agent', 'messages', 'context', 'log', 'grpc', 'acp', 'checkpoints', 'web', 'hooks']);
  assert.deepEqual(keys(at('log:\n  level: info\n\n|')), ['definitions', 'runtime', 'apps', 'tools', 'mcp', 'llm', 'agent', 'messages', 'context', 'grpc', 'acp', 'checkpoints', 'web', 'hooks']);

  const tools = at('log: {}\ntools:\n  timeout: 30s\n  |\n  network: true\nagent:\n  maxSteps: 3\n');
  assert.deepEqual(keys(tools), ['outputLimit', 'maxArgumentsSize', 'sandbox', 'envAllowlist', 'policy']);
  assert.ok(tools.kind === 'keys');
  const sandbox = tools.items.find((i) => i.key === 'sandbox')!;
  assert.match(sandbox.description, /^sandbox is where execute_command's commands run/);
  assert.equal(sandbox.detail, 'read-only | workspace-write | off · default workspace-write');
  assert.deepEqual(sandbox.values, ['read-only', 'workspace-write', 'off']);
  assert.equal(sandbox.block, false);
  const policy = tools.items.find((i) => i.key === 'policy')!;
  assert.equal(policy.block, true);
  assert.equal(tools.items.find((i) => i.key === 'outputLimit')!.detail, 'size · default 1MiB');

  // A key being typed: the same list (the editor filters it).
  assert.ok(keys(at('tools:\n  sand|')).includes('sandbox'));
  assert.deepEqual(keys(at('mcp:\n  http:\n    address: 127.0.0.1:0\n    |')), ['allowedOrigins', 'allowedHosts', 'sessionIdleTimeout', 'maxSessionsPerToken']);
});

test('config completion: in lists of mappings and maps of profiles', () => {
  assert.deepEqual(keys(at('apps:\n  - |')), ['id', 'token', 'tokenFile', 'certificate', 'grants']);
  assert.deepEqual(keys(at('apps:\n  - id: planner\n    |')), ['token', 'tokenFile', 'certificate', 'grants']);
  assert.deepEqual(keys(at('apps:\n  - id: planner\n    grants:\n      runtime: [team]\n      |\n  - id: other\n')), ['definitions', 'tools', 'network']);
  assert.deepEqual(keys(at('apps:\n  - id: a\n  - id: b\n    grants:\n      tools:\n        |')), ['allow', 'ask', 'deny']);
  const profile = keys(at('llm:\n  default: fast\n  profiles:\n    fast:\n      provider: openai\n      |'));
  assert.deepEqual(profile.slice(0, 3), ['api', 'model', 'apiKeyEnv']);
  // llm itself: its own keys and a profile's, written directly under it.
  assert.ok(keys(at('llm:\n  |')).includes('profiles') && keys(at('llm:\n  |')).includes('provider'));
});

test('config completion: the values of a key', () => {
  const v = (text: string): string[] => {
    const c = at(text);
    return c.kind === 'values' ? c.values : [];
  };
  assert.deepEqual(v('tools:\n  sandbox: |'), ['read-only', 'workspace-write', 'off']);
  assert.deepEqual(v('tools:\n  sandbox: wo|'), ['read-only', 'workspace-write', 'off']);
  assert.deepEqual(v('tools:\n  policy:\n    write_file: |'), ['allow', 'ask', 'deny']);
  assert.deepEqual(v('definitions:\n  watch: |'), ['true', 'false']);
  assert.deepEqual(v('llm:\n  profiles:\n    p:\n      provider: |'), ['openai', 'anthropic', 'gemini', 'openai-compatible']);
  assert.deepEqual(v('llm:\n  profiles:\n    p:\n      api: |'), ['responses', 'chat', 'messages', 'generateContent']);
  assert.deepEqual(at('agent:\n  maxSteps: |').kind, 'none');
  assert.deepEqual(at('llm:\n  profiles:\n    p:\n      extraBody:\n        |').kind, 'none');
});

test('config checks: unknown keys and wrong values, as nexusd words them', () => {
  const msgs = (text: string): string[] => problems(schema, text).map((p) => `${p.line + 1}:${p.start + 1}-${p.end + 1} ${p.message}`);
  assert.deepEqual(msgs('logs:\n  level: debug\n'), [
    '1:1-5 unknown key "logs" (known: definitions, runtime, apps, tools, mcp, llm, agent, messages, context, log, grpc, acp, checkpoints, web, hooks)',
  ]);
  assert.deepEqual(msgs('tools:\n  sandbx: off\n'), ['2:3-9 unknown key "sandbx" in tools (known: timeout, outputLimit, maxArgumentsSize, sandbox, network, envAllowlist, policy)']);
  assert.deepEqual(msgs('apps:\n  - id: one\n    token: t\n\n    # a typo next\n    foo: bar\n'), [
    '6:5-8 unknown key "foo" in apps[] (known: id, token, tokenFile, certificate, grants)',
  ]);
  assert.deepEqual(msgs('tools:\n  sandbox: none # not a mode\n'), ['2:12-16 tools.sandbox: "none" is not one of: read-only, workspace-write, off']);
  assert.deepEqual(msgs('tools:\n  policy:\n    write_file: sometimes\n'), ['3:17-26 tools.policy.write_file: "sometimes" is not one of: allow, ask, deny']);
  assert.deepEqual(msgs('agent:\n  maxSteps: lots\n'), ['2:13-17 agent.maxSteps: "lots" is not an integer of at least 1']);
  assert.deepEqual(msgs('agent:\n  maxSteps: 0\n'), ['2:13-14 agent.maxSteps: 0 is not an integer of at least 1']);
  assert.deepEqual(msgs('definitions:\n  maxFileSize: 10 megs\n  debounce: 5\n'), [
    '2:16-23 definitions.maxFileSize: "10 megs" is not a size (examples: 1048576, 10MiB)',
    '3:13-14 definitions.debounce: 5 is not a duration (examples: 30s, 1m30s, 250ms)',
  ]);
  assert.deepEqual(msgs('tools: read_file\n'), ['1:8-17 tools: "read_file" is not a mapping']);
  assert.deepEqual(msgs('apps:\n  - id: Planner\n'), [
    '2:9-16 apps[].id: "Planner" is not valid: it must be 1 to 63 of a-z, 0-9, _ and -, starting with a letter or digit',
  ]);
});

test('config checks: what nexusd loads passes', () => {
  const ok = [
    fs.readFileSync(path.join(process.cwd(), '..', '..', 'examples', 'workspace', '.nexus', 'config.yaml'), 'utf8'),
    [
      '# every section',
      '---',
      'definitions:',
      '  root: defs',
      '  maxFileSize: 10MiB',
      '  debounce: 250ms',
      'runtime:',
      '  backend: ${BACKEND:-bbolt}',
      '  maxValueSize: 1048576',
      'apps:',
      '  - id: planner',
      '    tokenFile: planner.token',
      '    grants:',
      '      definitions:',
      '        read: ["shared/**"]',
      '        write:',
      '          - shared/plans/**',
      '      tools: {allow: [read_file]}',
      '      network: true',
      'tools:',
      '  sandbox: off',
      '  envAllowlist:',
      '    - PATH',
      '    - HOME',
      '  policy:',
      '    write_file: ask',
      '    "github/*": allow',
      'mcp:',
      '  http:',
      '    address: "127.0.0.1:0"',
      '    maxSessionsPerToken: 16',
      'llm:',
      '  profiles:',
      '    local:',
      '      provider: openai-compatible',
      '      model: qwen',
      '      baseURL: http://127.0.0.1:8080/v1',
      '      temperature: 0.2',
      '      extraBody:',
      '        whatever: {nested: true}',
      '      prices: {input: 0, output: 0}',
      'agent:',
      '  maxSteps: ${STEPS}',
      '  tools: [read_file, "github/*"]',
      'messages:',
      '  pruning: token_budget',
      'context:',
      '  file: |',
      '    not: a key',
      'log:',
      '  level: debug   # comments are fine',
      'grpc:',
      '  address:',
      'acp: {mode: ask}',
    ].join('\n'),
  ];
  for (const text of ok) {
    assert.deepEqual(problems(schema, text), [], text);
    assert.deepEqual(problems(schema, text.replace(/\n/g, '\r\n')), [], 'CRLF');
  }
});

test('config schema: package.json gives it to YAML extensions and the package ships it', () => {
  const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { contributes: { yamlValidation: { fileMatch: string[]; url: string }[] } };
  const [v] = pkg.contributes.yamlValidation;
  assert.ok(v.fileMatch.includes('.nexus/config.yaml'));
  assert.ok(fs.existsSync(v.url), v.url);
  assert.match(fs.readFileSync('.vscodeignore', 'utf8'), new RegExp(`^!${v.url.replace('./', '').replace(/\./g, '\\.')}$`, 'm'));
});
