package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/command"
	"github.com/nexuscocreate/nexus/workspace"
)

// ExecConfig configures execute_command.
type ExecConfig struct {
	Runner *command.Runner
	Mode   command.Mode
	// Network is whether commands may use the network (sandboxed modes).
	Network bool
	// EnvAllowlist names the daemon's environment variables a command
	// inherits; everything else it gets comes from its own env argument.
	EnvAllowlist []string
	// Timeout is the default of timeoutSeconds; MaxTimeout its bound.
	Timeout, MaxTimeout time.Duration
	// OutputLimit bounds stdout and stderr together (head and tail kept).
	OutputLimit int
	// Getenv reads the daemon's environment; default os.LookupEnv.
	Getenv func(string) (string, bool)
	// Hide are more directories commands see empty: the daemon's socket
	// directory when it is outside .nexus/run.
	Hide []string
	// OtherWorkspaces lists the other workspaces of this user that have had
	// a daemon; commands see their .nexus empty.
	OtherWorkspaces func() []string
}

const executeSchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "A command line, run by the shell (/bin/sh -c; cmd.exe /d /s /c on Windows)."},
    "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "A program and its arguments, run without a shell."},
    "cwd": {"type": "string", "description": "Working directory relative to the workspace root (default: the root)."},
    "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Environment variables for the command, besides the allowlisted ones."},
    "timeoutSeconds": {"type": "number", "exclusiveMinimum": 0, "description": "Kill the command after this many seconds."}
  },
  "oneOf": [{"required": ["command"]}, {"required": ["argv"]}],
  "additionalProperties": false
}`

const executeOutputSchema = `{
  "type": "object",
  "properties": {
    "exitCode": {"type": "integer"},
    "signal": {"type": "string"},
    "stdout": {"type": "string"},
    "stderr": {"type": "string"},
    "truncated": {"type": "boolean"},
    "timedOut": {"type": "boolean"},
    "durationMs": {"type": "integer"}
  },
  "required": ["exitCode", "stdout", "stderr"]
}`

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ExecuteCommand returns the execute_command tool: a command in the
// workspace, confined by the sandbox mode, with an explicit environment, a
// timeout, an output cap and a kill of its whole process tree.
func (t *Tools) ExecuteCommand(cfg ExecConfig) tools.Tool {
	if cfg.Getenv == nil {
		cfg.Getenv = os.LookupEnv
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.MaxTimeout < cfg.Timeout {
		cfg.MaxTimeout = max(time.Hour, cfg.Timeout)
	}
	if cfg.OutputLimit <= 0 {
		cfg.OutputLimit = 1 << 20
	}
	return tools.Tool{
		Definition: tools.Definition{
			Name:  "execute_command",
			Title: "Run a command",
			Description: fmt.Sprintf("Run a command in the workspace, either a command line (run by %s) or an argv array. "+
				"Sandbox: %s. The environment holds only %v and the variables given in env. "+
				"The whole process tree is killed on timeout (default %v) or cancel; output over %d bytes keeps its head and tail. "+
				"The result has the exit code (or the signal), stdout and stderr.", command.Shell, cfg.Mode, cfg.EnvAllowlist, cfg.Timeout, cfg.OutputLimit),
			InputSchema:  json.RawMessage(executeSchema),
			OutputSchema: json.RawMessage(executeOutputSchema),
			Kind:         tools.KindExecute,
			Risk:         tools.RiskHigh,
			// A program may change or delete anything the sandbox lets it,
			// differently each run, and reach what the sandbox's network
			// rules allow.
			Annotations: &tools.Annotations{Destructive: true, OpenWorld: true},
		},
		Timeout: -1, // the command's own timeout applies
		Touches: touchesAll,
		Handler: func(ctx context.Context, inv *tools.Invocation, raw json.RawMessage) (json.RawMessage, error) {
			return t.execute(ctx, cfg, inv.Acting(), inv.CallID, raw)
		},
	}
}

type executeArgs struct {
	Command        string            `json:"command"`
	Argv           []string          `json:"argv"`
	Cwd            string            `json:"cwd"`
	Env            map[string]string `json:"env"`
	TimeoutSeconds float64           `json:"timeoutSeconds"`
}

type executeResult struct {
	ExitCode   int    `json:"exitCode"`
	Signal     string `json:"signal,omitempty"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Truncated  bool   `json:"truncated,omitempty"`
	TimedOut   bool   `json:"timedOut,omitempty"`
	DurationMs int64  `json:"durationMs"`
}

