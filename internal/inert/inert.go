// Package inert makes text that a model, an MCP server, an app or a file
// controls safe to show on a terminal: every character that a terminal or
// a text renderer would act on instead of showing is written as a visible
// escape, so the text can neither move the cursor, erase a line, set a
// window title, switch the character set, nor reorder what is around it.
// Start with [Line] for one line (a field, a table cell) and [Text] for
// text of several lines (an answer, an output).
//
// Escaped, each as the escape shown:
//   - C0 controls and DEL: \r, \n (in [Line]), \t (in [Line]), else \x1b;
//   - C1 controls U+0080–U+009F: \u009b;
//   - bidirectional formatting (U+061C, U+200E, U+200F, U+202A–U+202E,
//     U+2066–U+2069) and the other invisible format characters (Unicode
//     category Cf, such as U+200B, U+2060 and U+FEFF, and the tag
//     characters U+E0000–U+E007F) except the joiners U+200C and U+200D
//     that scripts and emoji need: \u202e, \U000e0041;
//   - the line and paragraph separators U+2028 and U+2029: \u2028;
//   - each byte of invalid UTF-8: \xff.
//
// Everything else, a backslash included, is kept as it is.
package inert

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Line is s as one inert line: every character above is escaped, new
// lines and tabs too.
func Line(s string) string { return escape(s, false) }

// Text is s as inert text of one or more lines: as [Line], but a new line
// (\n), a tab and a carriage return right before a new line (\r\n) are
// kept; any other carriage return is escaped.
func Text(s string) string { return escape(s, true) }

// Clean reports whether s is shown as it is by [Text] (lines: true) or
// [Line] (lines: false).
func Clean(s string, lines bool) bool {
	for i, r := range s {
		if lines && crlf(s, i) {
			continue
		}
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return false
			}
		}
		if needsEscape(r, lines) {
			return false
		}
	}
	return true
}

func escape(s string, lines bool) string {
	if Clean(s, lines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case lines && crlf(s, i):
			b.WriteByte('\r')
		case needsEscape(r, lines):
			writeEscape(&b, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// crlf reports whether s[i:] starts with "\r\n": a line break, which
// moves no cursor over what was shown.
func crlf(s string, i int) bool { return strings.HasPrefix(s[i:], "\r\n") }

// needsEscape reports whether r is shown escaped.
func needsEscape(r rune, lines bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !lines
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x200c || r == 0x200d: // zero-width non-joiner and joiner
		return false
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

func writeEscape(b *strings.Builder, r rune) {
	switch {
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\r':
		b.WriteString(`\r`)
	case r == '\t':
		b.WriteString(`\t`)
	case r < 0x80:
		fmt.Fprintf(b, `\x%02x`, r)
	case r <= 0xffff:
		fmt.Fprintf(b, `\u%04x`, r)
	default:
		fmt.Fprintf(b, `\U%08x`, r)
	}
}

// JSON is a JSON text with every character that [Line] would escape
// written as a JSON escape (\u001b, \u202e, a surrogate pair above
// U+FFFF), so it reads the same to a JSON parser and is inert on a
// terminal. Outside strings, compact JSON has no such character; a byte
// of invalid UTF-8 becomes \ufffd, as a JSON parser reads it.
func JSON(b []byte) []byte {
	if utf8.Valid(b) && Clean(string(b), false) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			out = append(out, `\ufffd`...)
		case needsEscape(r, false) && r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		case needsEscape(r, false):
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}
