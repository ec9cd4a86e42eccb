// The Agent Chat's markdown (markdown-it, raw HTML off): a model's text is
// hostile, so it makes no HTML, script or image, and links only to the web
// or to files of the workspace, which the extension checks again.

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { insideFolder } from '../src/chatModel';
import { escapeHtml, linkTarget, renderMarkdown } from '../src/markdown';

test('chat markdown: HTML, scripts, images and other schemes stay text', () => {
  const evil = '<script>alert(1)</script> & <img src=x onerror=alert(1)> "q"';
  const html = renderMarkdown(
    `${evil}\n\n- item <b>x</b>\n\n\`<i>code</i>\`\n\n\`\`\`html\n<div onclick="x">\n\`\`\`\n` +
      '[js](javascript:alert(1)) [file](file:///etc/passwd) [cmd](command:workbench.action.terminal.new) [data](data:text/html,x) ' +
      '[abs](/etc/passwd) [up](../secret.txt) [host](//evil.example/x) ![img](https://example.com/a.png) <a href="https://x">raw</a>',
  );
  const tags = new Set([...html.matchAll(/<([a-z0-9]+)/g)].map((m) => m[1]));
  assert.deepEqual([...tags].sort(), ['a', 'code', 'li', 'p', 'pre', 'span', 'ul'], html);
  const attrs = new Set([...html.matchAll(/ ([a-z-]+)="/g)].map((m) => m[1]));
  assert.deepEqual([...attrs].sort(), ['class', 'data-href', 'href', 'title'], html);
  assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt; &quot;q&quot;'), html);
  assert.ok(html.includes('<li>item &lt;b&gt;x&lt;/b&gt;</li>'), html);
  assert.ok(html.includes('<code>&lt;i&gt;code&lt;/i&gt;</code>'), html);
  for (const text of ['[js](javascript:alert(1))', '[file](file:///etc/passwd)', '[cmd](command:', '[data](data:', '[abs](/etc/passwd)', '[up](../secret.txt)', '[host](//evil.example/x)']) {
    assert.ok(html.includes(text), `${text} stays text: ${html}`);
  }
  // Every link is href="#": its target is data only, for chat.ts to check.
  assert.deepEqual([...new Set([...html.matchAll(/ href="([^"]*)"/g)].map((m) => m[1]))], ['#'], html);
  assert.ok(html.includes('data-href="https://example.com/a.png"'), 'an image is a link to it, never loaded');
  assert.equal(escapeHtml('<&>"\''), '&lt;&amp;&gt;&quot;&#39;');
  assert.ok(!renderMarkdown('```"><x\nA\n```').includes('"><x'), 'a language name cannot leave its attribute');
});

test('chat markdown: headings, lists, tables, and code blocks highlighted by class', () => {
  const html = renderMarkdown('# Done\n\n**bold** and *it* and `x*y*`\n\n1. one\n2. two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```go\nfunc main() {}\n```\n\n```\n**not bold**\n```');
  assert.ok(html.includes('<h1>Done</h1>'), html);
  assert.ok(html.includes('<strong>bold</strong> and <em>it</em> and <code>x*y*</code>'), html);
  assert.ok(html.includes('<ol>\n<li>one</li>'), html);
  assert.ok(html.includes('<td>1</td>'), html);
  assert.ok(html.includes('<pre><code class="language-go"><span class="hljs-function"><span class="hljs-keyword">func</span>'), html);
  assert.ok(html.includes('<pre><code>**not bold**\n</code></pre>'), html);
  assert.equal(renderMarkdown('snake_case_name'), '<p>snake_case_name</p>');
  assert.equal(renderMarkdown('one\ntwo'), '<p>one<br>\ntwo</p>', 'a single new line is a break');
});

test('chat markdown: workspace paths and markdown links to files open the file at the line; URLs open outside', () => {
  const html = renderMarkdown('See `main.go:42`, notes.txt and src/a/b.ts:3 (not e.g. v1.2 or 3.5). [the test](cli/chat_test.go#L27) [docs](https://example.com/x) and http://example.org/p.go');
  const links = [...html.matchAll(/<a href="#" class="([a-z-]+)" data-href="([^"]*)"/g)].map((m) => `${m[1]} ${m[2]}`);
  assert.deepEqual(links, ['file-link main.go:42', 'file-link notes.txt', 'file-link src/a/b.ts:3', 'file-link cli/chat_test.go#L27', 'web-link https://example.com/x', 'web-link http://example.org/p.go'], html);
  assert.ok(html.includes('title="Open main.go at line 42"'), html);
});

test('chat links: only http(s) and relative workspace paths, with their line', () => {
  assert.deepEqual(linkTarget('src/a.go:12:3'), { kind: 'file', path: 'src/a.go', line: 12 });
  assert.deepEqual(linkTarget('./a%20b.md#L7'), { kind: 'file', path: 'a b.md', line: 7 });
  assert.deepEqual(linkTarget('README.md'), { kind: 'file', path: 'README.md', line: 0 });
  assert.deepEqual(linkTarget('https://example.com/a?b=1'), { kind: 'web', url: 'https://example.com/a?b=1' });
  for (const bad of ['javascript:alert(1)', 'file:///etc/passwd', 'command:x', 'vscode://x', '/etc/passwd', 'C:/Windows/win.ini', 'C:\\x', '\\\\host\\share', '//evil/x', '../up.txt', 'a/../../up.txt', 'a\nb', '']) {
    assert.equal(linkTarget(bad), undefined, bad);
  }
});

test('chat links: a file opens only when its real path is inside the workspace folder', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nexus-chat-'));
  const root = path.join(tmp, 'ws');
  fs.mkdirSync(path.join(root, 'src'), { recursive: true });
  fs.writeFileSync(path.join(root, 'src', 'a.go'), 'package a\n');
  fs.writeFileSync(path.join(tmp, 'secret.txt'), 'secret\n');
  fs.symlinkSync(path.join(tmp, 'secret.txt'), path.join(root, 'link.txt'));
  try {
    assert.equal(await insideFolder(root, 'src/a.go'), fs.realpathSync(path.join(root, 'src', 'a.go')));
    assert.deepEqual(await insideFolder(root, 'link.txt'), { error: 'link.txt is outside the workspace folder: the chat opens only its files.' });
    assert.deepEqual(await insideFolder(root, '../secret.txt'), { error: '../secret.txt is outside the workspace folder: the chat opens only its files.' });
    assert.deepEqual(await insideFolder(root, 'missing.go'), { error: 'missing.go is not a file of the workspace folder.' });
    assert.deepEqual(await insideFolder(root, 'src'), { error: 'src is not a file.' });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
