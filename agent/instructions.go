package agent

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/nexuscocreate/nexus/internal/bytesize"
	"github.com/nexuscocreate/nexus/internal/inert"
	"github.com/nexuscocreate/nexus/llm"
)

// maxWorkDirs bounds the directories a session remembers working in: past
// it, a new directory adds no instruction file (the ones it has stay).
const maxWorkDirs = 256

// InstructionsOptions configure [LoadInstructions].
type InstructionsOptions struct {
	// Workspace is the workspace root, absolute: every file is read
	// through it, and no symlink leads out of it.
	Workspace string
	// Names are the instruction file names (context.instructions): in
	// each directory, the first of them the directory holds is read.
	Names []string
	// MaxSize bounds the files' text together (context.maxInstructionsSize):
	// the files nearer the root come first; the one that passes the bound
	// is cut there, and those after it are left out, each with a warning.
	MaxSize int
	// Dirs are the workspace-relative directories the agent works in
	// (slash-separated); each adds its own instruction file and those of
	// the directories above it. The workspace root is always read.
	Dirs []string
	// Skip leaves a directory out (and what is under it): the daemon's own
	// .nexus. Nil skips nothing.
	Skip func(dir string) bool
}

// Instruction is a project instruction file (AGENTS.md and the like): the
// project's instructions to any agent, workspace content that the person
// or a model's tools wrote.
type Instruction struct {
	// Path is the workspace-relative path, slash-separated.
	Path string
	// Size is the file's size on disk.
	Size int64
	// Text is what is sent: the file, or its head when the size bound cut
	// it.
	Text string
}

// Cut reports whether only the head of the file is sent.
func (i Instruction) Cut() bool { return int64(len(i.Text)) < i.Size }

// Instructions are the project instruction files of a session's next
// request, from the workspace root down (a file nearer to the directory
// worked in comes after those above it), and their problems.
type Instructions struct {
	Files    []Instruction
	Warnings []string
}

// LoadInstructions reads the instruction files of the workspace root and of
// the directories of opts.Dirs and above them, as the AGENTS.md convention
// has it: a directory's file applies to what is under it, and the nearest
// one wins where they disagree. A file that cannot be read is a warning,
// never an error: the agent goes on without it.
func LoadInstructions(opts InstructionsOptions) Instructions {
	var in Instructions
	if len(opts.Names) == 0 {
		return in
	}
	root, err := os.OpenRoot(opts.Workspace)
	if err != nil {
		in.Warnings = append(in.Warnings, fmt.Sprintf("project instructions: the workspace cannot be opened: %v", err))
		return in
	}
	defer root.Close()
	left := opts.MaxSize
	for _, dir := range instructionDirs(opts.Dirs, opts.Skip) {
		for _, name := range opts.Names {
			rel := path.Join(dir, name)
			text, size, err := readInstruction(root, rel, left)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				in.Warnings = append(in.Warnings, fmt.Sprintf("%s: not read: %v", rel, err))
				break
			}
			switch {
			case left == 0:
				in.Warnings = append(in.Warnings, fmt.Sprintf("%s (%s): left out, the instruction files before it fill context.maxInstructionsSize (%s)",
					rel, bytesize.String(size), bytesize.String(int64(opts.MaxSize))))
			case int64(len(text)) < size:
				in.Warnings = append(in.Warnings, fmt.Sprintf("%s (%s): only its first %s are sent, to stay within context.maxInstructionsSize (%s)",
					rel, bytesize.String(size), bytesize.String(int64(len(text))), bytesize.String(int64(opts.MaxSize))))
			}
			if left > 0 {
				left -= len(text)
				if int64(len(text)) < size {
					left = 0 // what is left of the bound is less than a character
				}
				in.Files = append(in.Files, Instruction{Path: rel, Size: size, Text: text})
			}
			break
		}
	}
	return in
}

