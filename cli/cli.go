// Package cli is the nexus command line: it finds the daemon of a workspace and
// calls its gRPC API. Start with [Main].
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/internal/inert"
)

// Version is the version of the nexus command line, set when it is built with
// -ldflags "-X github.com/nexuscocreate/nexus/cli.Version=v1.2.3".
var Version = "dev"

// Exit codes of [Main].
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// env is one run of the command line: its streams and its global flags.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	workspace string // --workspace; empty means $NEXUS_WORKSPACE, then the current directory
	json      bool   // --json
}

// Main runs the nexus command line with args (without the program name) and
// returns the exit code of the process: 0 on success, 1 on an error and 2 on a
// usage error. Results go to stdout; errors go to stderr as "nexus: <message>".
// Cancelling ctx cancels the call in flight.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	root := e.rootCommand()
	if args == nil {
		args = []string{} // cobra reads os.Args when args is nil
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)

	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	if uerr, ok := errors.AsType[*usageError](err); ok {
		fmt.Fprintf(stderr, "nexus: %s\nRun '%s --help' for usage.\n", uerr.msg, cmd.CommandPath())
		return exitUsage
	}
	fmt.Fprintf(stderr, "nexus: %s\n", errorMessage(ctx, err))
	return exitError
}

func (e *env) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "nexus",
		Short: "Talk to the nexusd daemon of a workspace",
		Long: `nexus talks to the running nexusd daemon of a workspace over its gRPC API,
with the admin token of the workspace.

The workspace is --workspace, else $NEXUS_WORKSPACE, else the current
directory, or the nearest of its parents that holds .nexus/run/daemon.json.`,
		Version:       Version,
		Args:          cobra.ArbitraryArgs,
		RunE:          needVerb,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("nexus {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &usageError{msg: err.Error()}
	})
	root.PersistentFlags().StringVar(&e.workspace, "workspace", "", "workspace `DIR` (default: $NEXUS_WORKSPACE, else the current directory)")
	root.PersistentFlags().BoolVar(&e.json, "json", false, "print each response as one JSON object a line")

	root.AddCommand(
		e.defCommand(),
		e.rtCommand(),
		e.logCommand(),
		e.toolsCommand(),
		e.callsCommand(),
		e.permCommand(),
		e.approvalsCommand(),
		e.checkpointsCommand(),
		e.undoCommand(),
		e.redoCommand(),
		e.mcpCommand(),
		e.hooksCommand(),
		e.chatCommand(),
		e.acpCommand(),
		e.versionCommand(),
	)
	return root
}

// usageError is a command line the program cannot run: a missing or unknown
// verb, argument or flag. [Main] exits with 2 on it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// needVerb is the RunE of a command that only groups verbs.
func needVerb(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		var verbs []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				verbs = append(verbs, c.Name())
			}
		}
		return usagef("%s needs a verb: %s", cmd.CommandPath(), strings.Join(verbs, ", "))
	}
	msg := fmt.Sprintf("unknown verb %q for %s", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 1
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return &usageError{msg: msg}
}

// argsBetween accepts from min to max positional arguments (max < 0: any
// number) and reports any other count as a usage error.
func argsBetween(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < min:
			return usagef("missing arguments; usage: %s", cmd.UseLine())
		case max >= 0 && len(args) > max:
			return usagef("too many arguments; usage: %s", cmd.UseLine())
		}
		return nil
	}
}

// errorMessage is what the user reads about err: a gRPC status as its message
// and its code in lower case, anything else as it is; inert, since a
// message may quote what a model, an MCP server or an app wrote.
func errorMessage(ctx context.Context, err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return inert.Text(err.Error())
	}
	if st.Code() == codes.Canceled && ctx.Err() != nil {
		return "interrupted"
	}
	if st.Message() == "" {
		return codeName(st.Code())
	}
	var size, limit int
	if _, err := fmt.Sscanf(st.Message(), "grpc: received message larger than max (%d vs. %d)", &size, &limit); err == nil {
		// gRPC's own refusal, before the daemon read the request.
		return fmt.Sprintf("the request is %.1f MiB, over the daemon's limit of %.1f MiB for one message "+
			"(set by tools.maxArgumentsSize and definitions.maxFileSize, or grpc.maxMessageSize, in .nexus/config.yaml) (%s)",
			float64(size)/(1<<20), float64(limit)/(1<<20), codeName(st.Code()))
	}
	return fmt.Sprintf("%s (%s)", inert.Text(st.Message()), codeName(st.Code()))
}

// codeName spells a gRPC code in lower snake case: NotFound is "not_found".
func codeName(c codes.Code) string {
	var b strings.Builder
	for i, r := range c.String() {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
