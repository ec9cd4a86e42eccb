package core

import (
	"context"
	"errors"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools/command"
)

// HookRunner returns what runs the hooks of .nexus/config.yaml (package
// tools/hooks): a program and its arguments, in the workspace root, under
// the confinement of execute_command's commands (cfg's sandbox mode,
// network and view, the definitions root hidden as from a party with no
// grants), with the allowlisted environment, stdin given, the output
// capped at outputLimit. An error means it did not run.
func (t *Tools) HookRunner(cfg ExecConfig) func(ctx context.Context, argv []string, stdin []byte, timeout time.Duration, outputLimit int) (command.Result, error) {
	if cfg.Getenv == nil {
		cfg.Getenv = os.LookupEnv
	}
	return func(ctx context.Context, argv []string, stdin []byte, timeout time.Duration, outputLimit int) (command.Result, error) {
		env := allowedEnv(cfg)
		var view *command.View
		if cfg.Mode != command.Off {
			if err := command.SandboxOnPlatform(); err != nil {
				return command.Result{}, err
			}
			var err error
			if view, err = t.view(cfg, access.Party{}); err != nil {
				return command.Result{}, err
			}
			env["TMPDIR"] = "/tmp" // the command's own
		}
		var envList []string
		for _, k := range slices.Sorted(maps.Keys(env)) {
			envList = append(envList, k+"="+env[k])
		}
		res, err := cfg.Runner.Run(ctx, command.Spec{
			Argv: argv, Dir: t.rootReal, Env: envList, Timeout: timeout, OutputLimit: outputLimit,
			Mode: cfg.Mode, Workspace: t.rootReal, Network: cfg.Network, View: view, Stdin: stdin,
		})
		if err != nil && errors.Is(err, command.ErrSandboxUnavailable) {
			return command.Result{}, sandboxUnavailable(err)
		}
		return res, err
	}
}