// instructionDirs are the root, each of dirs and the directories between,
// each once, shallower first.
func instructionDirs(dirs []string, skip func(string) bool) []string {
	seen := map[string]bool{".": true}
	out := []string{"."}
	for _, d := range dirs {
		d = path.Clean(d)
		if d == "." || d == ".." || strings.HasPrefix(d, "../") || path.IsAbs(d) {
			continue
		}
		for p := d; p != "."; p = path.Dir(p) {
			if seen[p] {
				continue
			}
			seen[p] = true
			out = append(out, p)
		}
	}
	if skip != nil {
		out = slices.DeleteFunc(out, func(d string) bool {
			for p := d; p != "."; p = path.Dir(p) {
				if skip(p) {
					return true
				}
			}
			return false
		})
	}
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(depth(a), depth(b)), strings.Compare(a, b))
	})
	return out
}

func depth(dir string) int {
	if dir == "." {
		return 0
	}
	return strings.Count(dir, "/") + 1
}

// readInstruction reads at most max bytes of a regular file, cut at a
// character, as valid UTF-8.
func readInstruction(root *os.Root, rel string, max int) (string, int64, error) {
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !fi.Mode().IsRegular() {
		return "", 0, fmt.Errorf("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(max)))
	if err != nil {
		return "", 0, err
	}
	for n := 0; n < utf8.UTFMax-1 && int64(len(b)) < fi.Size() && len(b) > 0; n++ {
		// A character the bound cut in two is left out whole.
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size > 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), fi.Size(), nil
}

// workDir is the workspace-relative directory a core tool call of the
// model works in (the directory of its path, or the path when that is a
// directory, or execute_command's cwd), and whether it names one inside
// the workspace.
func workDir(root *os.Root, workspace, tool string, args json.RawMessage) (string, bool) {
	var a struct {
		Path string `json:"path"`
		Cwd  string `json:"cwd"`
	}
	if json.Unmarshal(args, &a) != nil {
		return "", false
	}
	p := a.Path
	switch tool {
	case "read_file", "write_file", "edit_file", "list_directory", "search_files":
	case "execute_command":
		p = a.Cwd
	default:
		return "", false
	}
	if p == "" || strings.ContainsRune(p, 0) {
		return "", false
	}
	p = filepath.FromSlash(p)
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(workspace, p)
		if err != nil {
			return "", false
		}
		p = rel
	}
	p = filepath.Clean(p)
	if !filepath.IsLocal(p) && p != "." {
		return "", false
	}
	if fi, err := root.Stat(p); err != nil || !fi.IsDir() {
		p = filepath.Dir(p)
	}
	return filepath.ToSlash(p), true
}

// instructionsText is the section of the system prompt that carries the
// project instruction files.
func instructionsText(files []Instruction) string {
	if len(files) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Project instructions\n\n" +
		"These are the project's instruction files (AGENTS.md and the like), from the workspace root down to the directories you work in. " +
		"A file applies to its directory and what is under it; where two disagree, the one nearer to the file at hand wins, " +
		"and the person's own words in this conversation win over them all.")
	for _, f := range files {
		fmt.Fprintf(&b, "\n\n## %s\n\n%s", inert.Line(f.Path), strings.TrimSpace(f.Text))
	}
	return b.String()
}

// instructions are the project instruction files of the session's next
// request: read each time, so an edit shows at once.
func (ss *Session) instructions() Instructions {
	layout := ss.svc.opts.Layout
	cfg := ss.svc.opts.Config.Context
	ss.mu.Lock()
	dirs := slices.Clone(ss.dirs)
	ss.mu.Unlock()
	nexus, err := filepath.Rel(layout.Workspace, layout.Nexus)
	if err != nil || layout.Nexus == "" {
		nexus = ".nexus"
	}
	nexus = filepath.ToSlash(nexus)
	return LoadInstructions(InstructionsOptions{Workspace: layout.Workspace, Names: cfg.Instructions, MaxSize: int(cfg.MaxInstructionsSize),
		Dirs: dirs, Skip: func(dir string) bool { return dir == nexus }})
}

