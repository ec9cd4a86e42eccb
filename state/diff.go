package state

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

const diffContext = 3

// side is one side of a diff: absent, or a blob with its content.
type side struct {
	exists  bool
	hash    plumbing.Hash
	content []byte
}

// unifiedDiff renders the change of one file the way `git diff A B -- path`
// does: git's headers, hunks with three lines of context, and git's default
// function-name context after each hunk header.
func unifiedDiff(name string, a, b side, abbrev func(plumbing.Hash) string) string {
	if a.exists == b.exists && a.hash == b.hash {
		return ""
	}
	var out strings.Builder
	qa, qb := quoteGitPath("a/"+name), quoteGitPath("b/"+name)
	fmt.Fprintf(&out, "diff --git %s %s\n", qa, qb)
	switch {
	case !a.exists:
		fmt.Fprintf(&out, "new file mode 100644\nindex %s..%s\n", abbrev(plumbing.ZeroHash), abbrev(b.hash))
	case !b.exists:
		fmt.Fprintf(&out, "deleted file mode 100644\nindex %s..%s\n", abbrev(a.hash), abbrev(plumbing.ZeroHash))
	default:
		fmt.Fprintf(&out, "index %s..%s 100644\n", abbrev(a.hash), abbrev(b.hash))
	}
	if isBinary(a.content) || isBinary(b.content) {
		fmt.Fprintf(&out, "Binary files %s and %s differ\n", diffName(a.exists, qa), diffName(b.exists, qb))
		return out.String()
	}
	if (!a.exists && len(b.content) == 0) || (!b.exists && len(a.content) == 0) {
		return out.String() // an empty file added or deleted has no hunks
	}
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", diffName(a.exists, qa), diffName(b.exists, qb))
	writeHunks(&out, splitLines(a.content), lineOps(string(a.content), string(b.content)))
	return out.String()
}

func diffName(exists bool, q string) string {
	if !exists {
		return "/dev/null"
	}
	return q
}

func isBinary(b []byte) bool {
	n := min(len(b), 8000) // git looks for a NUL in the first 8000 bytes
	return strings.IndexByte(string(b[:n]), 0) >= 0
}

// splitLines splits after each "\n"; a last line without one is kept.
func splitLines(b []byte) []string {
	var lines []string
	s := string(b)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

type lineOp struct {
	kind byte // ' ', '-', '+'
	text string
}

// lineOps returns the line-level edit script from a to b.
func lineOps(a, b string) []lineOp {
	var ops []lineOp
	for _, d := range diff.DoWithTimeout(a, b, 5*time.Second) {
		kind := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			kind = '-'
		case diffmatchpatch.DiffInsert:
			kind = '+'
		}
		for _, l := range splitLines([]byte(d.Text)) {
			ops = append(ops, lineOp{kind, l})
		}
	}
	return ops
}

// writeHunks groups the edit script into hunks: changes closer than twice
// the context share one hunk.
func writeHunks(out *strings.Builder, oldLines []string, ops []lineOp) {
	// oldLine[i] and newLine[i] are the 0-based line numbers before ops[i].
	oldLine := make([]int, len(ops)+1)
	newLine := make([]int, len(ops)+1)
	for i, op := range ops {
		oldLine[i+1], newLine[i+1] = oldLine[i], newLine[i]
		if op.kind != '+' {
			oldLine[i+1]++
		}
		if op.kind != '-' {
			newLine[i+1]++
		}
	}
	funcLine := ""
	funcSearched := 0
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-diffContext)
		for start < i && ops[start].kind != ' ' {
			start++
		}
		// Extend the hunk while the next change is within 2*context lines.
		end := i
		for {
			for end < len(ops) && ops[end].kind != ' ' {
				end++
			}
			next := end
			for next < len(ops) && ops[next].kind == ' ' {
				next++
			}
			if next < len(ops) && next-end <= 2*diffContext {
				end = next
				continue
			}
			end = min(end+diffContext, len(ops))
			break
		}
		oldStart, oldCount := oldLine[start], oldLine[end]-oldLine[start]
		newStart, newCount := newLine[start], newLine[end]-newLine[start]
		// git keeps the nearest earlier line that starts with a letter, _
		// or $ as the hunk's function name.
		for l := oldStart - 1; l >= funcSearched; l-- {
			if isFuncLine(oldLines[l]) {
				funcLine = funcName(oldLines[l])
				break
			}
		}
		funcSearched = oldStart
		fmt.Fprintf(out, "@@ -%s +%s @@", hunkRange(oldStart, oldCount), hunkRange(newStart, newCount))
		if funcLine != "" {
			out.WriteString(" " + funcLine)
		}
		out.WriteByte('\n')
		for _, op := range ops[start:end] {
			out.WriteByte(op.kind)
			out.WriteString(op.text)
			if !strings.HasSuffix(op.text, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
}

func hunkRange(start, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if count == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

func isFuncLine(l string) bool {
	if l == "" {
		return false
	}
	c := l[0]
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func funcName(l string) string {
	if len(l) > 80 {
		l = l[:80]
	}
	return strings.TrimRight(l, " \t\r\n\v\f")
}

// quoteGitPath quotes a path as git does (core.quotePath): names with
// control characters, quotes, backslashes or bytes over 0x7f are written as a
// C string with octal escapes.
func quoteGitPath(p string) string {
	needs := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			needs = true
			break
		}
	}
	if !needs {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// FileDiff renders the change of the file at path (slash-separated) from
// before to after the way `git diff` does (see unifiedDiff); a nil side is
// an absent file. It is "" when nothing changed. Binary content gives git's
// "Binary files ... differ" line.
func FileDiff(path string, before, after []byte) string {
	a, b := side{exists: before != nil, content: before}, side{exists: after != nil, content: after}
	if a.exists {
		a.hash = blobHash(before)
	}
	if b.exists {
		b.hash = blobHash(after)
	}
	return unifiedDiff(path, a, b, func(h plumbing.Hash) string { return h.String()[:7] })
}

// IsBinary reports whether content is binary as git decides it: a NUL in
// its first 8000 bytes.
func IsBinary(content []byte) bool { return isBinary(content) }
