package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	nexusversion "github.com/nexuscocreate/nexus/internal/version"
)

// A nexus built without -ldflags -X …cli.Version (go install …@v1.2.3)
// reports the module version the go command stamped, not "dev".
func init() {
	Version = nexusversion.Of(Version)
}

// versionCommand is "nexus version": the version of nexus and of the daemon.
func (e *env) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of nexus and of the running daemon",
		Args:  argsBetween(0, 0),
		RunE: func(*cobra.Command, []string) error {
			// No daemon is not an error here: the version of nexus is still news.
			_, info, err := e.locateDaemon()
			if _, ok := errors.AsType[*notRunningError](err); err != nil && !ok {
				return err
			}
			if e.json {
				out := struct {
					Version string      `json:"version"`
					Daemon  *daemonInfo `json:"daemon,omitempty"`
				}{Version, info}
				b, err := json.Marshal(out)
				if err != nil {
					return err
				}
				return e.writeJSONLine(b)
			}
			if _, err := fmt.Fprintf(e.stdout, "nexus %s\n", Version); err != nil {
				return err
			}
			if info != nil {
				_, err := fmt.Fprintf(e.stdout, "nexusd %s (pid %d, workspace %s)\n", info.Version, info.PID, info.Workspace)
				return err
			}
			return nil
		},
	}
}
