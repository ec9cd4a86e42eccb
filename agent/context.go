package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ContextOptions configure [LoadContext].
type ContextOptions struct {
	// File is the context file (context.file, FRAMEWORK_CONTEXT.md by
	// default), absolute.
	File string
	// Workspace is the workspace root, absolute: documents must lie in it.
	Workspace string
	// ReadDefinition reads a definition file for an "@def:path" reference
	// (the definitions store as the session's party sees it); nil makes
	// such references unavailable.
	ReadDefinition func(path string) ([]byte, error)
}

// Context is the dynamic context of the agent (the DCM): the sections, the
// documents and the initial prompt of the context file, in the syntax of
// the Framework Core API:
//
//	# initial_prompt_template: "You are ..."      (or without "# ")
//	## Project Overview                           a section: id project_overview
//	doc_id: @docs/overview.md                     a document, relative to the context file
//	- Style Guide: @docs/style.md                 a document: id style_guide
//	- Plan: @def:planner/plan.md                  a definition file, with its history
//	## Initial Prompt                             the prompt, in the section's fenced block
//	```
//	You are ...
//	```
//
// A document outside the workspace, or missing, is a warning that names the
// line; so is a line that looks like a reference and is not one. Documents
// are read when asked for, so they are always current; the file itself is
// read again by LoadContext when it changes.
type Context struct {
	opts     ContextOptions
	prompt   string
	sections map[string]string
	order    []string
	docs     map[string]docRef
	warnings []string
}

type docRef struct {
	// rel is the workspace-relative path, or the definition path for def.
	rel  string
	def  bool
	line int
}

// ErrNoDocument is the error of [Context.Document] for an id the context
// file does not define.
var ErrNoDocument = errors.New("no such document in the context file")

// LoadContext reads the context file. A missing file is an empty context.
func LoadContext(opts ContextOptions) (*Context, error) {
	c := &Context{opts: opts, sections: map[string]string{}, docs: map[string]docRef{}}
	data, err := os.ReadFile(opts.File)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("context file: %w", err)
	}
	c.parse(string(data))
	return c, nil
}

// sectionID is a heading as an id: lower case, spaces as underscores.
func sectionID(heading string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(heading)), " ", "_")
}

func (c *Context) parse(text string) {
	name := filepath.Base(c.opts.File)
	warn := func(line int, format string, args ...any) {
		c.warnings = append(c.warnings, fmt.Sprintf("%s:%d: %s", name, line, fmt.Sprintf(format, args...)))
	}
	var (
		section   string
		body      strings.Builder
		fence     bool
		fenceText strings.Builder
	)
	flush := func() {
		if section != "" {
			c.sections[section] = strings.TrimSpace(body.String())
		}
		body.Reset()
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if section == "initial_prompt" {
				if fence {
					c.prompt = strings.TrimSuffix(fenceText.String(), "\n")
				}
				fenceText.Reset()
			}
			fence = !fence
			body.WriteString(line + "\n")
			continue
		}
		if fence {
			if section == "initial_prompt" {
				fenceText.WriteString(line + "\n")
			}
			body.WriteString(line + "\n")
			continue
		}
		if h, ok := strings.CutPrefix(trimmed, "## "); ok {
			flush()
			section = sectionID(h)
			if _, dup := c.sections[section]; dup {
				warn(n, "section %q again: the later one is kept", section)
			}
			c.order = append(c.order, section)
			continue
		}
		if v, ok := cutKey(trimmed, "initial_prompt_template:"); ok {
			p, err := unquote(v)
			if err != nil {
				warn(n, "initial_prompt_template: %v", err)
			} else {
				c.prompt = p
			}
			continue
		}
		body.WriteString(line + "\n")
		if id, target, ok := docLine(trimmed); ok {
			c.addDoc(n, id, target, warn)
		} else if strings.Contains(trimmed, ": @") {
			warn(n, "not a document reference (write \"doc_id: @path\" or \"- Name: @path\"): %q", trimmed)
		}
	}
	flush()
	if fence {
		warn(strings.Count(text, "\n")+1, "a fenced block is not closed")
	}
}

// cutKey matches "key: value" and "# key: value".
func cutKey(line, key string) (string, bool) {
	line = strings.TrimPrefix(line, "# ")
	v, ok := strings.CutPrefix(line, key)
	return strings.TrimSpace(v), ok
}

// unquote reads a double-quoted string (with Go escapes), or takes the
// value as it is.
func unquote(v string) (string, error) {
	if strings.HasPrefix(v, `"`) {
		return strconv.Unquote(v)
	}
	return v, nil
}

// docLine matches "id: @path" and "- Name: @path".
func docLine(line string) (id, target string, ok bool) {
	line, bullet := strings.CutPrefix(line, "- ")
	k, v, found := strings.Cut(line, ":")
	v = strings.TrimSpace(v)
	if !found || !strings.HasPrefix(v, "@") || strings.ContainsAny(strings.TrimSpace(k), "#`") {
		return "", "", false
	}
	id = strings.TrimSpace(k)
	if bullet {
		id = sectionID(id)
	}
	if id == "" || strings.ContainsAny(id, " \t") {
		return "", "", false
	}
	return id, v[1:], true
}

func (c *Context) addDoc(n int, id, target string, warn func(int, string, ...any)) {
	if def, ok := strings.CutPrefix(target, "def:"); ok {
		if c.opts.ReadDefinition == nil {
			warn(n, "document %q: definition references (@def:) are not available here", id)
			return
		}
		c.docs[id] = docRef{rel: def, def: true, line: n}
		return
	}
	abs := filepath.Join(filepath.Dir(c.opts.File), filepath.FromSlash(target))
	rel, err := filepath.Rel(c.opts.Workspace, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(target) {
		warn(n, "document %q: %s is outside the workspace", id, target)
		return
	}
	if _, err := os.Stat(abs); err != nil {
		warn(n, "document %q: %s: %v", id, target, errors.Unwrap(err))
	}
	c.docs[id] = docRef{rel: filepath.ToSlash(rel), line: n}
}

// InitialPrompt is the initial prompt template ("" when none).
func (c *Context) InitialPrompt() string { return c.prompt }

// Section is the text of a section, under its id, without its heading.
func (c *Context) Section(id string) (string, bool) {
	s, ok := c.sections[id]
	return s, ok
}

// Sections are the section ids in the order of the file.
func (c *Context) Sections() []string { return c.order }

// Warnings are the file's problems, each naming its line.
func (c *Context) Warnings() []string { return c.warnings }

// Document reads a document now: a workspace file through the workspace
// root (no symlink leads out of it), or a definition file.
func (c *Context) Document(id string) (string, error) {
	d, ok := c.docs[id]
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrNoDocument, id)
	}
	var data []byte
	var err error
	if d.def {
		data, err = c.opts.ReadDefinition(d.rel)
	} else {
		var root *os.Root
		if root, err = os.OpenRoot(c.opts.Workspace); err == nil {
			data, err = root.ReadFile(filepath.FromSlash(d.rel))
			root.Close()
		}
	}
	if err != nil {
		return "", fmt.Errorf("document %q (%s:%d): %w", id, filepath.Base(c.opts.File), d.line, err)
	}
	return string(data), nil
}
