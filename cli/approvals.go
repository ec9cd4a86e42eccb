package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexuscocreate/nexus/internal/inert"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// approvalsCommand is "nexus approvals": list (the default) and revoke the
// remembered "always" answers; "nexus perm ls|revoke" are the same verbs.
func (e *env) approvalsCommand() *cobra.Command {
	ls := e.approvalsLsCommand()
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List (the default) and revoke the remembered \"always\" answers",
		Args:  argsBetween(0, 0),
		RunE:  ls.RunE,
	}
	cmd.AddCommand(ls, e.approvalsRevokeCommand())
	return cmd
}

// approvalRow is one remembered answer as "nexus approvals --json" prints
// it: gRPC's Approval, with its scope spelled out.
type approvalRow struct {
	AppID string `json:"appId"`
	// ToolName is the answer's name, the tool's with its scope
	// ("execute_command:ls", "read_file:src/**", "execute_command:**").
	ToolName   string `json:"toolName"`
	ServerName string `json:"serverName"`
	Tool       string `json:"tool"`
	// Scope is command, path, directory, domain, tool or broad.
	Scope          string   `json:"scope"`
	Broad          bool     `json:"broad"`
	Command        []string `json:"command,omitempty"`
	Path           string   `json:"path,omitempty"`
	Directory      string   `json:"directory,omitempty"`
	Domain         string   `json:"domain,omitempty"`
	Covers         string   `json:"covers"`
	DefinitionHash string   `json:"definitionHash"`
	Allow          bool     `json:"allow"`
	Time           string   `json:"time"`
}

func approvalOf(a *nexusv1.Approval) approvalRow {
	r := approvalRow{AppID: a.GetAppId(), ToolName: a.GetToolName(), ServerName: a.GetServerName(), Tool: a.GetToolName(),
		Scope: "tool", DefinitionHash: a.GetDefinitionHash(), Allow: a.GetAllow(), Time: a.GetTime().AsTime().UTC().Format(time.RFC3339)}
	tool, s, err := policy.ParseName(a.GetToolName(), a.GetServerName())
	if err != nil {
		// A name this CLI cannot read (a newer daemon): shown as it is.
		r.Covers = "(unknown scope)"
		return r
	}
	p := policy.Approval{AppID: r.AppID, Tool: tool, Server: r.ServerName, Scope: s}
	r.Tool, r.Scope, r.Broad, r.Command, r.Path, r.Directory, r.Domain, r.Covers = tool, s.Kind(), s.Broad, s.Command, s.Path, s.Directory, s.Domain, p.Covers()
	return r
}

func (e *env) approvalsLsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the remembered \"always\" answers and what each covers",
		Args:  argsBetween(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				resp, err := t.ListApprovals(ctx, &nexusv1.ListApprovalsRequest{})
				if err != nil {
					return err
				}
				rows := make([]approvalRow, 0, len(resp.GetApprovals()))
				for _, a := range resp.GetApprovals() {
					rows = append(rows, approvalOf(a))
				}
				if e.json {
					b, err := json.Marshal(struct {
						Approvals []approvalRow `json:"approvals"`
					}{rows})
					if err != nil {
						return err
					}
					return e.writeJSONLine(b)
				}
				return printApprovals(e.stdout, rows)
			})
		},
	}
}

// printApprovals prints the answers as a table; a broad answer is marked
// BROAD and explained under the table.
func printApprovals(w io.Writer, rows []approvalRow) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "APP\tANSWER\tSCOPE\tREMEMBERED\tSINCE")
	broad := false
	for _, r := range rows {
		answer := "reject_always"
		if r.Allow {
			answer = "allow_always"
		}
		name := r.ToolName
		if r.ServerName != "" {
			name = r.ServerName + "/" + name
		}
		scope := r.Scope
		if r.Broad {
			scope, broad = "BROAD", true
		}
		since := r.Time
		if t, err := time.Parse(time.RFC3339, r.Time); err == nil {
			since = t.Local().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", inert.Line(orDash(r.AppID)), answer, scope, inert.Line(name), since)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if broad {
		_, err := fmt.Fprintln(w, "\nBROAD: remembered before answers had scopes; it covers every call of the tool, any command or path.\n"+
			"Forget it with: nexus approvals revoke TOOL:** --app ID (the next such call asks again).")
		return err
	}
	return nil
}

func (e *env) approvalsRevokeCommand() *cobra.Command {
	var app, server string
	revoke := &cobra.Command{
		Use:   "revoke NAME --app ID",
		Short: "Forget remembered answers: NAME is a tool (every answer about it) or a name from ls (\"execute_command:ls\", \"execute_command:**\")",
		Args:  argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				resp, err := t.RevokeApproval(ctx, &nexusv1.RevokeApprovalRequest{AppId: app, ToolName: args[0], ServerName: server})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					if resp.GetRevoked() {
						_, err := fmt.Fprintln(w, "revoked")
						return err
					}
					_, err := fmt.Fprintln(w, "nothing remembered")
					return err
				})
			})
		},
	}
	revoke.Flags().StringVar(&app, "app", "", "the app `ID` (empty: the person's own answers)")
	revoke.Flags().StringVar(&server, "server", "", "the MCP server `NAME` of the tool")
	return revoke
}
