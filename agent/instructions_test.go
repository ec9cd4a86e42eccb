package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/workspace"
)

func write(t *testing.T, ws, rel, text string) {
	t.Helper()
	p := filepath.Join(ws, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func paths(in agent.Instructions) string {
	var p []string
	for _, f := range in.Files {
		p = append(p, f.Path)
	}
	return strings.Join(p, " ")
}

// TestLoadInstructions: the root always, each directory worked in and
// those between, shallower first; the first name of the list a directory
// holds; .nexus and paths out of the workspace never.
func TestLoadInstructions(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "AGENTS.md", "root rules")
	write(t, ws, "CLAUDE.md", "not read: the root has an AGENTS.md")
	write(t, ws, "pkg/CLAUDE.md", "pkg rules")
	write(t, ws, "pkg/api/GEMINI.md", "api rules")
	write(t, ws, "pkg/api/deep/x.go", "")
	write(t, ws, "other/AGENTS.md", "other rules")
	write(t, ws, ".nexus/AGENTS.md", "daemon state")
	names := []string{"AGENTS.md", "CLAUDE.md", "GEMINI.md"}
	load := func(dirs ...string) agent.Instructions {
		return agent.LoadInstructions(agent.InstructionsOptions{Workspace: ws, Names: names, MaxSize: 1 << 10, Dirs: dirs,
			Skip: func(d string) bool { return d == ".nexus" }})
	}
	if got := paths(load()); got != "AGENTS.md" {
		t.Errorf("no directory worked in: %q", got)
	}
	if got := paths(load("pkg/api/deep", "other", "pkg")); got != "AGENTS.md other/AGENTS.md pkg/CLAUDE.md pkg/api/GEMINI.md" {
		t.Errorf("worked in pkg/api/deep and other: %q", got)
	}
	if got := paths(load("../x", "/etc", ".nexus", ".nexus/sub", "..")); got != "AGENTS.md" {
		t.Errorf("directories out of reach: %q", got)
	}
	in := load("pkg")
	if in.Files[0].Text != "root rules" || in.Files[1].Text != "pkg rules" || len(in.Warnings) != 0 {
		t.Errorf("texts %+v, warnings %q", in.Files, in.Warnings)
	}
	if got := agent.LoadInstructions(agent.InstructionsOptions{Workspace: ws, MaxSize: 1 << 10}); len(got.Files) != 0 {
		t.Errorf("no names: %+v", got.Files)
	}
}

// TestInstructionsBound: the files together stay within MaxSize: the one
// that passes it is cut at a character, those after it are left out, and
// each is a warning.
func TestInstructionsBound(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "AGENTS.md", strings.Repeat("é", 6)) // 12 bytes
	write(t, ws, "a/AGENTS.md", "more")
	in := agent.LoadInstructions(agent.InstructionsOptions{Workspace: ws, Names: []string{"AGENTS.md"}, MaxSize: 7, Dirs: []string{"a"}})
	if len(in.Files) != 1 || in.Files[0].Text != "ééé" || !in.Files[0].Cut() || in.Files[0].Size != 12 {
		t.Fatalf("files %+v", in.Files)
	}
	if len(in.Warnings) != 2 || !strings.Contains(in.Warnings[0], "only its first 6 bytes") || !strings.Contains(in.Warnings[1], "a/AGENTS.md (4 bytes): left out") {
		t.Errorf("warnings %q", in.Warnings)
	}
}