func (t *Tools) execute(ctx context.Context, cfg ExecConfig, party access.Party, callID string, raw json.RawMessage) (json.RawMessage, error) {
	var a executeArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, tools.Errorf(tools.CodeInvalidArguments, "%v", err)
	}
	cwd := a.Cwd
	if cwd == "" {
		cwd = "."
	}
	if !party.Valid() {
		return nil, tools.Errorf(tools.CodePermissionDenied, "the call names no acting party")
	}
	if cfg.Mode == command.Off && !party.IsPerson() {
		return nil, tools.Errorf(tools.CodePermissionDenied,
			"tools.sandbox is off in .nexus/config.yaml: only the person's commands run unconfined, an app's never do")
	}
	dir, err := t.dir(party, cwd)
	if err != nil {
		return nil, err
	}
	network := cfg.Network
	if app := party.App(); app != nil {
		network = app.Network
	}
	timeout := cfg.Timeout
	if a.TimeoutSeconds > 0 {
		timeout = time.Duration(a.TimeoutSeconds * float64(time.Second))
		if timeout > cfg.MaxTimeout {
			return nil, tools.Errorf(tools.CodeInvalidArguments, "timeoutSeconds %g is over the limit of %v", a.TimeoutSeconds, cfg.MaxTimeout)
		}
	}
	env := allowedEnv(cfg)
	for k, v := range a.Env {
		if !envName.MatchString(k) {
			return nil, tools.Errorf(tools.CodeInvalidArguments, "env: %q is not a variable name", k)
		}
		env[k] = v
	}
	if ct := tools.ClientTerminalFrom(ctx); ct != nil {
		return t.executeInClient(ctx, ct, cfg, party, callID, a, dir, timeout)
	}
	var view *command.View
	if cfg.Mode != command.Off {
		if err := command.SandboxOnPlatform(); err != nil {
			return nil, sandboxUnavailable(err)
		}
		if view, err = t.view(cfg, party); err != nil {
			return nil, err
		}
		env["TMPDIR"] = "/tmp" // the command's own
	}
	var envList []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envList = append(envList, k+"="+env[k])
	}
	res, err := cfg.Runner.Run(ctx, command.Spec{
		Argv: a.Argv, Shell: a.Command, Dir: dir, Env: envList, Timeout: timeout,
		OutputLimit: cfg.OutputLimit, Mode: cfg.Mode, Workspace: t.rootReal, Network: network,
		View: view,
	})
	if err != nil {
		if errors.Is(err, command.ErrSandboxUnavailable) {
			return nil, sandboxUnavailable(err)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, tools.Errorf(tools.CodeExecutionFailed, "%v", err)
	}
	if res.Cancelled {
		return nil, ctx.Err()
	}
	out, err := json.Marshal(executeResult{ExitCode: res.ExitCode, Signal: res.Signal, Stdout: res.Stdout, Stderr: res.Stderr,
		Truncated: res.Truncated, TimedOut: res.TimedOut, DurationMs: res.Duration.Milliseconds()})
	if err != nil {
		return nil, err
	}
	switch {
	case res.TimedOut:
		return nil, &tools.Error{Code: tools.CodeTimeout, Message: fmt.Sprintf("the command did not finish in %v; its process tree was killed", timeout), Output: out}
	case res.Truncated:
		return nil, &tools.Error{Code: tools.CodeOutputLimit, Message: fmt.Sprintf("the output was over %d bytes; the head and the tail are kept", cfg.OutputLimit), Output: out}
	}
	return out, nil
}

