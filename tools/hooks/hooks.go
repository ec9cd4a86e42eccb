// Package hooks runs the person's programs around tool calls and prompts:
// the hooks of .nexus/config.yaml (workspace.HooksConfig). A preToolUse
// hook runs before a call, once its arguments are valid and before the
// permission question, and may deny it or make the person decide; a
// postToolUse hook runs after the call, with its result, and may add a
// note for the model; a userPromptSubmit hook runs when a prompt is
// submitted to an agent session, and may block it or add context. Every
// door's calls go through the ToolManager, so the tool hooks see them all
// (tools.Options.Hooks); the prompt hooks run in the agent.
//
// A hook is workspace content: it runs only once the person has approved
// it ([Hooks.Trust], nexus hooks trust), and the approval is pinned to its
// event, match and command line and to the content of every file of the
// workspace its command names (see [Status.Pin]): a changed hook waits for
// approval again. It runs in the command sandbox (tools.sandbox), in the
// workspace root, with a timeout and its output capped.
//
// # What a hook gets and says
//
// The call (or the prompt) as one JSON object on stdin: see [Input]. The
// hook answers by its exit code and what it prints, as Claude Code's do:
//
//	exit 0, nothing or plain text on stdout   go on (a prompt hook's text
//	                                          is added to the prompt)
//	exit 0, a JSON object on stdout           see [Output]
//	exit 2                                    deny the call / block the
//	                                          prompt, stderr the reason (a
//	                                          postToolUse hook's stderr is
//	                                          a note for the model)
//	any other end, a timeout, output over     the hook failed: the call is
//	64 KiB, not approved, cannot run          denied, the prompt blocked; a
//	                                          postToolUse hook is logged
//	                                          and ignored
//
// A hook never grants anything: "allow" goes on to the permission policy,
// which decides as without hooks. Start with [New].
package hooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/internal/inert"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/command"
	"github.com/nexuscocreate/nexus/tools/policy"
	"github.com/nexuscocreate/nexus/tools/trust"
	"github.com/nexuscocreate/nexus/workspace"
)

// The events hooks run at.
const (
	PreToolUse       = "preToolUse"
	PostToolUse      = "postToolUse"
	UserPromptSubmit = "userPromptSubmit"
)

const (
	// OutputLimit bounds a hook's stdout and stderr together: a hook
	// that prints more has failed.
	OutputLimit = 64 << 10
	// maxMessage bounds a reason or a note a hook gives, as the model or
	// the person gets it.
	maxMessage = 8 << 10
	// maxPinnedFile bounds a file a hook's command names: a larger one
	// cannot be pinned, and the hook does not run.
	maxPinnedFile = 64 << 20
)

// Runner runs a hook's program confined as execute_command's commands
// are (core.Tools.HookRunner): argv in the workspace root, stdin given,
// stopped at timeout, at most outputLimit bytes of output kept. An error
// means it did not run.
type Runner func(ctx context.Context, argv []string, stdin []byte, timeout time.Duration, outputLimit int) (command.Result, error)

// Options configure New.
type Options struct {
	// Workspace is the absolute workspace root.
	Workspace string
	Config    workspace.HooksConfig
	// TrustFile keeps the person's approvals; default
	// .nexus/hooks-trust.json of the workspace, which tool calls cannot
	// reach.
	TrustFile string
	// Run runs a hook; nil: hooks can be listed and approved, not run.
	Run    Runner
	Logger *slog.Logger
}

// Hooks are the hooks of a workspace's configuration: the ToolManager's
// (tools.Options.Hooks) and the agent's. It is safe for concurrent use.
type Hooks struct {
	opts   Options
	logger *slog.Logger
	hooks  []*hook

	// asking is the person's asker of approvals (SetAsker).
	asking trust.Asking[Status]
}

var _ tools.Hooks = (*Hooks)(nil)

type hook struct {
	name    string // "preToolUse[0]"
	event   string
	match   string
	re      *regexp.Regexp // nil matches every tool
	command []string
	timeout time.Duration
}

