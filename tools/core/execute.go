package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"time"

	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/command"
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
}

const executeSchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "A command line, run by /bin/sh -c."},
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
			Description: fmt.Sprintf("Run a command in the workspace, either a command line (run by /bin/sh -c) or an argv array. "+
				"Sandbox: %s. The environment holds only %v and the variables given in env. "+
				"The whole process tree is killed on timeout (default %v) or cancel; output over %d bytes keeps its head and tail. "+
				"The result has the exit code (or the signal), stdout and stderr.", cfg.Mode, cfg.EnvAllowlist, cfg.Timeout, cfg.OutputLimit),
			InputSchema:  json.RawMessage(executeSchema),
			OutputSchema: json.RawMessage(executeOutputSchema),
			Kind:         tools.KindExecute,
			Risk:         tools.RiskHigh,
		},
		Timeout: -1, // the command's own timeout applies
		Handler: func(ctx context.Context, _ *tools.Invocation, raw json.RawMessage) (json.RawMessage, error) {
			return t.execute(ctx, cfg, raw)
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

func (t *Tools) execute(ctx context.Context, cfg ExecConfig, raw json.RawMessage) (json.RawMessage, error) {
	var a executeArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, tools.Errorf(tools.CodeInvalidArguments, "%v", err)
	}
	cwd := a.Cwd
	if cwd == "" {
		cwd = "."
	}
	dir, err := t.Dir(cwd)
	if err != nil {
		return nil, err
	}
	timeout := cfg.Timeout
	if a.TimeoutSeconds > 0 {
		timeout = time.Duration(a.TimeoutSeconds * float64(time.Second))
		if timeout > cfg.MaxTimeout {
			return nil, tools.Errorf(tools.CodeInvalidArguments, "timeoutSeconds %g is over the limit of %v", a.TimeoutSeconds, cfg.MaxTimeout)
		}
	}
	env := map[string]string{}
	for _, name := range cfg.EnvAllowlist {
		if v, ok := cfg.Getenv(name); ok {
			env[name] = v
		}
	}
	for k, v := range a.Env {
		if !envName.MatchString(k) {
			return nil, tools.Errorf(tools.CodeInvalidArguments, "env: %q is not a variable name", k)
		}
		env[k] = v
	}
	var envList []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envList = append(envList, k+"="+env[k])
	}
	res, err := cfg.Runner.Run(ctx, command.Spec{
		Argv: a.Argv, Shell: a.Command, Dir: dir, Env: envList, Timeout: timeout,
		OutputLimit: cfg.OutputLimit, Mode: cfg.Mode, Workspace: t.cfg.Workspace, Network: cfg.Network,
	})
	if err != nil {
		if errors.Is(err, command.ErrSandboxUnavailable) {
			return nil, tools.Errorf(tools.CodeSandboxUnavailable, "%v (set tools.sandbox: off in .nexus/config.yaml to run commands unconfined)", err)
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
