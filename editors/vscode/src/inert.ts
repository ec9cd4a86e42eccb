// Text that a model, an MCP server, an app or a file controls, made inert
// before the extension shows it — the same rule as the Go package
// internal/inert: every character that a renderer would act on instead
// of showing is written as a visible escape, so it can neither reorder
// what is around it (bidi overrides and isolates), hide text (format
// characters), nor act as a control.
//
// Escaped: C0 controls and DEL (\r, \n and \t in a line, else \x1b), C1
// controls (\u009b), the format characters (Unicode Cf: bidi marks,
// embeddings, overrides and isolates, zero-width space, word joiner, BOM,
// tags) except the joiners U+200C and U+200D, the line and paragraph
// separators, and lone surrogates (\ud800). Everything else, a backslash
// included, is kept.

const format = /\p{Cf}/u;

function needsEscape(c: string, lines: boolean): boolean {
  const n = c.codePointAt(0) ?? 0;
  if (c === '\n' || c === '\t') {
    return !lines;
  }
  if (n < 0x20 || n === 0x7f || (n >= 0x80 && n <= 0x9f) || n === 0x2028 || n === 0x2029) {
    return true;
  }
  if (n >= 0xd800 && n <= 0xdfff) {
    return true; // a lone surrogate: a pair is one code point here
  }
  if (n === 0x200c || n === 0x200d) {
    return false;
  }
  return format.test(c);
}

function escapeOf(c: string): string {
  switch (c) {
    case '\n':
      return '\\n';
    case '\r':
      return '\\r';
    case '\t':
      return '\\t';
  }
  const n = c.codePointAt(0) ?? 0;
  if (n < 0x80) {
    return `\\x${n.toString(16).padStart(2, '0')}`;
  }
  if (n <= 0xffff) {
    return `\\u${n.toString(16).padStart(4, '0')}`;
  }
  return `\\U${n.toString(16).padStart(8, '0')}`;
}

function escape(s: string, lines: boolean): string {
  let out = '';
  const chars = Array.from(s); // code points; a lone surrogate stays one
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i];
    if (lines && c === '\r' && chars[i + 1] === '\n') {
      out += c; // a CRLF line break
    } else {
      out += needsEscape(c, lines) ? escapeOf(c) : c;
    }
  }
  return out;
}

/** inertLine is s as one inert line: new lines and tabs escaped too. */
export function inertLine(s: string | undefined): string {
  return escape(s ?? '', false);
}

/** inertText is s as inert text of one or more lines: new lines, tabs and
 * CRLF kept, any other carriage return escaped. */
export function inertText(s: string | undefined): string {
  return escape(s ?? '', true);
}

/**
 * noLinks keeps a VS Code notification from making links of a text: the
 * notification reads "[label](https://…)", "(command:…)" and "(file:…)"
 * as links, and a command link runs a command when clicked. A zero-width
 * space after "](" breaks the syntax and changes nothing the person sees.
 * Apply it after inertLine, which would escape the space.
 */
export function noLinks(s: string): string {
  return s.replace(/\]\(/g, '](\u200b');
}