// TrustFile is where the approvals of a workspace's hooks are kept:
// .nexus/hooks-trust.json.
func TrustFile(ws string) string {
	return workspace.NewLayout(ws).HooksTrust
}

var trustKind = trust.Kind{Label: "hook", Key: "hooks"}

// New returns the hooks of opts.Config, which workspace.ParseConfig has
// checked.
func New(opts Options) (*Hooks, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.TrustFile == "" {
		opts.TrustFile = TrustFile(opts.Workspace)
	}
	h := &Hooks{opts: opts, logger: opts.Logger}
	for _, event := range workspace.HookEvents {
		for i, c := range opts.Config.Of(event) {
			hk := &hook{name: fmt.Sprintf("%s[%d]", event, i), event: event, match: c.Match, command: c.Command, timeout: time.Duration(c.Timeout)}
			if hk.timeout <= 0 {
				hk.timeout = 30 * time.Second
			}
			if c.Match != "" && c.Match != "*" {
				re, err := regexp.Compile(`^(?:` + c.Match + `)$`)
				if err != nil {
					return nil, fmt.Errorf("hook %s: match %q: %w", hk.name, c.Match, err)
				}
				hk.re = re
			}
			if len(c.Command) == 0 || c.Command[0] == "" {
				return nil, fmt.Errorf("hook %s: no command", hk.name)
			}
			h.hooks = append(h.hooks, hk)
		}
	}
	return h, nil
}

// Any reports whether any hook is configured.
func (h *Hooks) Any() bool { return h != nil && len(h.hooks) > 0 }

// Prompts reports whether a userPromptSubmit hook is configured.
func (h *Hooks) Prompts() bool {
	if h == nil {
		return false
	}
	for _, hk := range h.hooks {
		if hk.event == UserPromptSubmit {
			return true
		}
	}
	return false
}

// Status is a hook as the person approves it.
type Status struct {
	Name    string   `json:"name"`
	Event   string   `json:"event"`
	Match   string   `json:"match,omitempty"`
	Command []string `json:"command"`
	Timeout string   `json:"timeout"`
	// Files are the workspace files its command names, relative to the
	// root, each with the SHA-256 of its content: they are pinned too.
	Files []PinnedFile `json:"files,omitempty"`
	// Pin is "sha256:" and the hash of the event, the match, the command
	// and the files: what an approval holds for.
	Pin     string `json:"pin"`
	Trusted bool   `json:"trusted"`
	// Error is why the hook cannot be pinned now (a file it names cannot
	// be read); it does not run.
	Error string `json:"error,omitempty"`
}

// PinnedFile is a file a hook's command names and the hash of its content.
type PinnedFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// List returns the hooks as they are now, in the order they run.
func (h *Hooks) List() []Status {
	store, err := h.store()
	out := make([]Status, 0, len(h.hooks))
	for _, hk := range h.hooks {
		st := h.status(hk)
		if err != nil && st.Error == "" {
			st.Error = "the approvals cannot be read: " + err.Error()
		}
		st.Trusted = err == nil && st.Error == "" && store.Trusted(st.Name, st.Pin)
		out = append(out, st)
	}
	return out
}

// ErrUnknownHook is the error of [Hooks.Trust] for a name no hook has.
var ErrUnknownHook = errors.New("no hook of that name is configured")

// ErrPinMismatch is the error of [Hooks.Trust] when the hook is no longer
// what the person was shown.
var ErrPinMismatch = errors.New("the hook changed since it was shown")

