package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"
)

// acpCommand is nexus acp: the workspace's agent over the Agent Client
// Protocol on stdin and stdout, for an editor to launch. It runs nexusd
// acp, which hands the connection to the workspace's running daemon, or
// is the daemon when none runs.
func (e *env) acpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "acp",
		Short: "Serve the workspace's agent to an ACP editor (Zed, JetBrains, Neovim) on stdin/stdout",
		Long: `nexus acp serves the Nexus agent of the workspace over the Agent Client
Protocol on stdin and stdout: an editor launches it as an agent server. It
runs nexusd acp (found beside nexus, else on PATH), which serves the client
through the workspace's running daemon, or starts the daemon when none runs.

The workspace is --workspace, else $NEXUS_WORKSPACE, else the nearest
directory with a running daemon from the current one, else the current
directory. A session's cwd must be the workspace or inside it.`,
		Args: argsBetween(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := e.startDir()
			if err != nil {
				return err
			}
			ws := dir
			if e.workspace == "" && os.Getenv("NEXUS_WORKSPACE") == "" {
				if found, ok := findWorkspace(dir); ok {
					ws = found
				}
			}
			nexusd, err := nexusdPath()
			if err != nil {
				return err
			}
			c := exec.CommandContext(cmd.Context(), nexusd, "acp", "--workspace", ws)
			c.Stdin, c.Stdout, c.Stderr = e.stdin, e.stdout, e.stderr
			if err := c.Run(); err != nil {
				if exit, ok := errors.AsType[*exec.ExitError](err); ok {
					return fmt.Errorf("nexusd acp exited with status %d", exit.ExitCode())
				}
				return fmt.Errorf("nexusd acp: %w", err)
			}
			return nil
		},
	}
}

// nexusdPath is the nexusd beside this executable, else the one on PATH.
func nexusdPath() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "nexusd")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("nexusd")
	if err != nil {
		return "", errors.New("nexusd is neither beside nexus nor on PATH: install it (make build puts both in bin/)")
	}
	return p, nil
}
