package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/nexuscocreate/nexus/internal/bytesize"
	"github.com/nexuscocreate/nexus/tools"
)

// maxMatchText bounds the text of one match, in bytes.
const maxMatchText = 500

func (t *Tools) searchFilesTool() tools.Tool {
	return tools.Tool{
		Definition: tools.Definition{
			Name:  "search_files",
			Title: "Search files",
			Description: fmt.Sprintf("Search the files of the workspace by content, by name, or both. pattern is a Go "+
				"regular expression (RE2 syntax; use (?i) for case-insensitive) matched against each line of each "+
				"text file; the result lists the matching lines with their path and 1-based line number. glob "+
				"selects files by name: without a slash it matches the base name (\"*.go\"), with one it matches "+
				"the path relative to the searched directory, where ** stands for any number of directories "+
				"(\"src/**/*_test.go\"). With a glob and no pattern, the result lists the matching files. path is "+
				"the directory (or file) to search, relative to the workspace root; default the whole workspace. "+
				".git, .nexus and node_modules directories, symlinks, binary files and files over %s are skipped. "+
				"At most %d results are returned; then truncated is true.", bytesize.String(maxSearchFileSize), t.cfg.SearchLimit),
			InputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"path": {"type": "string", "description": "Directory or file to search, relative to the workspace root (default: the root)."},
		"pattern": {"type": "string", "minLength": 1, "description": "Regular expression (RE2) matched against each line."},
		"glob": {"type": "string", "minLength": 1, "description": "File name glob, e.g. \"*.go\" or \"cmd/**/*.go\"."}
	},
	"anyOf": [{"required": ["pattern"]}, {"required": ["glob"]}],
	"additionalProperties": false
}`),
			OutputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"matches": {
			"type": "array",
			"items": {
				"type": "object",
				"properties": {
					"path": {"type": "string", "description": "Path relative to the workspace root."},
					"line": {"type": "integer", "minimum": 1},
					"text": {"type": "string", "description": "The matching line, cut when very long."}
				},
				"required": ["path", "line", "text"],
				"additionalProperties": false
			}
		},
		"files": {"type": "array", "items": {"type": "string"}, "description": "Matching files, when only a glob was given."},
		"truncated": {"type": "boolean"}
	},
	"required": ["matches", "truncated"],
	"additionalProperties": false
}`),
			Kind:        tools.KindSearch,
			Risk:        tools.RiskLow,
			Annotations: readOnly(),
		},
		Handler: t.searchFiles,
	}
}

type searchArgs struct {
	Path    string `json:"path"`
	Pattern string `json:"pattern"`
	Glob    string `json:"glob"`
}

type match struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

type searchResult struct {
	Matches   []match  `json:"matches"`
	Files     []string `json:"files,omitzero"`
	Truncated bool     `json:"truncated"`
}

// searcher holds one search_files call.
type searcher struct {
	t     *Tools
	re    *regexp.Regexp // nil: list files by glob
	glob  string
	base  string // the searched path as the caller gave it, cleaned
	limit int
	res   searchResult
}

func (t *Tools) searchFiles(ctx context.Context, inv *tools.Invocation, raw json.RawMessage) (json.RawMessage, error) {
	var a searchArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if a.Pattern == "" && a.Glob == "" {
		return nil, invalidf("give a pattern, a glob, or both")
	}
	s := &searcher{t: t, glob: a.Glob, limit: t.cfg.SearchLimit, res: searchResult{Matches: []match{}}}
	if a.Pattern != "" {
		re, err := regexp.Compile(a.Pattern)
		if err != nil {
			return nil, invalidf("pattern %q is not a valid regular expression: %v", a.Pattern, err)
		}
		s.re = re
	} else {
		s.res.Files = []string{}
	}
	if err := checkGlob(a.Glob); err != nil {
		return nil, err
	}
	p, err := cleanPath(a.Path, true)
	if err != nil {
		return nil, err
	}
	canon, err := t.canonical(p)
	if err != nil {
		return nil, err
	}
	party := inv.Acting()
	if err := t.allowDir(party, p, canon); err != nil {
		return nil, err
	}
	s.base = p
	name := canon
	if name == "" {
		name = "."
	}
	fi, err := t.root.Lstat(name)
	if err != nil {
		return nil, fsError("search", p, err)
	}
	if fi.Mode().IsRegular() {
		if err := t.allow(party, p, canon, false); err != nil {
			return nil, err
		}
		// One file: the glob applies to its name.
		s.base = path.Dir(p)
		err = s.visit(ctx, walkEntry{name: path.Base(p), canon: canon, display: p, info: fi})
	} else {
		d, err2 := t.openDir(p, canon)
		if err2 != nil {
			return nil, err2
		}
		descend := func(e walkEntry) bool {
			return !strings.EqualFold(e.name, ".git") && !strings.EqualFold(e.name, privateDir) && e.name != "node_modules"
		}
		err = t.walk(ctx, party, d, canon, p, descend, func(e walkEntry) error { return s.visit(ctx, e) })
		d.Close()
	}
	if err != nil && err != errStop {
		return nil, err
	}
	return marshal(s.res)
}

