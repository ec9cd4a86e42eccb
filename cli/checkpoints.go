package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"

	"github.com/spf13/cobra"

	"github.com/nexuscocreate/nexus/internal/bytesize"
	"github.com/nexuscocreate/nexus/internal/inert"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// checkpointsCommand is "nexus checkpoints": what agents, apps, MCP
// clients and their commands changed in the workspace.
func (e *env) checkpointsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoints",
		Short: "List, show and collect the checkpoints of what tool calls changed",
		Long: `Every tool call that changes files of the workspace (write_file, edit_file,
execute_command, a local MCP server's tool), made by an agent session, an app
or an MCP client, is recorded as a checkpoint in .nexus/history.git (never in
the workspace's own .git). Undo them with 'nexus undo', redo with 'nexus redo'.`,
		Args: cobra.ArbitraryArgs,
		RunE: needVerb,
	}
	var session, turn string
	var limit int32
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the checkpoints, newest first",
		Args:  argsBetween(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case turn != "" && session == "":
				return usagef("--turn needs --session: the session whose turn to list")
			case limit < 0:
				return usagef("--limit must not be negative")
			}
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				resp, err := t.ListCheckpoints(ctx, &nexusv1.ListCheckpointsRequest{Session: session, Turn: turn, Limit: limit})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error { return checkpointTable(w, resp) })
			})
		},
	}
	ls.Flags().StringVar(&session, "session", "", "only the checkpoints of session `ID` (an agent session, app:<id>, mcp:<session>)")
	ls.Flags().StringVar(&turn, "turn", "", "only turn `T` of --session")
	ls.Flags().Int32Var(&limit, "limit", 0, "at most `N` checkpoints, the newest (default all)")
	diff := &cobra.Command{
		Use:   "diff ID",
		Short: "Show what a checkpoint changed, as a unified diff",
		Args:  argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				resp, err := t.GetCheckpointDiff(ctx, &nexusv1.GetCheckpointDiffRequest{Id: args[0]})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					fmt.Fprintln(w, checkpointTitle(resp.GetCheckpoint()))
					for _, f := range resp.GetFiles() {
						if f.GetBinary() {
							fmt.Fprintf(w, "Binary file %s %s\n", inert.Line(f.GetFile().GetPath()), f.GetFile().GetAction())
							continue
						}
						writeDiff(w, f.GetDiff(), isTerminal(e.stdout))
					}
					for _, s := range resp.GetCheckpoint().GetSkipped() {
						fmt.Fprintf(w, "skipped %s: %s\n", inert.Line(s.GetPath()), inert.Line(s.GetReason()))
					}
					return nil
				})
			})
		},
	}
	gc := &cobra.Command{
		Use:   "gc",
		Short: "Prune the oldest sessions' checkpoints down to checkpoints.maxStoreSize",
		Args:  argsBetween(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				resp, err := t.CollectCheckpoints(ctx, &nexusv1.CollectCheckpointsRequest{})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "pruned %d checkpoints; %s → %s\n", resp.GetPruned(), bytesize.String(resp.GetBytesBefore()), bytesize.String(resp.GetBytesAfter()))
					return err
				})
			})
		},
	}
	cmd.AddCommand(ls, diff, gc)
	return cmd
}

// lastTurn is the value of a bare --turn: the last turn.
const lastTurn = "last"

// undoCommand is "nexus undo": restore what a call, a turn or a session
// changed.
func (e *env) undoCommand() *cobra.Command {
	var call, session, turn string
	var force bool
	cmd := &cobra.Command{
		Use:   "undo [--call ID | --turn[=T] | --session ID] [--force]",
		Short: "Restore the files a call, a turn or a session changed to what they were before",
		Long: `nexus undo restores the files that tool calls changed to what they were
before, and records the undo (nexus redo reverses it). Without a flag, or with
--turn, it undoes the last turn of the most recent session (of --session ID
when given); --turn=T undoes turn T of --session; --session ID alone the whole
session; --call ID one call.

A file changed since (by the person or anyone else) is a conflict: nothing is
changed, the conflicts are listed, and the exit status is 1. --force restores
anyway.`,
		Args: argsBetween(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &nexusv1.UndoCheckpointsRequest{Call: call, Session: session, Force: force}
			switch {
			case call != "" && (session != "" || turn != ""):
				return usagef("--call undoes one call: give it without --session or --turn")
			case turn == lastTurn || (call == "" && session == "" && turn == ""):
				req.LastTurn = true
			case turn != "" && session == "":
				return usagef("--turn=%s needs --session: the session whose turn to undo (a bare --turn is the last turn)", turn)
			default:
				req.Turn = turn
			}
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				return e.undone(t.UndoCheckpoints(ctx, req))
			})
		},
	}
	cmd.Flags().StringVar(&call, "call", "", "undo the checkpoint of tool call `ID` (or a unique prefix)")
	cmd.Flags().StringVar(&session, "session", "", "undo session `ID` (an agent session, app:<id>, mcp:<session>)")
	cmd.Flags().StringVar(&turn, "turn", "", "undo a turn: the last one, or turn `T` of --session with --turn=T")
	cmd.Flags().Lookup("turn").NoOptDefVal = lastTurn
	cmd.Flags().BoolVar(&force, "force", false, "restore files that changed since, too")
	return cmd
}

// redoCommand is "nexus redo": reverse an undo.
func (e *env) redoCommand() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "redo [ID] [--force]",
		Short: "Reverse an undo: the most recent that stands, or undo ID",
		Args:  argsBetween(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &nexusv1.RedoCheckpointsRequest{Force: force}
			if len(args) == 1 {
				req.Id = args[0]
			}
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				return e.undone(t.RedoCheckpoints(ctx, req))
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "restore files that changed since, too")
	return cmd
}

