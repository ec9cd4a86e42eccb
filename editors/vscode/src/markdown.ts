// The Agent Chat's markdown, without VS Code: markdown-it with raw HTML
// off, code blocks highlighted by highlight.js (class names only, coloured
// by chat.css from the theme), and links only to the web (http, https) or
// to files of the workspace (a relative path, with a line: "src/a.go:42"),
// which the webview turns into messages (chat.js) that chat.ts checks
// before it opens anything. The text is a model's: hostile.

import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import shell from 'highlight.js/lib/languages/shell';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import MarkdownIt from 'markdown-it';

type StateCore = MarkdownIt.StateCore;
type Token = MarkdownIt.Token;

for (const [name, lang] of Object.entries({ bash, css, diff, go, javascript, json, markdown, python, rust, shell, typescript, xml, yaml })) {
  hljs.registerLanguage(name, lang);
}

/** escapeHtml escapes the characters HTML reads specially. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

/** A link the chat may follow: a web page, or a file of the workspace at a
 * line (1-based; 0: none). */
export type LinkTarget = { kind: 'web'; url: string } | { kind: 'file'; path: string; line: number };

/** linkTarget reads a link's target: an http or https URL, or a relative
 * path of the workspace ("a/b.go", "a/b.go:42", "a/b.go#L42",
 * "a/b.go:42:7"). Anything else — another scheme (file:, command:,
 * javascript:, data:), an absolute path, a path that climbs out with "..",
 * a host-relative "//x" — is no link: undefined. chat.ts checks a file's
 * real path inside the workspace folder again before it opens it. */
export function linkTarget(href: string): LinkTarget | undefined {
  const h = href.trim();
  if (/^https?:\/\//i.test(h)) {
    try {
      const u = new URL(h);
      return u.protocol === 'http:' || u.protocol === 'https:' ? { kind: 'web', url: u.toString() } : undefined;
    } catch {
      return undefined;
    }
  }
  if (h === '' || /^[a-z][a-z0-9+.-]*:/i.test(h.replace(/:\d+(:\d+)?$/, '')) || h.startsWith('/') || h.startsWith('\\') || [...h].some((c) => c < ' ' || c === '\x7f')) {
    return undefined;
  }
  let path = h;
  let line = 0;
  const m = /^(.*?)(?:#L(\d+)(?:-L?\d+)?|:(\d+)(?::\d+)?)$/.exec(h);
  if (m) {
    path = m[1];
    line = Number(m[2] ?? m[3]);
  }
  try {
    path = decodeURI(path);
  } catch {
    return undefined;
  }
  path = path.replace(/\\/g, '/').replace(/^\.\//, '');
  if (path === '' || path.split('/').some((p) => p === '..') || /^[a-z]:/i.test(path)) {
    return undefined;
  }
  return { kind: 'file', path, line };
}

/** The file names a bare path of the answer must end with to be linked
 * (without a slash or a line, "e.g" or "v1.2" would be). */
const sourceExt =
  /\.(go|mod|sum|ts|tsx|js|jsx|mjs|cjs|json|ya?ml|toml|md|txt|py|rs|c|h|cc|cpp|hpp|java|kt|rb|php|cs|swift|sh|bash|css|scss|html|xml|proto|sql|lock|cfg|ini|conf|env|gradle|mk)$/i;

/** A path in prose: "dir/file.ext", "file.ext:42", "file.go". */
const pathInText = /(^|[\s(["'])((?:\.?\/)?(?:[\w@.+-]+\/)*[\w@+-][\w@.+-]*\.[A-Za-z0-9]{1,8}(?::\d+(?::\d+)?|#L\d+)?)(?=$|[\s)\]"',;!?]|\.(?:\s|$)|:(?:\s|$))/g;

/** looksLikePath reports whether a word of the answer is a workspace path
 * to link: it has a slash or a line, or ends with a source file's
 * extension; never a URL. */
function looksLikePath(word: string): boolean {
  if (word.includes('://') || !linkTarget(word)) {
    return false;
  }
  const bare = word.replace(/(:\d+(:\d+)?|#L\d+)$/, '');
  return word !== bare || (bare.includes('/') && /\.[A-Za-z]/.test(bare)) || sourceExt.test(bare);
}

/** linkPaths is a core rule: the workspace paths in text and in inline code
 * (outside links) become links to the file at its line. */
function linkPaths(state: StateCore): void {
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) {
      continue;
    }
    const out: Token[] = [];
    let inLink = 0;
    for (const t of block.children) {
      if (t.type === 'link_open') {
        inLink++;
      } else if (t.type === 'link_close') {
        inLink--;
      }
      if (inLink > 0) {
        out.push(t);
        continue;
      }
      if (t.type === 'code_inline' && looksLikePath(t.content.trim())) {
        out.push(linkOpen(state, t.content.trim()), t, linkClose(state));
        continue;
      }
      if (t.type !== 'text') {
        out.push(t);
        continue;
      }
      let last = 0;
      for (const m of t.content.matchAll(pathInText)) {
        const word = m[2];
        if (!looksLikePath(word)) {
          continue;
        }
        const at = (m.index ?? 0) + m[1].length;
        if (at > last) {
          out.push(textToken(state, t.content.slice(last, at)));
        }
        out.push(linkOpen(state, word), textToken(state, word), linkClose(state));
        last = at + word.length;
      }
      if (last === 0) {
        out.push(t);
      } else if (last < t.content.length) {
        out.push(textToken(state, t.content.slice(last)));
      }
    }
    block.children = out;
  }
}

function textToken(state: StateCore, content: string): Token {
  const t = new state.Token('text', '', 0);
  t.content = content;
  return t;
}

function linkOpen(state: StateCore, href: string): Token {
  const t = new state.Token('link_open', 'a', 1);
  t.attrs = [['href', href]];
  return t;
}

function linkClose(state: StateCore): Token {
  return new state.Token('link_close', 'a', -1);
}

const md = new MarkdownIt({
  html: false, // raw HTML is text
  linkify: true, // URLs with a scheme; fuzzy links off below
  typographer: false,
  breaks: true, // a model's single new line is a line break, as in peers' chats
  highlight: (code, lang) => {
    const name = lang.toLowerCase();
    if (!name || !hljs.getLanguage(name)) {
      return ''; // markdown-it escapes it
    }
    try {
      return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
    } catch {
      return '';
    }
  },
});
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false, fuzzyIP: false });
md.disable(['image']); // no image loads; ![alt](url) stays text
md.validateLink = (url) => linkTarget(url) !== undefined;
md.core.ruler.push('nexus_paths', linkPaths);
// A link is no navigation: the webview posts its target (data-href) and
// chat.ts decides.
md.renderer.rules.link_open = (tokens, idx) => {
  const href = String(tokens[idx].attrGet('href') ?? '');
  const target = linkTarget(href);
  if (!target) {
    return '<a>';
  }
  const title = target.kind === 'web' ? target.url : `Open ${target.path}${target.line ? ` at line ${target.line}` : ''}`;
  return `<a href="#" class="${target.kind === 'web' ? 'web-link' : 'file-link'}" data-href="${escapeHtml(href)}" title="${escapeHtml(title)}">`;
};

/** renderMarkdown renders the markdown an agent writes (CommonMark and
 * GitHub's tables and strikethrough) as HTML for innerHTML: raw HTML is
 * escaped, no image is loaded, code blocks of known languages are
 * highlighted with class names, and links carry their target in data-href
 * only (web or workspace file, see linkTarget). */
export function renderMarkdown(text: string): string {
  return md.render(text).trimEnd();
}