// workedIn notes the directory a core tool call that succeeded worked in,
// for the instruction files of the next request.
func (ss *Session) workedIn(tool string, args json.RawMessage) {
	ws := ss.svc.opts.Layout.Workspace
	root, err := os.OpenRoot(ws)
	if err != nil {
		return
	}
	dir, ok := workDir(root, ws, tool, args)
	root.Close()
	if !ok || dir == "." {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.dirs) < maxWorkDirs && !slices.Contains(ss.dirs, dir) {
		ss.dirs = append(ss.dirs, dir)
	}
}

// contextCommand is /context: the context file and the instruction files
// the next request carries, with their paths and sizes, and their
// problems. Paths are shown inert: a file's name is workspace content.
func (ss *Session) contextCommand(say func(string, ...any)) error {
	c, err := ss.context()
	if err != nil {
		return err
	}
	system, err := ss.system()
	if err != nil {
		return err
	}
	in := ss.instructions()
	layout := ss.svc.opts.Layout
	cfg := ss.svc.opts.Config.Context
	var b strings.Builder
	file := layout.Resolve(cfg.File)
	if st := stampOf(file); st.ok {
		fmt.Fprintf(&b, "Context file: %s (%s)\n", inert.Line(cfg.File), bytesize.String(st.size))
	} else {
		fmt.Fprintf(&b, "Context file: none (%s does not exist)\n", inert.Line(cfg.File))
	}
	for _, w := range c.Warnings() {
		fmt.Fprintf(&b, "  warning: %s\n", inert.Line(w))
	}
	ss.mu.Lock()
	dirs := slices.Clone(ss.dirs)
	ss.mu.Unlock()
	where := "the workspace root"
	if len(dirs) > 0 {
		shown := make([]string, len(dirs))
		for i, d := range dirs {
			shown[i] = inert.Line(d)
		}
		where += " and the directories worked in (" + strings.Join(shown, ", ") + ")"
	}
	switch {
	case len(cfg.Instructions) == 0:
		b.WriteString("Project instructions: none read (context.instructions is empty)\n")
	case len(in.Files) == 0:
		fmt.Fprintf(&b, "Project instructions: none found (%s, in %s)\n", strings.Join(cfg.Instructions, ", "), where)
	default:
		fmt.Fprintf(&b, "Project instructions, from %s, nearest last (%s of at most %s):\n", where,
			bytesize.String(int64(instructionsSize(in.Files))), bytesize.String(int64(cfg.MaxInstructionsSize)))
		for _, f := range in.Files {
			cut := ""
			if f.Cut() {
				cut = fmt.Sprintf(", cut to %s", bytesize.String(int64(len(f.Text))))
			}
			fmt.Fprintf(&b, "  %-40s %s%s\n", inert.Line(f.Path), bytesize.String(f.Size), cut)
		}
	}
	for _, w := range in.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", inert.Line(w))
	}
	fmt.Fprintf(&b, "System prompt: ~%d tokens; it is never compacted or pruned.\n", Tokens(Message{Role: RoleSystem, Text: system}))
	b.WriteString(ss.autoCompactLine())
	say("%s", b.String())
	return nil
}

func instructionsSize(files []Instruction) int {
	n := 0
	for _, f := range files {
		n += len(f.Text)
	}
	return n
}

// callOf is the call of the model a tool result answers: in the assistant
// message just before the results, as a session's file holds them.
func (ss *Session) callOf(id string) (llm.ToolCall, bool) {
	msgs := ss.hist.Messages()
	i := len(msgs) - 1
	for i >= 0 && msgs[i].Role == RoleToolResult {
		i--
	}
	if i >= 0 && msgs[i].Role == RoleAssistant {
		for _, c := range msgs[i].ToolCalls {
			if c.ID == id {
				return c, true
			}
		}
	}
	return llm.ToolCall{}, false
}
