package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
)

const contextFile = `# initial_prompt_template: "You are the agent of {{project}}.\nBe brief."

## Project Overview
Nexus is a daemon.
overview: @docs/overview.md

## Documents
- Style Guide: @docs/style.md
- Plan: @def:planner/plan.md
- Missing: @docs/none.md
- Secret: @../outside.txt
- Passwd: @docs/passwd
See also: @ this is prose

## Initial Prompt
` + "```" + `
You are Nexus's agent.
## not a heading inside the fence
` + "```" + `
`

func TestContext(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	write := func(rel, content string) {
		p := filepath.Join(ws, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("FRAMEWORK_CONTEXT.md", contextFile)
	write("docs/overview.md", "the overview\n")
	write("docs/style.md", "the style\n")
	os.WriteFile(filepath.Join(base, "outside.txt"), []byte("outside\n"), 0o644)
	if err := os.Symlink("/etc/passwd", filepath.Join(ws, "docs", "passwd")); err != nil {
		t.Fatal(err)
	}
	defs, err := state.OpenDefinitions(state.DefinitionsOptions{Dir: filepath.Join(ws, ".nexus", "definitions"), HistoryDir: filepath.Join(ws, ".nexus", "history.git")})
	if err != nil {
		t.Fatal(err)
	}
	defer defs.Close()
	if _, err := defs.Set("planner/plan.md", []byte("step 1\n"), state.WriteOptions{Author: "cli"}); err != nil {
		t.Fatal(err)
	}
	// The session acts for app coder, which may not read planner's files.
	view := defs.For(access.ForApp(&access.App{ID: "coder"}))
	c, err := LoadContext(ContextOptions{File: filepath.Join(ws, "FRAMEWORK_CONTEXT.md"), Workspace: ws,
		ReadDefinition: func(p string) ([]byte, error) {
			f, err := view.Get(p, "")
			return f.Content, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	// The fenced block of "## Initial Prompt" comes after the template line,
	// so it is the prompt.
	if got := c.InitialPrompt(); got != "You are Nexus's agent.\n## not a heading inside the fence" {
		t.Errorf("initial prompt %q", got)
	}
	if want := []string{"project_overview", "documents", "initial_prompt"}; !slices.Equal(c.Sections(), want) {
		t.Errorf("sections %q, want %q", c.Sections(), want)
	}
	if s, ok := c.Section("project_overview"); !ok || s != "Nexus is a daemon.\noverview: @docs/overview.md" {
		t.Errorf("section project_overview %q %v", s, ok)
	}
	for id, want := range map[string]string{"overview": "the overview\n", "style_guide": "the style\n"} {
		if got, err := c.Document(id); err != nil || got != want {
			t.Errorf("Document(%q) = %q, %v", id, got, err)
		}
	}
	if _, err := c.Document("plan"); !errors.Is(err, access.ErrDenied) {
		t.Errorf("a definition the session's party may not read: %v", err)
	}
	if _, err := c.Document("passwd"); err == nil {
		t.Error("a symlink out of the workspace was followed")
	}
	if _, err := c.Document("secret"); !errors.Is(err, ErrNoDocument) {
		t.Errorf("a document outside the workspace: %v", err)
	}
	warnings := strings.Join(c.Warnings(), "\n")
	for _, want := range []string{
		`FRAMEWORK_CONTEXT.md:10: document "missing": docs/none.md`,
		`FRAMEWORK_CONTEXT.md:11: document "secret": ../outside.txt is outside the workspace`,
		`FRAMEWORK_CONTEXT.md:13: not a document reference`,
	} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q:\n%s", want, warnings)
		}
	}
}

func TestContextTemplateAndMissingFile(t *testing.T) {
	ws := t.TempDir()
	c, err := LoadContext(ContextOptions{File: filepath.Join(ws, "FRAMEWORK_CONTEXT.md"), Workspace: ws})
	if err != nil || c.InitialPrompt() != "" || len(c.Sections()) != 0 {
		t.Fatalf("missing file: %v %+v", err, c)
	}
	os.WriteFile(filepath.Join(ws, "FRAMEWORK_CONTEXT.md"), []byte("initial_prompt_template: \"Hi\\tthere\"\n- Plan: @def:p.md\n"), 0o644)
	c, err = LoadContext(ContextOptions{File: filepath.Join(ws, "FRAMEWORK_CONTEXT.md"), Workspace: ws})
	if err != nil || c.InitialPrompt() != "Hi\tthere" {
		t.Fatalf("template: %v %q", err, c.InitialPrompt())
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, ":2: document \"plan\": definition references (@def:) are not available") {
		t.Errorf("warnings: %s", w)
	}
}

// TestInstructionsTextHeadings: a file's path heads its text inert, so a
// directory's name cannot start a section of the system prompt of its own.
func TestInstructionsTextHeadings(t *testing.T) {
	got := instructionsText([]Instruction{{Path: "a\n## Nexus/AGENTS.md", Text: "  rules \n"}})
	if !strings.Contains(got, "\n\n## a\\n## Nexus/AGENTS.md\n\nrules") || strings.Count(got, "\n## ") != 1 {
		t.Errorf("instructionsText = %q", got)
	}
	if instructionsText(nil) != "" {
		t.Errorf("no files, some text")
	}
}