// TestInstructionsNotThroughSymlinks: an AGENTS.md that is a symlink out
// of the workspace is not read; a directory named AGENTS.md is a warning.
func TestInstructionsNotThroughSymlinks(t *testing.T) {
	ws, out := t.TempDir(), t.TempDir()
	write(t, out, "secret", "outside")
	if err := os.Symlink(filepath.Join(out, "secret"), filepath.Join(ws, "AGENTS.md")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	write(t, ws, "d/AGENTS.md/x", "")
	in := agent.LoadInstructions(agent.InstructionsOptions{Workspace: ws, Names: []string{"AGENTS.md"}, MaxSize: 1 << 10, Dirs: []string{"d"}})
	if len(in.Files) != 0 || len(in.Warnings) != 2 {
		t.Errorf("files %+v, warnings %q", in.Files, in.Warnings)
	}
}

// TestAgentsMDInTheSystemPrompt: the root's AGENTS.md is in every request's
// system prompt; a directory's joins it once a core tool worked there; an
// edit shows at the next request; /compact never summarises it and the
// request after it still carries it; /context names each file with its
// size.
func TestAgentsMDInTheSystemPrompt(t *testing.T) {
	f := newFixture(t, nil)
	write(t, f.ws, "AGENTS.md", "Always answer in French.")
	write(t, f.ws, "sub/CLAUDE.md", "Tabs, not spaces.")
	write(t, f.ws, "sub/x.txt", "x")
	id := f.session(t)
	f.model.turns = append(f.model.turns, calls(llm.ToolCall{ID: "1", Name: "read_file", Arguments: []byte(`{"path":"sub/x.txt"}`)}), text("lu"))
	if _, err := f.svc.Prompt(context.Background(), person, id, "read sub/x.txt", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	reqs := f.model.reqs
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if s := reqs[0].System; !strings.Contains(s, "## AGENTS.md\n\nAlways answer in French.") || strings.Contains(s, "Tabs") {
		t.Errorf("first request's system prompt:\n%s", s)
	}
	if s := reqs[1].System; !strings.Contains(s, "Always answer in French.") || !strings.Contains(s, "## sub/CLAUDE.md\n\nTabs, not spaces.") {
		t.Errorf("after a read in sub/:\n%s", s)
	}
	write(t, f.ws, "AGENTS.md", "Always answer in German.")
	f.model.turns = append(f.model.turns, text("a"), text("b"), text("Summary: we read sub/x.txt."))
	for _, p := range []string{"one", "two", "/compact", "three"} {
		if _, err := f.svc.Prompt(context.Background(), person, id, p, agent.PromptOptions{}); err != nil {
			t.Fatal(p, err)
		}
	}
	for i, r := range f.model.reqs[2:] {
		if !strings.Contains(r.System, "Always answer in German.") || !strings.Contains(r.System, "Tabs, not spaces.") {
			t.Errorf("request %d lost the instructions:\n%s", i+3, r.System)
		}
		for _, m := range r.Messages {
			if strings.Contains(m.Text, "German") || strings.Contains(m.Text, "French") {
				t.Errorf("request %d carries the instructions in its history: %q", i+3, m.Text)
			}
		}
	}
	var rec recorder
	if _, err := f.svc.Prompt(context.Background(), person, id, "/context", agent.PromptOptions{OnUpdate: rec.add}); err != nil {
		t.Fatal(err)
	}
	out := rec.kinds("command_output")[0].Content.(*agent.ContentBlock).Text
	for _, want := range []string{"Context file: none (FRAMEWORK_CONTEXT.md does not exist)", "directories worked in (sub)",
		"AGENTS.md                                24 bytes", "sub/CLAUDE.md                            17 bytes", "System prompt: ~"} {
		if !strings.Contains(out, want) {
			t.Errorf("/context lacks %q:\n%s", want, out)
		}
	}
}

// TestNoInstructionFiles: context.instructions: [] reads none, and
// /context says so.
func TestNoInstructionFiles(t *testing.T) {
	f := newFixture(t, func(c *workspace.Config) { c.Context.Instructions = nil })
	write(t, f.ws, "AGENTS.md", "Always answer in French.")
	id := f.session(t)
	if _, err := f.svc.Prompt(context.Background(), person, id, "hi", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	if s := f.model.reqs[0].System; strings.Contains(s, "French") {
		t.Errorf("system prompt:\n%s", s)
	}
	var rec recorder
	if _, err := f.svc.Prompt(context.Background(), person, id, "/context", agent.PromptOptions{OnUpdate: rec.add}); err != nil {
		t.Fatal(err)
	}
	if out := rec.kinds("command_output")[0].Content.(*agent.ContentBlock).Text; !strings.Contains(out, "context.instructions is empty") {
		t.Errorf("/context:\n%s", out)
	}
}

// TestWorkedInDirectoriesSurviveARestart: a session resumed after a
// restart still carries the instruction files of the directories its
// calls worked in (not those of a call that failed); /clear forgets them.
func TestWorkedInDirectoriesSurviveARestart(t *testing.T) {
	f := newFixture(t, nil)
	write(t, f.ws, "sub/AGENTS.md", "Sub rules.")
	write(t, f.ws, "sub/x.txt", "x")
	write(t, f.ws, "gone/AGENTS.md", "Gone rules.")
	id := f.session(t)
	f.model.turns = append(f.model.turns, calls(
		llm.ToolCall{ID: "1", Name: "read_file", Arguments: []byte(`{"path":"sub/x.txt"}`)},
		llm.ToolCall{ID: "2", Name: "read_file", Arguments: []byte(`{"path":"gone/nope.txt"}`)}), text("ok"))
	if _, err := f.svc.Prompt(context.Background(), person, id, "read", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	system := func() string {
		t.Helper()
		f.model.reqs = nil
		if _, err := f.svc.Prompt(context.Background(), person, id, "again", agent.PromptOptions{}); err != nil {
			t.Fatal(err)
		}
		return f.model.reqs[0].System
	}
	if s := system(); !strings.Contains(s, "Sub rules.") || strings.Contains(s, "Gone rules.") {
		t.Errorf("before the restart:\n%s", s)
	}
	f.svc.Close()
	f.open(t)
	if s := system(); !strings.Contains(s, "Sub rules.") || strings.Contains(s, "Gone rules.") {
		t.Errorf("after the restart:\n%s", s)
	}
	if _, err := f.svc.Prompt(context.Background(), person, id, "/clear", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	if s := system(); strings.Contains(s, "Sub rules.") {
		t.Errorf("after /clear:\n%s", s)
	}
	f.svc.Close()
	f.open(t)
	if s := system(); strings.Contains(s, "Sub rules.") {
		t.Errorf("after /clear and a restart:\n%s", s)
	}
}