// allowedEnv is the daemon's environment a command inherits: the
// system's variables and those of the allowlist.
func allowedEnv(cfg ExecConfig) map[string]string {
	env := map[string]string{}
	for _, name := range slices.Concat(systemEnv, cfg.EnvAllowlist) {
		if v, ok := cfg.Getenv(name); ok {
			env[name] = v
		}
	}
	return env
}

// view is the file system a command of the party sees: the daemon's state,
// the definitions root and other workspaces' .nexus hidden; of the
// definitions, what the party may use shown again (read grants read-only);
// the launchers read-only (launcherPaths).
func (t *Tools) view(cfg ExecConfig, party access.Party) (*command.View, error) {
	v := &command.View{Hide: []string{filepath.Join(t.rootReal, privateDir)}}
	defs := t.defsReal()
	if defs != "" && !strings.HasPrefix(defs, v.Hide[0]+"/") {
		v.Hide = append(v.Hide, defs)
	}
	v.Hide = append(v.Hide, cfg.Hide...)
	if cfg.OtherWorkspaces != nil {
		for _, ws := range cfg.OtherWorkspaces() {
			if ws = filepath.Clean(ws); filepath.IsAbs(ws) && ws != t.rootReal && ws != t.cfg.Workspace {
				v.Hide = append(v.Hide, filepath.Join(ws, privateDir))
			}
		}
	}
	if defs != "" {
		for _, m := range party.Mounts() {
			for _, p := range expandMount(defs, m) {
				v.Binds = append(v.Binds, command.Bind{Path: p, Writable: m.Writable})
			}
		}
	}
	ro, err := t.launcherPaths(cfg.Mode)
	if err != nil {
		return nil, err
	}
	v.ReadOnly = ro
	return v, nil
}

// launcherPaths are the absolute paths a command sees read-only, from the
// launchers as git's config names them now (workspace.Launchers): each
// directory, and for a file the directory that holds it at the top (so
// that a missing tasks.json cannot be created in an existing .vscode), or
// the file itself at the top; none in .nexus (hidden whole), none below
// another. A missing path cannot be made read-only, so in mode
// workspace-write (the command may write the workspace) a missing hooks
// directory that git's config names is made first, empty (git runs no
// hook from an empty directory, as from a missing one): else the command
// could make it and fill it. When it cannot be made, the command does not
// run.
func (t *Tools) launcherPaths(mode command.Mode) ([]string, error) {
	var out []string
	for _, l := range workspace.Launchers(t.rootReal) {
		rel, dir := strings.CutSuffix(l.Path, "/")
		if !dir {
			rel, _, _ = strings.Cut(rel, "/")
		}
		top, _, _ := strings.Cut(rel, "/")
		if strings.EqualFold(top, privateDir) {
			continue
		}
		abs := filepath.Join(t.rootReal, filepath.FromSlash(rel))
		// Through a symlink it may lie outside, where the command cannot
		// write (and the root cannot make it).
		if _, inside := workspace.ResolveInside(t.rootReal, rel); inside && l.HooksDir && mode == command.WorkspaceWrite {
			if _, err := os.Lstat(abs); err != nil {
				if err := t.root.MkdirAll(rel, 0o755); err != nil {
					return nil, tools.Errorf(tools.CodeSandboxUnavailable,
						"the hooks directory %s that git's core.hooksPath names is missing, and making it (so that the command sees it read-only) failed: %v", rel, err)
				}
			}
		}
		if !slices.Contains(out, abs) {
			out = append(out, abs)
		}
	}
	return slices.DeleteFunc(slices.Clone(out), func(p string) bool {
		return slices.ContainsFunc(out, func(d string) bool { return p != d && strings.HasPrefix(p, d+"/") })
	}), nil
}