// errNothingChanged is the error of an undo or redo stopped by conflicts.
var errNothingChanged = errors.New("nothing was changed; --force restores anyway")

// undone prints what an undo or redo did: the files restored, or the
// conflicts, then errNothingChanged (exit 1).
func (e *env) undone(resp *nexusv1.UndoCheckpointsResponse, err error) error {
	if err != nil {
		return err
	}
	conflicted := len(resp.GetConflicts()) > 0 && resp.GetCheckpoint() == nil
	if err := e.output(resp, func(w io.Writer) error {
		if conflicted {
			fmt.Fprintln(w, "changed since the checkpoint:")
			for _, c := range resp.GetConflicts() {
				fmt.Fprintf(w, "  %s: %s\n", inert.Line(c.GetPath()), inert.Line(c.GetReason()))
			}
			return nil
		}
		if len(resp.GetRestored()) == 0 {
			_, err := fmt.Fprintln(w, "nothing to restore")
			return err
		}
		fmt.Fprintf(w, "restored %d file(s) (undo %s):\n", len(resp.GetRestored()), inert.Line(resp.GetCheckpoint().GetId()))
		for _, f := range resp.GetRestored() {
			fmt.Fprintf(w, "  %s %s\n", actionMark(f.GetAction()), inert.Line(f.GetPath()))
		}
		return nil
	}); err != nil {
		return err
	}
	if conflicted {
		return errNothingChanged
	}
	return nil
}

// checkpointTable prints checkpoints as a table.
func checkpointTable(w io.Writer, resp *nexusv1.ListCheckpointsResponse) error {
	list := resp.GetCheckpoints()
	ids := make([]string, len(list))
	for i, c := range list {
		ids[i] = c.GetId()
	}
	n := uniquePrefix(ids, 13) // a UUIDv7's millisecond
	tw := newTable(w)
	fmt.Fprintln(tw, "ID\tTIME\tSESSION\tTURN\tAUTHOR\tTOOL\tFILES\t")
	for _, c := range list {
		tool := c.GetToolName()
		if c.GetServerName() != "" {
			tool = c.GetServerName() + "/" + tool
		}
		if c.GetKind() != "call" {
			tool = c.GetKind()
		}
		mark := ""
		if c.GetUndoneBy() != "" {
			mark = "undone"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", inert.Line(prefix(c.GetId(), n)), c.GetTime().AsTime().Local().Format("2006-01-02 15:04:05"),
			inert.Line(c.GetSession()), inert.Line(c.GetTurn()), inert.Line(c.GetAuthor()), inert.Line(tool), fileCounts(c), mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if u := resp.GetUsage(); u != nil {
		fmt.Fprintf(w, "%d checkpoints in %d sessions, %s of %s\n", u.GetCheckpoints(), u.GetSessions(), bytesize.String(u.GetBytes()), bytesize.String(u.GetMaxBytes()))
	}
	return nil
}

// checkpointTitle is the line above a checkpoint's diff.
func checkpointTitle(c *nexusv1.Checkpoint) string {
	s := fmt.Sprintf("checkpoint %s: %s by %s, session %s", inert.Line(c.GetId()), inert.Line(c.GetToolName()), inert.Line(c.GetAuthor()), inert.Line(c.GetSession()))
	if c.GetKind() != "call" {
		s = fmt.Sprintf("checkpoint %s: %s by %s, session %s", inert.Line(c.GetId()), c.GetKind(), inert.Line(c.GetAuthor()), inert.Line(c.GetSession()))
	}
	if c.GetTurn() != "" {
		s += ", turn " + inert.Line(c.GetTurn())
	}
	if c.GetUndoneBy() != "" {
		s += " (undone by " + inert.Line(c.GetUndoneBy()) + ")"
	}
	return s
}

// fileCounts is "+added ~modified -deleted".
func fileCounts(c *nexusv1.Checkpoint) string {
	var add, mod, del int
	for _, f := range c.GetFiles() {
		switch f.GetAction() {
		case "added":
			add++
		case "deleted":
			del++
		default:
			mod++
		}
	}
	s := fmt.Sprintf("+%d ~%d -%d", add, mod, del)
	if n := len(c.GetSkipped()); n > 0 {
		s += fmt.Sprintf(" (%d skipped)", n)
	}
	return s
}

func actionMark(action string) string {
	switch action {
	case "added":
		return "+"
	case "deleted":
		return "-"
	}
	return "~"
}

// uniquePrefix is the shortest length, at least least, at which the ids
// differ from each other.
func uniquePrefix(ids []string, least int) int {
	for n := least; ; n++ {
		seen := map[string]bool{}
		long, dup := false, false
		for _, id := range ids {
			p := prefix(id, n)
			long = long || len(id) > n
			if seen[p] {
				dup = true
			}
			seen[p] = true
		}
		if !dup || !long {
			return n
		}
	}
}

func prefix(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// writeDiff writes a unified diff, every line inert; on a terminal the
// removed lines red, the added green and the hunk headers cyan.
func writeDiff(w io.Writer, diff string, colour bool) {
	for _, l := range policy.DiffLines(diff) {
		line := inert.Text(l.Text)
		if c := diffColours[l.Kind]; colour && c != "" {
			line = c + line + "\x1b[0m"
		}
		fmt.Fprintln(w, line)
	}
}

// diffColours are those of a question's change (changeColours), and bold
// for a file's headers.
var diffColours = func() map[policy.LineKind]string {
	m := maps.Clone(changeColours)
	m[policy.LineHeader] = "\x1b[1m"
	return m
}()
