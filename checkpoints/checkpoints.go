// Package checkpoints records every change that anyone but the person
// makes to the workspace (agent sessions from every door, apps, gateway
// clients, and the commands they run) as a checkpoint in Nexus's own
// history repository (.nexus/history.git, refs under refs/nexus/, sharing
// the definitions' objects; never the person's .git), named by the tool
// call that made it, and undoes and redoes them per call, turn or session.
//
// A Store is a [tools.Recorder]: the tools manager calls Begin before a
// call whose tool touches the workspace runs, and the end it returns
// after. A call that names its paths (write_file, edit_file) has just
// those read before and after; a call that may change anything (a
// command, an MCP server's tool) has the workspace compared before and
// after (its files as they were at the last scan, the baseline, against
// what they are now), honouring .gitignore, skipping .nexus/ and .git/,
// with a size cap per file. What is skipped is listed with the
// checkpoint, never dropped silently.
package checkpoints

import (
	"errors"
	"log/slog"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/state"
)

// Kinds of checkpoint.
const (
	KindCall = "call" // what a tool call changed
	KindUndo = "undo" // an undo: it restores what Undoes changed
	KindRedo = "redo" // a redo: it reverses the undo it names in Undoes
)

// Actions on a file.
const (
	Added    = "added"
	Modified = "modified"
	Deleted  = "deleted"
)

// Checkpoint is the record of one change to the workspace: a tool call's,
// an undo's or a redo's. Its JSON is the shape of the editor methods and
// of `nexus --json checkpoints ls`.
type Checkpoint struct {
	// ID is the tool call's id for a call's checkpoint, a fresh UUIDv7
	// for an undo or a redo: stable across gc.
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	ToolCallID string `json:"toolCallId,omitempty"`
	ToolName   string `json:"toolName,omitempty"`
	ServerName string `json:"serverName,omitempty"`
	// Author is who made the change: "agent:<session>", "app:<id>",
	// "cli", "editor"... (for an undo: who undid).
	Author string `json:"author"`
	AppID  string `json:"appId,omitempty"`
	// Session and Turn group checkpoints for undo: an agent session and
	// its turn; "app:<id>" for an app's own calls; a gateway client's MCP
	// session. An undo or a redo is in the session of what it undoes.
	Session string    `json:"session"`
	Turn    string    `json:"turn,omitempty"`
	Time    time.Time `json:"time"`
	// Undoes: for an undo, the checkpoints whose changes it took back; for
	// a redo, the undo it reversed.
	Undoes []string `json:"undoes,omitempty"`
	// UndoneBy is the undo that currently takes this checkpoint's changes
	// back (empty when they stand): derived, not stored.
	UndoneBy string       `json:"undoneBy,omitempty"`
	Files    []FileChange `json:"files"`
	Skipped  []Skipped    `json:"skipped,omitempty"`
}

// FileChange is one file a checkpoint changed: what it held before and
// after, as blob ids of the history repository ("" when absent).
type FileChange struct {
	Path   string `json:"path"` // slash-separated, relative to the workspace root
	Action string `json:"action"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Executable bits before and after.
	BeforeExec bool `json:"beforeExecutable,omitempty"`
	AfterExec  bool `json:"afterExecutable,omitempty"`
}

// Skipped is a path whose change was seen but not recorded, and why:
// "ignored (.gitignore)", "over the size cap (checkpoints.maxFileSize,
// 2 MiB): 14 MiB", "not a regular file (a symlink)".
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Options configure Open.
type Options struct {
	// Workspace is the workspace's root directory.
	Workspace string
	// Definitions' history repository stores the checkpoints; a file under
	// its root is restored through it, so that its history records the
	// undo.
	Definitions *state.Definitions
	Bus         *events.Bus
	Logger      *slog.Logger
	// MaxFileSize: a larger file is listed as skipped, not recorded.
	MaxFileSize int64
	// MaxStoreBytes bounds the store: past it, the oldest sessions'
	// checkpoints are pruned (checkpoints.maxStoreSize).
	MaxStoreBytes int64
	// MaxFiles bounds a workspace scan: a workspace with more files has its
	// commands' changes listed as skipped.
	MaxFiles int
}

// Changed is published on the bus when checkpoints are added, undone,
// redone or pruned.
type Changed struct {
	// Session is the session whose checkpoints changed; empty for many.
	Session string `json:"session,omitempty"`
}

// Filter selects checkpoints for List; zero values select everything.
type Filter struct {
	Session string
	Turn    string
	// Limit bounds the answer, newest first; 0 is no bound.
	Limit int
}

// FileDiff is one file of a checkpoint with both its contents.
type FileDiff struct {
	FileChange
	// Before and After are the contents (nil when absent).
	Before []byte `json:"-"`
	After  []byte `json:"-"`
	Binary bool   `json:"binary,omitempty"`
	// Unified is the diff, as `git diff` prints it (no colour).
	Unified string `json:"diff"`
}

// Selector says what an undo takes back. Call: that call's checkpoint.
// Session alone: every checkpoint of the session. Turn: that turn of
// Session. LastTurn: the last turn of Session, or of the most recent
// session when Session is empty. The zero Selector is LastTurn of the most
// recent session.
type Selector struct {
	Call     string `json:"call,omitempty"`
	Session  string `json:"session,omitempty"`
	Turn     string `json:"turn,omitempty"`
	LastTurn bool   `json:"lastTurn,omitempty"`
}

// UndoOptions: Party is who undoes (an app may undo only its own
// checkpoints, and only files it may write); Force restores files that
// were changed since, which are otherwise reported as conflicts and left
// alone, with nothing restored.
type UndoOptions struct {
	Party access.Party
	Force bool
}

// Result is what an undo or a redo did.
type Result struct {
	// Checkpoint is the undo's or redo's own record, nil when nothing was
	// restored.
	Checkpoint *Checkpoint `json:"checkpoint,omitempty"`
	// Undone are the checkpoints taken back (for a redo, the undo).
	Undone    []string     `json:"undone"`
	Restored  []FileChange `json:"restored"`
	Conflicts []Conflict   `json:"conflicts,omitempty"`
}

// Conflict is a file that changed since the checkpoint: it holds neither
// what the checkpoint left nor what the undo would restore.
type Conflict struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Usage is the store's size.
type Usage struct {
	Checkpoints int   `json:"checkpoints"`
	Sessions    int   `json:"sessions"`
	Bytes       int64 `json:"bytes"`
	MaxBytes    int64 `json:"maxBytes"`
}

// GCResult is what GC did.
type GCResult struct {
	Pruned      int   `json:"pruned"` // checkpoints dropped to stay under the cap
	BytesBefore int64 `json:"bytesBefore"`
	BytesAfter  int64 `json:"bytesAfter"`
}

// ErrNotFound: no checkpoint has that id, or the selector selects none.
var ErrNotFound = errors.New("no such checkpoint")

// ErrConflict is the error of an undo or redo that left everything alone
// because files changed since; the Result lists them.
var ErrConflict = errors.New("files changed since the checkpoint")