// defsReal is the definitions root as the kernel names it, "" without one.
func (t *Tools) defsReal() string {
	switch {
	case t.defInside:
		return filepath.Join(t.rootReal, filepath.FromSlash(t.defRel))
	case t.cfg.DefinitionsDir != "":
		if real, err := filepath.EvalSymlinks(t.cfg.DefinitionsDir); err == nil {
			return real
		}
		return filepath.Clean(t.cfg.DefinitionsDir)
	}
	return ""
}

// expandMount is the absolute paths a mount of the definitions root names:
// its path, or for a pattern the files and directories that match it now,
// symlinks never.
func expandMount(defs string, m access.Mount) []string {
	if !m.Glob {
		return []string{filepath.Join(defs, filepath.FromSlash(m.Path))}
	}
	matches, _ := filepath.Glob(filepath.Join(defs, filepath.FromSlash(m.Path)))
	var out []string
	for _, p := range matches {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink == 0 {
			out = append(out, p)
		}
	}
	return out
}

// terminalGrace is how long past a command's timeout the editor's terminal
// has to report it ended before the call gives up on it.
const terminalGrace = 10 * time.Second

// executeInClient runs a command whose arguments passed every check in the
// terminal of the editor the call's session comes from, where the person
// sees it: outside the sandbox, with only the call's own env. An app's
// commands never run unconfined, there as with tools.sandbox off.
func (t *Tools) executeInClient(ctx context.Context, ct tools.ClientTerminal, cfg ExecConfig, party access.Party, callID string, a executeArgs,
	dir string, timeout time.Duration) (json.RawMessage, error) {
	if !party.IsPerson() {
		return nil, tools.Errorf(tools.CodePermissionDenied,
			"the editor's terminal runs commands outside the sandbox: only the person's commands run there, an app's never do")
	}
	cmd := tools.TerminalCommand{CallID: callID, Cwd: dir, Env: a.Env, OutputLimit: cfg.OutputLimit, Timeout: timeout}
	if a.Command != "" {
		argv := command.ShellArgv(a.Command)
		cmd.Command, cmd.Args = argv[0], argv[1:]
	} else {
		cmd.Command, cmd.Args = a.Argv[0], a.Argv[1:]
	}
	rctx, cancel := context.WithTimeout(ctx, timeout+terminalGrace)
	defer cancel()
	began := time.Now()
	res, err := ct.Run(rctx, cmd)
	took := time.Since(began)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case rctx.Err() != nil:
		return nil, tools.Errorf(tools.CodeTimeout, "the editor's terminal did not end the command within %v of its timeout of %v", terminalGrace, timeout)
	case err != nil:
		return nil, tools.Errorf(tools.CodeExecutionFailed, "the editor's terminal failed: %v", err)
	}
	exit := -1 // a signal ended it, or the terminal does not say
	if res.ExitCode != nil {
		exit = *res.ExitCode
	}
	out, err := json.Marshal(executeResult{ExitCode: exit, Signal: res.Signal, Stdout: res.Output, Truncated: res.Truncated,
		TimedOut: res.TimedOut, DurationMs: took.Milliseconds()})
	if err != nil {
		return nil, err
	}
	switch {
	case res.TimedOut:
		return nil, &tools.Error{Code: tools.CodeTimeout, Message: fmt.Sprintf("the command did not finish in %v; the editor's terminal killed it", timeout), Output: out}
	case res.Truncated:
		return nil, &tools.Error{Code: tools.CodeOutputLimit, Message: fmt.Sprintf("the output was over %d bytes; the editor's terminal kept part of it", cfg.OutputLimit), Output: out}
	}
	return out, nil
}

// sandboxUnavailable is the error of a command whose sandbox cannot be
// built, with what the person may do about it.
func sandboxUnavailable(err error) error {
	return tools.Errorf(tools.CodeSandboxUnavailable,
		"%v (set tools.sandbox: off in .nexus/config.yaml to run the person's own commands unconfined; an app's never run so)", err)
}
