package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexuscocreate/nexus/internal/inert"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// toolsCommand is "nexus tools": list, describe and run tools.
func (e *env) toolsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List, describe and run tools",
		Args:  cobra.ArbitraryArgs,
		RunE:  needVerb,
	}
	var server string
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the tools",
		Args:  argsBetween(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				resp, err := t.ListTools(ctx, &nexusv1.ListToolsRequest{ServerName: server})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					tw := newTable(w)
					fmt.Fprintln(tw, "NAME\tSERVER\tKIND\tRISK\tHINTS\tDESCRIPTION")
					for _, d := range resp.GetTools() {
						srv := d.GetServerName()
						if srv == "" {
							srv = "core"
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", inert.Line(d.GetName()), inert.Line(srv), inert.Line(d.GetKind()), inert.Line(d.GetRisk()),
							hints(d.GetAnnotations()), inert.Line(firstSentence(d.GetDescription())))
					}
					return tw.Flush()
				})
			})
		},
	}
	ls.Flags().StringVar(&server, "server", "", "only the tools of MCP server `NAME`")
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Describe a tool, with its input and output schemas",
		Args:  argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				resp, err := t.GetToolDefinition(ctx, &nexusv1.GetToolDefinitionRequest{Name: args[0], ServerName: server})
				if err != nil {
					return err
				}
				if !resp.GetFound() {
					return fmt.Errorf("no tool %q", args[0])
				}
				return e.output(resp, func(w io.Writer) error {
					d := resp.GetTool()
					fmt.Fprintf(w, "%s (%s, risk %s, hints %s)\n%s\n\ninput schema:\n%s\n", inert.Line(d.GetName()), inert.Line(d.GetKind()), inert.Line(d.GetRisk()),
						hints(d.GetAnnotations()), inert.Text(d.GetDescription()), inert.Text(indentJSON(d.GetInputSchemaJson())))
					if d.GetOutputSchemaJson() != "" {
						fmt.Fprintf(w, "\noutput schema:\n%s\n", inert.Text(indentJSON(d.GetOutputSchemaJson())))
					}
					return nil
				})
			})
		},
	}
	show.Flags().StringVar(&server, "server", "", "the MCP server `NAME` of the tool")
	var argsJSON, app, intent, elicit string
	run := &cobra.Command{
		Use:   "run NAME [--args JSON]",
		Short: "Run a tool and show its status changes live",
		Long: `Run a tool and show its status changes live (on stderr; the result on stdout).

When the tool's MCP server asks the person something during the call (an
elicitation: a form, or an address to visit), --elicit says who answers:
  ask              this terminal, field by field (Enter takes the default);
                   the default when stdin is a terminal
  editor           the editor attached to the daemon, as for an app's call,
                   and declined when there is none; the default otherwise
  accept-defaults  every form accepted with its defaults (a form with a
                   required field without one, and an address, declined)
  decline          every question declined`,
		Args: argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if argsJSON == "" {
				argsJSON = "{}"
			}
			if !json.Valid([]byte(argsJSON)) {
				return usagef("--args is not valid JSON")
			}
			switch elicit {
			case "":
				elicit = elicitEditor
				if isTerminal(e.stdin) {
					elicit = elicitAsk
				}
			case elicitAsk, elicitEditor, elicitDefaults, elicitDecline:
			default:
				return usagef("--elicit is ask, editor, accept-defaults or decline, not %q", elicit)
			}
			return e.callTools(cmd.Context(), func(ctx context.Context, _ nexusv1.ToolManagerClient, c nexusv1.CoreFrameworkClient) error {
				stream, err := c.ExecuteToolStream(ctx, &nexusv1.ExecuteToolRequest{ToolName: args[0], ServerName: server,
					ArgumentsJson: argsJSON, RequestingAppId: app, Intent: intent, AskElicitation: elicit != elicitEditor})
				if err != nil {
					return err
				}
				q := &callQuestions{e: e, c: c, ctx: ctx, mode: elicit}
				msgs := make(chan streamCall)
				go func() {
					for {
						call, err := stream.Recv()
						select {
						case msgs <- streamCall{call, err}:
						case <-ctx.Done():
							return
						}
						if err != nil {
							return
						}
					}
				}()
				var last *nexusv1.ToolCall
				for {
					var call *nexusv1.ToolCall
					select {
					case m := <-msgs:
						call, err = m.call, m.err
					case line, ok := <-q.answers():
						q.feed(line, !ok)
						continue
					}
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						return err
					}
					if el := call.GetElicitation(); el != nil {
						if e.json {
							if err := e.printJSON(call); err != nil {
								return err
							}
						}
						q.handle(call, el)
						continue
					}
					last = call
					if e.json {
						if err := e.printJSON(call); err != nil {
							return err
						}
						continue
					}
					line := fmt.Sprintf("%s %s %s", inert.Line(call.GetToolCallId()), toolLabel(call), inert.Line(call.GetStatus()))
					if p := call.GetProgress(); p != nil {
						line += fmt.Sprintf(" (%g/%g %s)", p.GetProgress(), p.GetTotal(), inert.Line(p.GetMessage()))
					}
					fmt.Fprintln(e.stderr, line)
				}
				if last == nil {
					return errors.New("the daemon sent no status")
				}
				if last.GetStatus() == "error" {
					if !e.json && last.GetResultJson() != "" {
						fmt.Fprintln(e.stdout, inert.Text(indentJSON(last.GetResultJson())))
					}
					return fmt.Errorf("%s: %s", last.GetError().GetCode(), last.GetError().GetMessage()) // inert when printed (errorMessage)
				}
				if !e.json {
					fmt.Fprintln(e.stdout, inert.Text(indentJSON(last.GetResultJson())))
				}
				return nil
			})
		},
	}
	run.Flags().StringVar(&argsJSON, "args", "", "the arguments, a JSON object")
	run.Flags().StringVar(&server, "server", "", "the MCP server `NAME` of the tool")
	run.Flags().StringVar(&app, "app", "", "run with the rules of app `ID`")
	run.Flags().StringVar(&intent, "intent", "", "why the call is made, shown when permission is asked")
	run.Flags().StringVar(&elicit, "elicit", "", "who answers the MCP server's questions: `ask`, editor, accept-defaults or decline (see above)")
	cmd.AddCommand(ls, show, run)
	return cmd
}

