package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/agent"
)

// commandFixture is a fixture whose definitions root has command files
// (defs: path → content) and whose workspace has .claude/commands files
// (disk: path → content).
func commandFixture(t *testing.T, defs, disk map[string]string) *fixture {
	t.Helper()
	f := newFixture(t, nil)
	f.defs = map[string]agent.DefinitionFile{}
	for p, c := range defs {
		f.defs[p] = agent.DefinitionFile{Path: p, Content: []byte(c), Revision: "0123456789abcdef0123456789abcdef01234567"}
	}
	for p, c := range disk {
		full := filepath.Join(f.ws, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// run prompts the session with line; it returns the command_output text.
func (f *fixture) run(t *testing.T, id, line string) (string, error) {
	t.Helper()
	var rec recorder
	_, err := f.svc.Prompt(context.Background(), person, id, line, agent.PromptOptions{OnUpdate: rec.add})
	var out []string
	for _, u := range rec.kinds("command_output") {
		out = append(out, u.Content.(*agent.ContentBlock).Text)
	}
	return strings.Join(out, "\n"), err
}

// lastRequest is the model's last request: its last message's text and the
// names of the tools it offered.
func (f *fixture) lastRequest(t *testing.T) (string, []string) {
	t.Helper()
	f.model.mu.Lock()
	defer f.model.mu.Unlock()
	if len(f.model.reqs) == 0 {
		t.Fatal("no model request")
	}
	req := f.model.reqs[len(f.model.reqs)-1]
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Name)
	}
	return req.Messages[len(req.Messages)-1].Text, names
}

func TestCommandFiles(t *testing.T) {
	f := commandFixture(t, map[string]string{
		"commands/review.md":     "---\ndescription: Review files\nargument-hint: FILE...\n---\nReview $1 carefully.\nAll of them: $ARGUMENTS\n",
		"commands/git/commit.md": "Write a commit message for the staged change.",
		"commands/help.md":       "A file cannot take a built-in command's name.",
		"commands/notes.txt":     "not markdown: no command",
		"commands/readonly.md":   "---\nallowed-tools: read_file, list_directory\n---\nLook around.",
		"commands/hostile.md":    "---\ndescription: \"Fine\\x1b[2J\\u202eevil\"\n---\nText.",
	}, map[string]string{
		".claude/commands/local.md":  "From Claude Code's directory.",
		".claude/commands/review.md": "The definitions root's /review wins over this one.",
	})
	commit := f.defs["commands/git/commit.md"]
	commit.Author = "agent:s1"
	f.defs["commands/git/commit.md"] = commit
	id := f.session(t)

	var names []string
	for _, c := range f.svc.Commands(person) {
		names = append(names, c.Name)
	}
	for _, want := range []string{"help", "review", "git:commit", "readonly", "local"} {
		if !slices.Contains(names, want) {
			t.Errorf("Commands() = %v, want %s in it", names, want)
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(names), func(s string) bool { return s != "help" && s != "review" })); n != 2 {
		t.Errorf("Commands() = %v: help and review once each", names)
	}
	if i := slices.IndexFunc(f.svc.Commands(person), func(c agent.Command) bool { return c.Name == "review" }); i < 0 ||
		f.svc.Commands(person)[i].Description != "Review files" || f.svc.Commands(person)[i].Input.Hint != "FILE..." {
		t.Errorf("/review as listed: %+v", f.svc.Commands(person))
	}

	for _, c := range f.svc.Commands(person) {
		if c.Name == "hostile" && (strings.ContainsAny(c.Description, "\x1b\u202e") || !strings.HasPrefix(c.Description, "Fine")) {
			t.Errorf("a description is listed as the file has it: %q", c.Description)
		}
	}

	out, err := f.run(t, id, "/help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"/review    Review files  (commands/review.md @ 0123456)",
		"/git:commit Write a commit message for the staged change.  (commands/git/commit.md @ 0123456 by agent:s1)",
		"/local     From Claude Code's directory.  (.claude/commands/local.md)",
		"not a command: commands/help.md @ 0123456, as /help is taken",
		"not a command: .claude/commands/review.md, as /review is taken",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/help lacks %q:\n%s", want, out)
		}
	}

	out, err = f.run(t, id, "/review a.go b.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "commands/review.md @ 0123456") {
		t.Errorf("/review said %q, want the file and its revision", out)
	}
	if got, _ := f.lastRequest(t); got != "Review a.go carefully.\nAll of them: a.go b.go" {
		t.Errorf("/review sent %q", got)
	}

	// Arguments go in once: a placeholder in them stays as it is.
	if _, err := f.run(t, id, "/review $2 $ARGUMENTS"); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.lastRequest(t); got != "Review $2 carefully.\nAll of them: $2 $ARGUMENTS" {
		t.Errorf("/review $2 $ARGUMENTS sent %q", got)
	}

	// A text without placeholders gets the arguments at its end.
	if _, err := f.run(t, id, "/git:commit fixes #12"); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.lastRequest(t); got != "Write a commit message for the staged change.\n\nARGUMENTS: fixes #12" {
		t.Errorf("/git:commit sent %q", got)
	}

	// allowed-tools narrows the command's turn, and only that turn.
	if _, err := f.run(t, id, "/readonly"); err != nil {
		t.Fatal(err)
	}
	if _, tools := f.lastRequest(t); !slices.Equal(tools, []string{"list_directory", "read_file"}) && !slices.Equal(tools, []string{"read_file", "list_directory"}) {
		t.Errorf("/readonly offered %v, want read_file and list_directory", tools)
	}
	if _, err := f.run(t, id, "and now?"); err != nil {
		t.Fatal(err)
	}
	if _, tools := f.lastRequest(t); !slices.Contains(tools, "write_file") {
		t.Errorf("the turn after /readonly offered %v", tools)
	}

	if _, err := f.run(t, id, "/local"); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.lastRequest(t); got != "From Claude Code's directory." {
		t.Errorf("/local sent %q", got)
	}
	if _, err := f.run(t, id, "/nope"); err == nil || !strings.Contains(err.Error(), "unknown command /nope") {
		t.Errorf("/nope = %v", err)
	}
}