// Trust approves the hook name as it is now, on the say-so of by: only the
// person approves (policy.MayAnswer). pin, when not "", must be the hook's
// current pin (what the person was shown), or Trust fails with
// [ErrPinMismatch]. The approval holds, across restarts, until the hook or
// a file its command names changes.
func (h *Hooks) Trust(by access.Party, name, pin string) (Status, error) {
	if err := policy.MayAnswer(by); err != nil {
		return Status{}, fmt.Errorf("hook %q not approved: %w", name, err)
	}
	for _, hk := range h.hooks {
		if hk.name != name {
			continue
		}
		st := h.status(hk)
		switch {
		case st.Error != "":
			return st, fmt.Errorf("hook %s cannot be approved: %s", name, st.Error)
		case pin != "" && pin != st.Pin:
			return st, fmt.Errorf("hook %s: %w: look at it again", name, ErrPinMismatch)
		}
		store, err := h.store()
		if err != nil {
			return st, err
		}
		if !store.Trusted(name, st.Pin) {
			if err := store.Approve(name, st.Pin, time.Now()); err != nil {
				return st, err
			}
			h.logger.Info("hook approved by the person", "hook", name, "pin", st.Pin[:min(len(st.Pin), 19)], "by", by.String())
		}
		st.Trusted = true
		return st, nil
	}
	return Status{}, fmt.Errorf("%w: %q (nexus hooks ls lists them)", ErrUnknownHook, name)
}

// store reads the approvals afresh: nexus hooks trust writes them while
// the daemon runs.
func (h *Hooks) store() (*trust.Store, error) {
	return trust.Open(h.opts.TrustFile, trustKind)
}

// pinVersion is part of what a pin hashes.
const pinVersion = 1

// status is hk with its pin as its files are now.
func (h *Hooks) status(hk *hook) Status {
	st := Status{Name: hk.name, Event: hk.event, Match: hk.match, Command: hk.command, Timeout: hk.timeout.String()}
	files, err := h.pinnedFiles(hk.command)
	if err != nil {
		st.Error = err.Error()
	}
	st.Files = files
	data, err := json.Marshal(struct {
		Version int          `json:"v"`
		Event   string       `json:"event"`
		Match   string       `json:"match"`
		Command []string     `json:"command"`
		Files   []PinnedFile `json:"files"`
	}{pinVersion, hk.event, hk.match, hk.command, files})
	if err != nil { // strings only
		panic(err)
	}
	sum := sha256.Sum256(data)
	st.Pin = "sha256:" + hex.EncodeToString(sum[:])
	return st
}

// pinnedFiles are the files of the workspace the words of a command name,
// with their hashes: the program when it is a path (a bare name is
// looked up in PATH), and each argument that names a file now. A word that
// names a directory, or nothing, is not pinned: a file made there later
// changes the pin.
func (h *Hooks) pinnedFiles(argv []string) ([]PinnedFile, error) {
	ws := h.opts.Workspace
	var out []PinnedFile
	for i, a := range argv {
		if i == 0 && !strings.ContainsAny(a, `/\`) || a == "" {
			continue
		}
		p := a
		if !filepath.IsAbs(p) {
			p = filepath.Join(ws, p)
		}
		rel, err := filepath.Rel(ws, p)
		if err != nil || !filepath.IsLocal(rel) {
			continue // outside the workspace: not workspace content
		}
		fi, err := os.Stat(p)
		switch {
		case err != nil && i == 0:
			return out, fmt.Errorf("its program %s cannot be read: %v", inert.Line(a), err)
		case err != nil || fi.IsDir():
			continue
		case !fi.Mode().IsRegular():
			return out, fmt.Errorf("%s is not a regular file", inert.Line(a))
		case fi.Size() > maxPinnedFile:
			return out, fmt.Errorf("%s is %d bytes, over the %d a hook's file may have", inert.Line(a), fi.Size(), maxPinnedFile)
		}
		sum, err := hashFile(p)
		if err != nil {
			return out, fmt.Errorf("%s cannot be read: %v", inert.Line(a), err)
		}
		out = append(out, PinnedFile{Path: filepath.ToSlash(rel), SHA256: sum})
	}
	return out, nil
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	d := sha256.New()
	if _, err := io.Copy(d, io.LimitReader(f, maxPinnedFile+1)); err != nil {
		return "", err
	}
	return hex.EncodeToString(d.Sum(nil)), nil
}
