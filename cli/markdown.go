package cli

import (
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
)

// termMarkdown renders the agent's markdown answer on a terminal, a line
// at a time as it streams in (a line shows once it is whole, as Codex's
// does): headings bold, **bold**, *italic*, `code` and fenced code blocks
// coloured (blocks indented), bullets as •, quotes behind a bar, and
// links — [text](target), a web URL, or a workspace path such as
// src/a.go:42 — as OSC 8 hyperlinks: a web page, or the workspace file.
//
// Its input is inert already (internal/inert): no escape, control or bidi
// character of the model's reaches the terminal; the escapes here are
// its own. Off a terminal the answer is written as it comes, plain
// markdown.
type termMarkdown struct {
	// root is the workspace's absolute path, for file links; empty: no
	// file links.
	root    string
	partial string // the line not yet ended
	fence   string // the open code fence's marker ("```", "~~~"), or ""
}

// SGR escapes of the rendering.
const (
	sgrReset  = "\x1b[0m"
	sgrBold   = "\x1b[1m"
	sgrDim    = "\x1b[2m"
	sgrItalic = "\x1b[3m"
	sgrCode   = "\x1b[36m" // cyan
)

// write takes a chunk of the answer and returns what to print: the lines
// it completed, rendered.
func (m *termMarkdown) write(chunk string) string {
	m.partial += chunk
	var b strings.Builder
	for {
		line, rest, ok := strings.Cut(m.partial, "\n")
		if !ok {
			break
		}
		b.WriteString(m.line(line))
		b.WriteByte('\n')
		m.partial = rest
	}
	return b.String()
}

// flush returns the line not yet ended, rendered (the answer stopped
// there), and ends any open code block.
func (m *termMarkdown) flush() string {
	s := ""
	if m.partial != "" {
		s = m.line(m.partial)
	}
	m.partial, m.fence = "", ""
	return s
}

var (
	fenceLine   = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([\\w+.-]*)\\s*$")
	headingLine = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	bulletLine  = regexp.MustCompile(`^(\s*)[-*+]\s+(.*)$`)
	quoteLine   = regexp.MustCompile(`^\s*>\s?(.*)$`)
	ruleLine    = regexp.MustCompile(`^\s*([-*_])(\s*[-*_]){2,}\s*$`)
)

// line renders one whole line of the answer.
func (m *termMarkdown) line(l string) string {
	if m.fence != "" {
		if strings.HasPrefix(strings.TrimSpace(l), m.fence) {
			m.fence = ""
			return sgrDim + "    " + sgrReset
		}
		return "    " + sgrCode + l + sgrReset
	}
	if f := fenceLine.FindStringSubmatch(l); f != nil {
		m.fence = f[1]
		return sgrDim + "    " + f[2] + sgrReset
	}
	if h := headingLine.FindStringSubmatch(l); h != nil {
		return sgrBold + m.inline(h[2], sgrBold) + sgrReset
	}
	if ruleLine.MatchString(l) {
		return sgrDim + "────────" + sgrReset
	}
	if q := quoteLine.FindStringSubmatch(l); q != nil {
		return sgrDim + "│ " + sgrReset + m.inline(q[1], "")
	}
	if b := bulletLine.FindStringSubmatch(l); b != nil {
		return b[1] + "• " + m.inline(b[2], "")
	}
	return m.inline(l, "")
}

var (
	// inlineToken finds, in order: `code`, [text](target), **bold**,
	// *italic*, a web URL, a workspace path. (Underscores are left alone:
	// snake_case_names are common in answers.)
	inlineToken = regexp.MustCompile("`([^`]+)`" +
		`|\[([^\]]+)\]\(([^)\s]+)\)` +
		`|\*\*([^*]+)\*\*` +
		`|\*([^*\s][^*]*)\*` +
		`|(https?://[^\s<>()\[\]]+[^\s<>()\[\].,;:!?'"])` +
		`|((?:[\w@.+-]+/)*[\w@+-][\w@.+-]*\.[A-Za-z0-9]{1,8}(?::\d+(?::\d+)?|#L\d+)?)`)
	// sourceExt: a bare file name without a slash or a line is linked
	// only with a source file's extension ("e.g" and "v1.2" are not).
	sourceExt  = regexp.MustCompile(`(?i)\.(go|mod|sum|ts|tsx|js|jsx|mjs|cjs|json|ya?ml|toml|md|txt|py|rs|c|h|cc|cpp|hpp|java|kt|rb|php|cs|swift|sh|bash|css|scss|html|xml|proto|sql|lock|cfg|ini|conf|env|gradle|mk)$`)
	lineSuffix = regexp.MustCompile(`(?::(\d+)(?::\d+)?|#L(\d+))$`)
)

// inline renders the spans of a line; after is the SGR to return to after
// a span (a heading stays bold).
func (m *termMarkdown) inline(s, after string) string {
	reset := sgrReset + after
	var b strings.Builder
	last := 0
	for _, ix := range inlineToken.FindAllStringSubmatchIndex(s, -1) {
		sub := func(i int) string {
			if ix[2*i] < 0 {
				return ""
			}
			return s[ix[2*i]:ix[2*i+1]]
		}
		var out string
		switch {
		case ix[2] >= 0:
			out = sgrCode + m.link(sub(1), sub(1), false) + reset
		case ix[4] >= 0:
			out = m.link(sub(2), sub(3), true)
		case ix[8] >= 0:
			out = sgrBold + sub(4) + reset
		case ix[10] >= 0:
			out = sgrItalic + sub(5) + reset
		case ix[12] >= 0:
			out = m.link(sub(6), sub(6), true)
		default:
			out = m.link(sub(7), sub(7), false)
		}
		b.WriteString(s[last:ix[0]])
		b.WriteString(out)
		last = ix[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// link is text as an OSC 8 hyperlink to target, when target is a web URL
// or a workspace path (a markdown link's, or, unless explicit, a word that
// looks like one); else text as it is.
func (m *termMarkdown) link(text, target string, explicit bool) string {
	href := ""
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
		if u, err := url.Parse(target); err == nil && u.Host != "" {
			href = u.String()
		}
	} else if p, ok := workspacePath(target); ok && m.root != "" && (explicit || looksLikePath(target)) {
		href = (&url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(m.root, filepath.FromSlash(p)))}).String()
	}
	if href == "" {
		return text
	}
	return "\x1b]8;;" + href + "\x1b\\" + text + "\x1b]8;;\x1b\\"
}

// workspacePath is a link's target as a path relative to the workspace
// (its line cut off), if it is one: no scheme, not absolute, not
// climbing out with "..".
func workspacePath(target string) (string, bool) {
	p := lineSuffix.ReplaceAllString(target, "")
	if p == "" || strings.Contains(p, ":") || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.IsAbs(p) {
		return "", false
	}
	p = strings.TrimPrefix(strings.ReplaceAll(p, `\`, "/"), "./")
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", false
		}
	}
	return p, true
}

// looksLikePath reports whether a word of the answer is a workspace path
// to link: it has a slash or a line, or a source file's extension.
func looksLikePath(word string) bool {
	bare := lineSuffix.ReplaceAllString(word, "")
	return bare != word || strings.Contains(bare, "/") || sourceExt.MatchString(bare)
}