// visit looks at one entry of the walk.
func (s *searcher) visit(ctx context.Context, e walkEntry) error {
	if !e.info.Mode().IsRegular() {
		return nil
	}
	if s.glob != "" && !matchGlob(s.glob, s.rel(e.display)) {
		return nil
	}
	if s.re == nil {
		if len(s.res.Files) == s.limit {
			s.res.Truncated = true
			return errStop
		}
		s.res.Files = append(s.res.Files, e.display)
		return nil
	}
	if e.info.Size() > maxSearchFileSize {
		return nil
	}
	return s.grep(ctx, e)
}

// rel is a path relative to the searched directory.
func (s *searcher) rel(display string) string {
	if s.base == "" || s.base == "." {
		return display
	}
	return strings.TrimPrefix(display, s.base+"/")
}

// grep adds the matching lines of one file.
func (s *searcher) grep(ctx context.Context, e walkEntry) error {
	f, _, err := s.t.openRegular(e.display, e.canon)
	if err != nil {
		return nil // changed since it was listed
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSearchFileSize+1))
	f.Close()
	if err != nil || len(data) > maxSearchFileSize {
		return nil
	}
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		return nil
	}
	for n := 1; len(data) > 0; n++ {
		if n&1023 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if !s.re.Match(line) {
			continue
		}
		if len(s.res.Matches) == s.limit {
			s.res.Truncated = true
			return errStop
		}
		s.res.Matches = append(s.res.Matches, match{Path: e.display, Line: n, Text: matchText(line)})
	}
	return nil
}

// matchText is a matching line as returned: without its line ending, and
// cut at a character boundary when very long.
func matchText(line []byte) string {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) <= maxMatchText {
		return string(line)
	}
	cut := maxMatchText
	for cut > 0 && !utf8.RuneStart(line[cut]) {
		cut--
	}
	return string(line[:cut]) + "…"
}

// checkGlob refuses a malformed glob.
func checkGlob(glob string) error {
	if glob == "" {
		return nil
	}
	if strings.HasPrefix(glob, "/") {
		return invalidf("glob %q is absolute; globs match paths relative to the searched directory", glob)
	}
	for seg := range strings.SplitSeq(glob, "/") {
		if _, err := path.Match(seg, ""); err != nil {
			return invalidf("glob %q is malformed: %v", glob, err)
		}
	}
	return nil
}

// matchGlob matches a glob against a slash-separated relative path: a glob
// without a slash against its base name, one with slashes segment by
// segment, where a "**" segment matches any number of segments.
func matchGlob(glob, rel string) bool {
	if !strings.Contains(glob, "/") {
		ok, _ := path.Match(glob, path.Base(rel))
		return ok
	}
	return matchSegments(strings.Split(glob, "/"), strings.Split(rel, "/"))
}

func matchSegments(g, s []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			for len(g) > 0 && g[0] == "**" {
				g = g[1:]
			}
			if len(g) == 0 {
				return true
			}
			for i := range len(s) + 1 {
				if matchSegments(g, s[i:]) {
					return true
				}
			}
			return false
		}
		if len(s) == 0 {
			return false
		}
		if ok, _ := path.Match(g[0], s[0]); !ok {
			return false
		}
		g, s = g[1:], s[1:]
	}
	return len(s) == 0
}
