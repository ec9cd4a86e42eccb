package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/internal/inert"
)

// CommandsDir is the directory of the definitions root whose markdown files
// are special commands.
const CommandsDir = "commands"

// maxCommandFile bounds a command file read from a workspace directory
// (those of the definitions root are bounded by definitions.maxFileSize).
const maxCommandFile = 256 << 10

// DefinitionFile is a definition file as the agent reads it.
type DefinitionFile struct {
	// Path is relative to the definitions root, with "/".
	Path    string
	Content []byte
	// Revision is the commit that last changed it, and Author who made
	// that commit ("" when unknown).
	Revision, Author string
}

// FileCommand is a special command a markdown file defines: its front
// matter (optional) and its prompt text.
type FileCommand struct {
	Command
	// Source is the file: "commands/review.md" of the definitions root,
	// or a path of the workspace such as ".claude/commands/review.md".
	Source string
	// Revision is the definitions commit that last changed the file, and
	// Author who made it; "" for a file outside the definitions root.
	Revision, Author string
	// Tools, when set, are the only tools the command's turn is offered
	// (name patterns as in tools.policy), within what the session may use.
	Tools []string
	// Profile is the llm profile the session switches to, as /model does.
	Profile string
	// Err is what is wrong with the file; the command fails with it.
	Err  error
	body string
}

// commandFront is the front matter of a command file. The keys are
// Claude Code's, so that its commands work as they are; model is read
// and ignored (a Nexus command names a profile).
type commandFront struct {
	Description  string   `yaml:"description"`
	AllowedTools toolList `yaml:"allowed-tools"`
	ArgumentHint string   `yaml:"argument-hint"`
	Profile      string   `yaml:"profile"`
	Model        string   `yaml:"model"`
	// DisableModelInvocation is Claude Code's; Nexus's model never runs
	// a command, so it changes nothing.
	DisableModelInvocation bool `yaml:"disable-model-invocation"`
}

// toolList is a list of tool names, written as a YAML list or, as Claude
// Code allows, as one string separated by commas.
type toolList []string

func (l *toolList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		for t := range strings.SplitSeq(n.Value, ",") {
			if t = strings.TrimSpace(t); t != "" {
				*l = append(*l, t)
			}
		}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*l = list
	return nil
}

// commandSegment is one part of a command's name: a file or directory
// name under a commands directory, without ".md".
var commandSegment = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// commandName is the name of the command file rel (relative to its
// commands directory): "review.md" is "review", "git/commit.md"
// "git:commit". ok is false for a file that is no command.
func commandName(rel string) (string, bool) {
	base, ok := strings.CutSuffix(rel, ".md")
	if !ok {
		return "", false
	}
	parts := strings.Split(base, "/")
	for _, p := range parts {
		if !commandSegment.MatchString(p) {
			return "", false
		}
	}
	return strings.Join(parts, ":"), true
}

// parseCommand reads the command file source (named name): an optional
// front matter between lines of "---", then the prompt text. An error
// names the file and its line.
func parseCommand(name, source string, data []byte) FileCommand {
	c := FileCommand{Command: Command{Name: name}, Source: source}
	fail := func(line int, format string, a ...any) FileCommand {
		c.Err = fmt.Errorf("%s:%d: %s", inert.Line(source), line, fmt.Sprintf(format, a...))
		c.Description = "(broken: see /help)"
		return c
	}
	var front commandFront
	text, line, err := splitFront(data, &front)
	if err != nil {
		return fail(line, "%s", err)
	}
	c.body = text
	if c.body == "" {
		return fail(1, "the command has no prompt text")
	}
	// The file is workspace content: what a door lists of it is inert.
	c.Description = inert.Line(firstLine(strings.TrimSpace(front.Description)))
	if c.Description == "" {
		c.Description = inert.Line(firstLine(c.body))
	}
	if front.ArgumentHint != "" {
		c.Input = &CommandInput{Hint: inert.Line(firstLine(front.ArgumentHint))}
	} else if argPattern.MatchString(c.body) {
		c.Input = &CommandInput{Hint: "arguments"}
	}
	c.Tools = front.AllowedTools
	if c.Tools != nil && len(c.Tools) == 0 {
		c.Tools = []string{} // "allowed-tools: []": none
	}
	c.Profile = front.Profile
	return c
}

