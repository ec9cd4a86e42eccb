// Package core holds the core tools of Nexus — files, search, time — confined
// to the workspace. Start with [Tools].
//
// Every file access goes through an [os.Root] opened on the workspace, so no
// path, symlink or race reaches outside it. On top of that, each path is
// checked up front (relative, no "..", no NUL, not the daemon's private
// .nexus/ state), its symlinks are resolved inside the workspace to a
// canonical path that is checked again, and every file or directory that is
// opened is compared, through /proc/self/fd, with the canonical path that was
// checked: a symlink swapped in during a call can neither escape the
// workspace (os.Root) nor lead into .nexus/ (the comparison).
//
// Writes under the definitions root are not written to disk here: they go
// through [state.Definitions.Set], so they land in the history with the
// calling app as author.
package core

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
)

// Defaults of [Config].
const (
	DefaultReadLimit   = 1 << 20
	DefaultSearchLimit = 500
)

// Limits that are not configurable.
const (
	// maxListEntries bounds the entries of list_directory.
	maxListEntries = 10000
	// maxSearchFileSize: search_files skips larger files.
	maxSearchFileSize = 10 << 20
	// maxEditFileSize: edit_file refuses larger files.
	maxEditFileSize = 10 << 20
	// binarySniff is how much of a file's head is looked at for a NUL byte.
	binarySniff = 8000
)

// Config configures [New]. Zero values get defaults.
type Config struct {
	// Workspace is the absolute workspace root.
	Workspace string
	// Definitions is the definitions store; it may be nil when no tool call
	// writes under DefinitionsDir (such writes then fail).
	Definitions *state.Definitions
	// DefinitionsDir is the absolute definitions root, inside or outside the
	// workspace. Writes under it go through Definitions.
	DefinitionsDir string
	// ReadLimit is the most bytes read_file returns; default 1 MiB.
	ReadLimit int64
	// SearchLimit is the most matches search_files returns; default 500.
	SearchLimit int
	// Now is the clock of get_current_time; default time.Now.
	Now func() time.Time
	// ExecuteCommand, when set, is the execute_command tool built by the
	// process runner (tools/command); [Tools.List] appends it so that the
	// core tools are listed in one place. The runner confines its working
	// directory with [Tools.Dir].
	ExecuteCommand *tools.Tool
}

// Tools is the set of core tools of one workspace, sharing one open root of
// the workspace. Close it when the daemon stops.
type Tools struct {
	cfg  Config
	root *os.Root
	// rootReal is the path of the workspace directory as the kernel names
	// it (symlinks resolved); opened files are compared against it.
	rootReal string
	// defInside says whether the definitions root lies in the workspace;
	// defRel is then its canonical workspace-relative path ("" is the
	// workspace root itself).
	defInside bool
	defRel    string
	// zone is the name of the local time zone for get_current_time.
	zone string
	// listLimit is maxListEntries, smaller in tests.
	listLimit int
}

// New opens the workspace root and builds the core tools.
func New(cfg Config) (*Tools, error) {
	if cfg.ReadLimit <= 0 {
		cfg.ReadLimit = DefaultReadLimit
	}
	if cfg.SearchLimit <= 0 {
		cfg.SearchLimit = DefaultSearchLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if !filepath.IsAbs(cfg.Workspace) {
		return nil, fmt.Errorf("core tools: workspace %q is not an absolute path", cfg.Workspace)
	}
	root, err := os.OpenRoot(cfg.Workspace)
	if err != nil {
		return nil, fmt.Errorf("core tools: %w", err)
	}
	t := &Tools{cfg: cfg, root: root, zone: localZoneName(), listLimit: maxListEntries}
	if err := t.init(); err != nil {
		root.Close()
		return nil, err
	}
	return t, nil
}

func (t *Tools) init() error {
	d, err := t.root.Open(".")
	if err != nil {
		return fmt.Errorf("core tools: %w", err)
	}
	defer d.Close()
	if t.rootReal, err = fdPath(d); err != nil {
		return fmt.Errorf("core tools need /proc to check the files they open: %w", err)
	}
	if t.cfg.DefinitionsDir == "" {
		return nil
	}
	if !filepath.IsAbs(t.cfg.DefinitionsDir) {
		return fmt.Errorf("core tools: definitions root %q is not an absolute path", t.cfg.DefinitionsDir)
	}
	rel, ok := relInside(t.cfg.Workspace, t.cfg.DefinitionsDir)
	if !ok {
		// The workspace path itself may be spelled through a symlink.
		if real, err := filepath.EvalSymlinks(t.cfg.DefinitionsDir); err == nil {
			rel, ok = relInside(t.rootReal, real)
		}
	}
	if !ok {
		return nil // outside: no workspace-relative path reaches it
	}
	canon, err := t.resolve(rel)
	if err != nil {
		return fmt.Errorf("core tools: definitions root %q: %w", t.cfg.DefinitionsDir, err)
	}
	t.defInside, t.defRel = true, canon
	return nil
}

// relInside returns target relative to base, in slash form, when it lies
// in base.
func relInside(base, target string) (string, bool) {
	rel, err := filepath.Rel(filepath.Clean(base), filepath.Clean(target))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	if rel == "." {
		rel = ""
	}
	return filepath.ToSlash(rel), true
}

// List returns the core tools: read_file, write_file, edit_file,
// list_directory, search_files, get_current_time, and execute_command when
// [Config.ExecuteCommand] is set.
func (t *Tools) List() []tools.Tool {
	list := []tools.Tool{
		t.readFileTool(),
		withPreview(t.writeFileTool(), t.previewWrite),
		withPreview(t.editFileTool(), t.previewEdit),
		t.listDirectoryTool(),
		t.searchFilesTool(),
		t.currentTimeTool(),
	}
	if t.cfg.ExecuteCommand != nil {
		list = append(list, *t.cfg.ExecuteCommand)
	}
	return list
}

// readOnly is the annotations of a tool that only reads the workspace (or
// the clock): a new value each time, so no tool can change another's.
func readOnly() *tools.Annotations {
	return &tools.Annotations{ReadOnly: true, Idempotent: true}
}

// dir checks a workspace-relative directory under the rules of the file
// tools ("" is the workspace root), and that the party may see it, and
// returns its absolute path: how execute_command confines its working
// directory. Errors are *tools.Error.
func (t *Tools) dir(party access.Party, p string) (string, error) {
	p, err := cleanPath(p, true)
	if err != nil {
		return "", err
	}
	canon, err := t.canonical(p)
	if err != nil {
		return "", err
	}
	if err := t.allowDir(party, p, canon); err != nil {
		return "", err
	}
	d, err := t.openDir(p, canon)
	if err != nil {
		return "", err
	}
	d.Close()
	return filepath.Join(t.rootReal, filepath.FromSlash(canon)), nil
}

// Close closes the workspace root. Calls still running fail.
func (t *Tools) Close() error { return t.root.Close() }