// callsCommand is "nexus calls": the recent tool calls, or a live view.
func (e *env) callsCommand() *cobra.Command {
	var watch, answer bool
	var app, status string
	var limit int32
	cmd := &cobra.Command{
		Use:   "calls [--watch [--answer]]",
		Short: "List the recent tool calls, or watch them live",
		Long: `List the recent tool calls, or with --watch show every status change live,
until interrupted.

With --answer besides, this terminal answers the person's permission
questions while it watches: an app's call that the policy asks about, or
one of an agent whose own terminal or editor does not answer, is shown here
(who asks, what runs, the risk, what "always" would remember) and waits for
a line: y (allow once), a (always), n (reject once) or N (never). The
terminal attached last is asked before the editor. Only the admin token
attaches: apps never answer. Every question comes here, whatever --app
limits the watch to.

On a terminal a line counts only while a question is shown. From a pipe the
lines answer the questions in order, one each, so a script answers exactly
as many as it has lines for:
  echo y | nexus calls --watch --answer
When stdin ends and its lines are used up, the open questions are declined
and the terminal stops answering; the watch goes on.`,
		Args: argsBetween(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if answer && !watch {
				return usagef("--answer needs --watch: questions are answered while the calls are watched")
			}
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				if answer {
					return e.watchAnswering(ctx, t, app)
				}
				if watch {
					stream, err := t.WatchToolCalls(ctx, &nexusv1.WatchToolCallsRequest{AppId: app})
					if err != nil {
						return err
					}
					for {
						call, err := stream.Recv()
						if err != nil {
							if ctx.Err() != nil {
								return nil
							}
							return err
						}
						if e.json {
							if err := e.printJSON(call); err != nil {
								return err
							}
							continue
						}
						fmt.Fprintln(e.stdout, callLine(call))
					}
				}
				resp, err := t.ListToolCalls(ctx, &nexusv1.ListToolCallsRequest{AppId: app, Status: status, Limit: limit})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					tw := newTable(w)
					fmt.Fprintln(tw, "ID\tSTARTED\tAPP\tTOOL\tSTATUS\tERROR")
					for _, c := range resp.GetToolCalls() {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", inert.Line(c.GetToolCallId()), c.GetStartedAt().AsTime().Local().Format(time.RFC3339),
							inert.Line(orDash(c.GetAppId())), toolLabel(c), inert.Line(c.GetStatus()), inert.Line(c.GetError().GetCode()))
					}
					return tw.Flush()
				})
			})
		},
	}
	cmd.Flags().BoolVar(&watch, "watch", false, "stream every status change until interrupted")
	cmd.Flags().BoolVar(&answer, "answer", false, "with --watch: answer the person's permission questions here, a line of stdin each (see above)")
	cmd.Flags().StringVar(&app, "app", "", "only the calls of app `ID`")
	cmd.Flags().StringVar(&status, "status", "", "only calls with this `STATUS`")
	cmd.Flags().Int32Var(&limit, "limit", 50, "at most `N` calls")
	return cmd
}