// splitFront reads a definition file of the agent (a command, a
// subagent's brief): an optional front matter between lines of "---",
// decoded strictly into front, then its text, trimmed. An error comes with
// the line of the file it is on, for "FILE:LINE: …".
func splitFront(data []byte, front any) (body string, line int, err error) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	text = strings.TrimPrefix(text, "\uFEFF")
	if rest, ok := strings.CutPrefix(text, "---\n"); ok {
		head, body, found := strings.Cut(rest, "\n---\n")
		if !found {
			if h, ok := strings.CutSuffix(rest, "\n---"); ok {
				head, body, found = h, "", true
			} else if rest == "---" || strings.HasPrefix(rest, "---\n") {
				head, body, found = "", strings.TrimPrefix(rest, "---"), true
			}
		}
		if !found {
			return "", 1, errors.New("the front matter has no closing line of ---")
		}
		if err := decodeFront(head, front); err != nil {
			line, msg := yamlLine(err)
			return "", line + 1, fmt.Errorf("front matter: %s", msg)
		}
		text = body
	}
	return strings.TrimSpace(text), 0, nil
}

// decodeFront decodes a front matter strictly: a key it does not know is an
// error (a misspelt allowed-tools must not widen a command's tools).
func decodeFront(head string, f any) error {
	if strings.TrimSpace(head) == "" {
		return nil
	}
	dec := yaml.NewDecoder(strings.NewReader(head))
	dec.KnownFields(true)
	if err := dec.Decode(f); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?(?:unmarshal errors:\n\s*)?line (\d+): `)

// yamlLine is the line a YAML error names (1 when none) and its message
// without it.
func yamlLine(err error) (int, string) {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, inert.Line(strings.TrimSpace(msg[len(m[0]):]))
	}
	return 1, inert.Line(strings.TrimPrefix(msg, "yaml: "))
}

// argPattern is a placeholder of a command's text: $ARGUMENTS, all of the
// arguments, or $1, $2…, one each.
var argPattern = regexp.MustCompile(`\$(ARGUMENTS|[1-9][0-9]?)`)

// expand is the command's text with its arguments in place: $ARGUMENTS is
// them all, $N the Nth (separated by spaces; "" when there is none). A
// text with no placeholder gets them on a line of their own at the end, as
// Claude Code does. The arguments are put in once: a "$1" in them stays.
func (c *FileCommand) expand(args string) string {
	args = strings.TrimSpace(args)
	if !argPattern.MatchString(c.body) {
		if args == "" {
			return c.body
		}
		return c.body + "\n\nARGUMENTS: " + args
	}
	fields := strings.Fields(args)
	return argPattern.ReplaceAllStringFunc(c.body, func(m string) string {
		if m == "$ARGUMENTS" {
			return args
		}
		n, _ := strconv.Atoi(m[1:])
		if n <= len(fields) {
			return fields[n-1]
		}
		return ""
	})
}

// fileCommands reads the command files party may use: commands/ of the
// definitions root (as party may read it), then each of agent.commandDirs.
// A built-in command's name wins over a file's, and an earlier file's over
// a later; the losers are returned as shadowed, for /help.
func (s *Service) fileCommands(party access.Party) (cmds, shadowed []FileCommand) {
	taken := map[string]bool{}
	for _, c := range Commands() {
		taken[c.Name] = true
	}
	add := func(c FileCommand) {
		if taken[c.Name] {
			shadowed = append(shadowed, c)
			return
		}
		taken[c.Name] = true
		cmds = append(cmds, c)
	}
	if rd := s.opts.ReadDefinitions; rd != nil {
		files, err := rd(party, CommandsDir)
		if err != nil {
			s.logger.Warn("agent command files not read", "dir", CommandsDir, "error", err.Error())
		}
		slices.SortFunc(files, func(a, b DefinitionFile) int { return strings.Compare(a.Path, b.Path) })
		for _, f := range files {
			rel, ok := strings.CutPrefix(f.Path, CommandsDir+"/")
			if !ok {
				continue
			}
			if name, ok := commandName(rel); ok {
				c := parseCommand(name, f.Path, f.Content)
				c.Revision, c.Author = f.Revision, f.Author
				add(c)
			}
		}
	}
	for _, dir := range s.opts.Config.Agent.CommandDirs {
		for _, c := range s.workspaceCommands(dir) {
			add(c)
		}
	}
	return cmds, shadowed
}

// workspaceCommands reads the command files under dir of the workspace,
// never through a link out of it.
func (s *Service) workspaceCommands(dir string) []FileCommand {
	root, err := os.OpenRoot(s.opts.Layout.Workspace)
	if err != nil {
		s.logger.Warn("agent command files not read", "dir", dir, "error", err.Error())
		return nil
	}
	defer root.Close()
	dir = path.Clean(strings.ReplaceAll(dir, "\\", "/"))
	var cmds []FileCommand
	err = fs.WalkDir(root.FS(), dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return fs.SkipAll
			}
			return err
		}
		if !e.Type().IsRegular() {
			return nil // a directory, or a link: not followed
		}
		name, ok := commandName(strings.TrimPrefix(p, dir+"/"))
		if !ok {
			return nil
		}
		data, err := readCapped(root, p, maxCommandFile)
		c := parseCommand(name, p, data)
		if err != nil {
			c.Err = fmt.Errorf("%s: %w", inert.Line(p), err)
			c.Description = "(broken: see /help)"
		}
		cmds = append(cmds, c)
		return nil
	})
	if err != nil {
		s.logger.Warn("agent command files not read", "dir", dir, "error", err.Error())
	}
	return cmds
}

// readCapped reads a file of root, failing when it holds more than limit
// bytes.
func readCapped(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("the file is larger than %d KiB, the most a command may be", limit>>10)
	}
	return data, nil
}

// Commands are the special commands of a session of owner: the built-in
// ones, then those its command files define, as ACP's
// available_commands_update lists them.
func (s *Service) Commands(owner access.Party) []Command {
	cmds := Commands()
	files, _ := s.fileCommands(owner)
	for _, c := range files {
		cmds = append(cmds, c.Command)
	}
	return cmds
}

// CommandsChanged tells the doors that watch the commands (WatchCommands)
// that a command file may have been added, changed or removed: the daemon
// calls it when a file under commands/ of the definitions root, or under
// one of agent.commandDirs, changes. The doors then send their sessions'
// available_commands_update again.
func (s *Service) CommandsChanged() {
	s.watchersMu.Lock()
	fns := make([]func(), 0, len(s.watchers))
	for fn := range s.watchers {
		fns = append(fns, *fn)
	}
	s.watchersMu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// WatchCommands calls fn after each CommandsChanged, until stop is called;
// fn runs on the caller of CommandsChanged and must not block for long.
func (s *Service) WatchCommands(fn func()) (stop func()) {
	p := &fn
	s.watchersMu.Lock()
	s.watchers[p] = struct{}{}
	s.watchersMu.Unlock()
	return func() {
		s.watchersMu.Lock()
		delete(s.watchers, p)
		s.watchersMu.Unlock()
	}
}

// IsCommandPath reports whether a path of the definitions root (as
// state.DefinitionChange names it) is under commands/, where command
// files are.
func IsCommandPath(p string) bool {
	return strings.HasPrefix(p, CommandsDir+"/")
}
