package tools

import (
	"context"
	"time"
)

// The editor a call's session comes from may lend its files and its
// terminal (ACP's fs/* and terminal/*). A door that speaks to such an
// editor puts them in the context it gives [Manager.Execute]; the handlers
// of the core tools find them there, after every check of their own.

// ClientFiles are the text files as the editor of a call's session has them
// (ACP's fs/*): unsaved buffers are read, and writes land in the editor.
type ClientFiles interface {
	// ReadTextFile returns the text of the file at path, which is absolute.
	ReadTextFile(ctx context.Context, path string) (string, error)
	// WriteTextFile replaces the text of the file at path, which is
	// absolute, creating the file when it does not exist.
	WriteTextFile(ctx context.Context, path, content string) error
}

// ClientTerminal runs a command in the terminal of the editor a call's
// session comes from (ACP terminal/*), where the person sees it. It runs
// outside Nexus's command sandbox.
type ClientTerminal interface {
	// Run runs the command to its end, or until ctx ends (then it kills
	// the command and returns ctx's error), and returns what the terminal
	// kept of it.
	Run(ctx context.Context, cmd TerminalCommand) (TerminalResult, error)
}

// TerminalCommand is a command for a [ClientTerminal].
type TerminalCommand struct {
	// CallID is the tool call the command is of, for the terminal to be
	// shown in it.
	CallID      string
	Command     string // the program
	Args        []string
	Cwd         string            // absolute, inside the workspace
	Env         map[string]string // the call's env argument only
	OutputLimit int               // bytes the terminal keeps
	Timeout     time.Duration     // kill after this
}

// TerminalResult is how a command of a [ClientTerminal] ended.
type TerminalResult struct {
	Output    string // stdout and stderr together, as the terminal shows them
	Truncated bool
	// ExitCode is nil when the command did not exit by itself (a signal
	// ended it).
	ExitCode *int
	Signal   string
	TimedOut bool
}

type (
	clientFilesKey    struct{}
	clientTerminalKey struct{}
)

// WithClientFiles returns ctx carrying cf as the files of the calls made
// with it; a nil cf leaves ctx as it is.
func WithClientFiles(ctx context.Context, cf ClientFiles) context.Context {
	if cf == nil {
		return ctx
	}
	return context.WithValue(ctx, clientFilesKey{}, cf)
}

// ClientFilesFrom returns the files WithClientFiles put in ctx, or nil.
func ClientFilesFrom(ctx context.Context) ClientFiles {
	cf, _ := ctx.Value(clientFilesKey{}).(ClientFiles)
	return cf
}

// WithClientTerminal returns ctx carrying ct as the terminal of the calls
// made with it; a nil ct leaves ctx as it is.
func WithClientTerminal(ctx context.Context, ct ClientTerminal) context.Context {
	if ct == nil {
		return ctx
	}
	return context.WithValue(ctx, clientTerminalKey{}, ct)
}

// ClientTerminalFrom returns the terminal WithClientTerminal put in ctx, or
// nil.
func ClientTerminalFrom(ctx context.Context) ClientTerminal {
	ct, _ := ctx.Value(clientTerminalKey{}).(ClientTerminal)
	return ct
}