// TestCommandFileErrors: a broken command file is listed as broken, and
// running it is an error that names the file and the line.
func TestCommandFileErrors(t *testing.T) {
	f := commandFixture(t, map[string]string{
		"commands/syntax.md":   "---\ndescription: ok\nallowed-tools: a: b\n---\nText.",
		"commands/unknown.md":  "---\ndescription: ok\nalowed-tools: read_file\n---\nText.",
		"commands/open.md":     "---\ndescription: never closed\nText.",
		"commands/empty.md":    "---\ndescription: no text\n---\n",
		"commands/bad name.md": "A name with a space is no command.",
	}, nil)
	id := f.session(t)
	for _, c := range []struct{ line, want string }{
		{"/syntax", "/syntax: commands/syntax.md:3: front matter: mapping values are not allowed in this context"},
		{"/unknown", "/unknown: commands/unknown.md:3: front matter: field alowed-tools not found"},
		{"/open", "/open: commands/open.md:1: the front matter has no closing line of ---"},
		{"/empty", "/empty: commands/empty.md:1: the command has no prompt text"},
	} {
		_, err := f.run(t, id, c.line)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %v, want %q", c.line, err, c.want)
		}
	}
	out, _ := f.run(t, id, "/help")
	if !strings.Contains(out, "broken: commands/unknown.md:3:") || strings.Contains(out, "bad name") {
		t.Errorf("/help:\n%s", out)
	}
	f.model.mu.Lock()
	defer f.model.mu.Unlock()
	if len(f.model.reqs) != 0 {
		t.Errorf("a broken command reached the model: %d requests", len(f.model.reqs))
	}
}

// TestCommandFileThroughALink: a link in .claude/commands is not followed,
// to a file out of the workspace or in it.
func TestCommandFileThroughALink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	outside := filepath.Join(t.TempDir(), "secret.md")
	os.WriteFile(outside, []byte("secret text"), 0o644)
	f := commandFixture(t, nil, map[string]string{".claude/commands/real.md": "Real."})
	if err := os.Symlink(outside, filepath.Join(f.ws, ".claude", "commands", "leak.md")); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range f.svc.Commands(person) {
		names = append(names, c.Name)
	}
	if slices.Contains(names, "leak") || !slices.Contains(names, "real") {
		t.Errorf("Commands() = %v: real, and no leak", names)
	}
}

// TestCommandDirs: agent.commandDirs names the workspace directories read,
// in order; .claude/commands is read only while it is listed.
func TestCommandDirs(t *testing.T) {
	f := commandFixture(t, nil, map[string]string{
		".claude/commands/claude.md": "From .claude.",
		"prompts/mine.md":            "From prompts.",
		"prompts/same.md":            "From prompts, first.",
		"more/same.md":               "From more, second.",
	})
	f.cfg.Agent.CommandDirs = []string{"prompts", "more"}
	var names []string
	for _, c := range f.svc.Commands(person) {
		names = append(names, c.Name)
	}
	if slices.Contains(names, "claude") || !slices.Contains(names, "mine") || !slices.Contains(names, "same") {
		t.Errorf("Commands() = %v: mine and same, not claude", names)
	}
	id := f.session(t)
	if _, err := f.run(t, id, "/same"); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.lastRequest(t); got != "From prompts, first." {
		t.Errorf("/same sent %q", got)
	}
}

// TestCommandFileProfile: a command's profile switches the session to it,
// as /model does, and says so; one not configured is an error naming the
// file, before anything is sent.
func TestCommandFileProfile(t *testing.T) {
	f := commandFixture(t, map[string]string{
		"commands/cheap.md": "---\nprofile: other\n---\nSummarise.",
		"commands/gone.md":  "---\nprofile: gone\n---\nSummarise.",
	}, nil)
	id := f.session(t)
	if _, err := f.run(t, id, "/gone"); err == nil || !strings.Contains(err.Error(), `/gone (commands/gone.md) names profile "gone"`) {
		t.Errorf("/gone = %v", err)
	}
	f.model.mu.Lock()
	n := len(f.model.reqs)
	f.model.mu.Unlock()
	if n != 0 {
		t.Errorf("/gone sent %d requests", n)
	}
	out, err := f.run(t, id, "/cheap")
	if err != nil || !strings.Contains(out, "Now using profile other") {
		t.Errorf("/cheap = %q, %v", out, err)
	}
	if p := f.svc.List(person)[0].Profile; p != "other" {
		t.Errorf("the session's profile after /cheap: %q", p)
	}
}
