// Package doclinks checks the relative links of Markdown documents, so that
// the README and docs/ cannot point at a page, a heading or a screenshot
// that is not there. A link or image to a path must name a file or directory
// that exists inside the repository; a #fragment into a Markdown file must be
// the id GitHub gives one of its headings ([Slug]: lowercase, punctuation
// dropped except - and _, each space a -, a repeated id numbered -1, -2, …)
// or an <a id> or <a name> of the file.
//
// It reads Markdown as GitHub renders it closely enough for links: fenced
// code blocks (``` and ~~~, at any indent) and code spans hold no links and
// no headings; inline links and images ([text](target), ![alt](target)),
// reference definitions ([label]: target) and the src and href of HTML
// tags are checked; URLs with a scheme (https:, mailto:) are not.
package doclinks

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Broken is a link whose target does not resolve.
type Broken struct {
	File   string // the document, as given to Check
	Line   int    // 1-based
	Target string // the link's target as written
	Reason string
}

func (b Broken) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", b.File, b.Line, b.Target, b.Reason)
}

// Check reads the Markdown files (paths relative to root, with /) and
// returns every link among them that does not resolve. A file it cannot
// read is an error.
func Check(root string, files []string) ([]Broken, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	c := checker{root: root, anchors: map[string]map[string]bool{}}
	var broken []Broken
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, fmt.Errorf("doclinks: %w", err)
		}
		for _, l := range Links(data) {
			if reason := c.resolve(f, l.Target); reason != "" {
				broken = append(broken, Broken{File: f, Line: l.Line, Target: l.Target, Reason: reason})
			}
		}
	}
	return broken, nil
}

type checker struct {
	root    string
	anchors map[string]map[string]bool // by path relative to root
}

var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// resolve says what is wrong with target, linked from the document from,
// or "" when it resolves.
func (c *checker) resolve(from, target string) string {
	if scheme.MatchString(target) || strings.HasPrefix(target, "//") {
		return ""
	}
	path, frag, _ := strings.Cut(target, "#")
	rel := from
	if path != "" {
		p, err := url.PathUnescape(path)
		if err != nil {
			return fmt.Sprintf("bad escape in the path: %v", err)
		}
		if strings.HasPrefix(p, "/") {
			return "an absolute path: GitHub resolves it against its own site, not the repository"
		}
		rel = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(from), p)))
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return "outside the repository"
		}
		if _, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(rel))); err != nil {
			return fmt.Sprintf("no file %s", rel)
		}
	}
	if frag == "" || !strings.HasSuffix(strings.ToLower(rel), ".md") {
		return ""
	}
	ids, err := c.anchorsOf(rel)
	if err != nil {
		return err.Error()
	}
	if !ids[frag] {
		return fmt.Sprintf("no heading of %s has the id %q", rel, frag)
	}
	return ""
}

func (c *checker) anchorsOf(rel string) (map[string]bool, error) {
	if ids, ok := c.anchors[rel]; ok {
		return ids, nil
	}
	data, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("reading %s for its headings: %w", rel, err)
	}
	ids := Anchors(data)
	c.anchors[rel] = ids
	return ids, nil
}

// Link is a link's target and the line it is on.
type Link struct {
	Line   int
	Target string
}

var (
	inlineLink = regexp.MustCompile(`\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	refDef     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	htmlAttr   = regexp.MustCompile(`<[a-zA-Z][^>]*?\s(?:src|href)\s*=\s*"([^"]*)"`)
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$`)
	htmlID     = regexp.MustCompile(`<a\s[^>]*?(?:id|name)\s*=\s*"([^"]*)"`)
	fenceOpen  = regexp.MustCompile("^\\s*(`{3,}|~{3,})")
)

// Links returns the link, image and HTML src/href targets of a Markdown
// document, outside code blocks and code spans.
func Links(doc []byte) []Link {
	var links []Link
	forText(doc, func(n int, line, _ string) {
		if m := refDef.FindStringSubmatch(line); m != nil {
			links = append(links, Link{n, strings.Trim(m[1], "<>")})
			return
		}
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			if t := strings.Trim(m[1], "<>"); t != "" {
				links = append(links, Link{n, t})
			}
		}
		for _, m := range htmlAttr.FindAllStringSubmatch(line, -1) {
			links = append(links, Link{n, m[1]})
		}
	})
	return links
}

// Anchors returns the ids GitHub gives the headings of a Markdown document,
// and its <a id> and <a name> anchors.
func Anchors(doc []byte) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	forText(doc, func(_ int, line, raw string) {
		for _, m := range htmlID.FindAllStringSubmatch(line, -1) {
			ids[m[1]] = true
		}
		m := heading.FindStringSubmatch(raw)
		if m == nil {
			return
		}
		id := Slug(m[2])
		if n := seen[id]; n > 0 {
			seen[id]++
			id = fmt.Sprintf("%s-%d", id, n)
		} else {
			seen[id] = 1
		}
		ids[id] = true
	})
	return ids
}

var linkText = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)

// Slug is the id GitHub gives a heading of this text (before numbering a
// repeated one): its rendered text lowercased, each character that is not a
// letter, a digit, a mark, - or _ dropped, and each space a -.
func Slug(text string) string {
	text = linkText.ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// forText calls f with each line outside fenced code blocks: its number, the
// line with its code spans blanked, and the line as it is. A code span may go
// on over the lines of a paragraph (a run of lines that are not blank, a
// fence or a heading), so spans are found in each paragraph as a whole.
func forText(doc []byte, f func(n int, line, raw string)) {
	var fence string // the open fence's run of ` or ~, or ""
	var para []string
	first := 0 // the paragraph's first line number
	flush := func() {
		if len(para) == 0 {
			return
		}
		for k, l := range strings.Split(blankCodeSpans(strings.Join(para, "\n")), "\n") {
			f(first+k, l, para[k])
		}
		para = para[:0]
	}
	for i, line := range strings.Split(string(doc), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if fence != "" {
			t := strings.TrimSpace(line)
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if m := fenceOpen.FindStringSubmatch(line); m != nil {
			flush()
			fence = m[1]
			continue
		}
		if strings.TrimSpace(line) == "" || heading.MatchString(line) {
			flush()
			if line != "" {
				f(i+1, blankCodeSpans(line), line)
			}
			continue
		}
		if len(para) == 0 {
			first = i + 1
		}
		para = append(para, line)
	}
	flush()
}

// blankCodeSpans replaces each code span of text, its backticks included,
// with spaces (line breaks stay): a run of n backticks opens one, the next
// run of exactly n closes it; a run with no match stays as it is.
func blankCodeSpans(line string) string {
	b := []byte(line)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := run(b, i)
		end := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := run(b, j)
			if m == n {
				end = j + m
				break
			}
			j += m
		}
		if end < 0 {
			i += n
			continue
		}
		for k := i; k < end; k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
		i = end
	}
	return string(b)
}

// run is the length of the run of backticks at b[i].
func run(b []byte, i int) int {
	n := 0
	for i+n < len(b) && b[i+n] == '`' {
		n++
	}
	return n
}