// callLine is a call on one inert line: an MCP server names its tools and
// writes its errors.
func callLine(c *nexusv1.ToolCall) string {
	line := fmt.Sprintf("%s %s %s %s", inert.Line(c.GetToolCallId()), inert.Line(orDash(c.GetAppId())), toolLabel(c), inert.Line(c.GetStatus()))
	if c.GetStatus() == "initiated" && c.GetIcerc() != nil {
		line += " (asks the person)" // the policy said ask: the record is set before the question goes out
	}
	if e := c.GetError(); e != nil {
		line += fmt.Sprintf(" %s: %s", inert.Line(e.GetCode()), inert.Line(e.GetMessage()))
	}
	return line
}

// toolLabel is "server/tool" or "tool", inert.
func toolLabel(c *nexusv1.ToolCall) string {
	return inert.Line(toolName(c.GetServerName(), c.GetToolName()))
}

// permCommand is "nexus perm": check the policy, list and revoke the
// remembered answers.
func (e *env) permCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "perm",
		Short: "Check permissions and manage remembered answers",
		Args:  cobra.ArbitraryArgs,
		RunE:  needVerb,
	}
	var app string
	check := &cobra.Command{
		Use:   "check TOOL [RESOURCE]",
		Short: "Say whether an app may call a tool: allow, ask or deny, and why",
		Args:  argsBetween(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			resource := ""
			if len(args) == 2 {
				resource = args[1]
			}
			return e.call(cmd.Context(), func(ctx context.Context, c nexusv1.CoreFrameworkClient) error {
				resp, err := c.CheckPermission(ctx, &nexusv1.CheckPermissionRequest{AppId: app, Action: args[0], Resource: resource})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "%s: %s\n", resp.GetDecision(), resp.GetReason())
					return err
				})
			})
		},
	}
	check.Flags().StringVar(&app, "app", "", "the app `ID` (default: the person at the terminal)")
	cmd.AddCommand(check, e.approvalsLsCommand(), e.approvalsRevokeCommand())
	return cmd
}

func firstSentence(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if i := strings.Index(s, ". "); i > 0 {
		s = s[:i+1]
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func indentJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// hints is a tool's MCP annotations in a few words: "read-only",
// "destructive, idempotent", "open-world", "additive" for a tool that
// neither reads only nor destroys, and "-" when it gives none. MCP's
// idempotent and destructive mean nothing for a read-only tool, so they
// are not said then.
func hints(a *nexusv1.ToolAnnotations) string {
	if a == nil {
		return "-"
	}
	var h []string
	switch {
	case a.GetReadOnly():
		h = append(h, "read-only")
	case a.GetDestructive():
		h = append(h, "destructive")
	default:
		h = append(h, "additive")
	}
	if a.GetIdempotent() && !a.GetReadOnly() {
		h = append(h, "idempotent")
	}
	if a.GetOpenWorld() {
		h = append(h, "open-world")
	}
	return strings.Join(h, ", ")
}
