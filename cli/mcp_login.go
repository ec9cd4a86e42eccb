package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexuscocreate/nexus/internal/inert"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// Signing in to the MCP servers that ask for it (OAuth).

func (e *env) mcpLoginCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "login NAME",
		Short: "Sign in to an MCP server that asks for it (OAuth), in your browser",
		Long: `Sign in to an http MCP server that needs you to (state needs_auth), with
OAuth: nexusd finds the server's authorization server, registers itself if it
must, and prints the URL to open as a line "open: URL". With $BROWSER set, it
runs "$BROWSER URL" (a program, not a shell command). Sign in and approve in
the browser: it comes back to nexusd on 127.0.0.1, which keeps the tokens in
.nexus/mcp-auth (0600, out of every tool call's reach) and connects the server.

Waits until you have signed in (exit 0), or the sign-in failed, was refused or
timed out (exit 1, saying why). Ctrl-C cancels it.`,
		Args: argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				stream, err := t.LoginMcpServer(ctx, &nexusv1.LoginMcpServerRequest{Name: args[0]})
				if err != nil {
					return err
				}
				for {
					ev, err := stream.Recv()
					if errors.Is(err, io.EOF) {
						return fmt.Errorf("the daemon ended the sign-in to %s without saying it was done", args[0])
					}
					if err != nil {
						return err
					}
					if u := ev.GetAuthorizationUrl(); u != "" {
						if err := e.openAuthorizationURL(ev, u); err != nil {
							return err
						}
						continue
					}
					if done := ev.GetDone(); done != nil {
						return e.output(ev, func(w io.Writer) error {
							_, err := fmt.Fprintf(w, "signed in to %s (%s)\n", args[0], describeState(done.GetServer()))
							return err
						})
					}
				}
			})
		},
	}
}

// openAuthorizationURL prints the URL as "open: URL" (or the event, with
// --json) and has $BROWSER open it.
func (e *env) openAuthorizationURL(ev *nexusv1.LoginMcpServerEvent, u string) error {
	if e.json {
		if err := e.printJSON(ev); err != nil {
			return err
		}
	} else if _, err := fmt.Fprintf(e.stdout, "open: %s\n", inert.Line(u)); err != nil {
		return err
	}
	browser := os.Getenv("BROWSER")
	if browser == "" {
		fmt.Fprintln(e.stderr, "nexus: open that URL in your browser and sign in; waiting (Ctrl-C cancels)")
		return nil
	}
	fmt.Fprintf(e.stderr, "nexus: opening it with $BROWSER (%s); waiting for the sign-in (Ctrl-C cancels)\n", browser)
	// A program and the URL, not a shell command line: the URL comes from
	// the server.
	b := exec.Command(browser, u)
	b.Stdin, b.Stdout, b.Stderr = nil, e.stderr, e.stderr
	if err := b.Start(); err != nil {
		fmt.Fprintf(e.stderr, "nexus: $BROWSER did not start (%v): open the URL yourself\n", err)
		return nil
	}
	go func() {
		if err := b.Wait(); err != nil {
			fmt.Fprintf(e.stderr, "nexus: $BROWSER %v: open the URL yourself if the sign-in does not go on\n", err)
		}
	}()
	return nil
}

func (e *env) mcpLogoutCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "logout NAME",
		Short: "Delete the tokens of an MCP server you signed in to, and disconnect it",
		Args:  argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				resp, err := t.LogoutMcpServer(ctx, &nexusv1.LogoutMcpServerRequest{Name: args[0]})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					msg := "signed out of %s: its tokens are deleted\n"
					if !resp.GetSignedOut() {
						msg = "%s had no tokens\n"
					}
					_, err := fmt.Fprintf(w, msg, args[0])
					return err
				})
			})
		},
	}
}

// describeState is a server's state as the person reads it, inert.
func describeState(s *nexusv1.McpServer) string {
	state := s.GetState()
	switch {
	case s.GetLazy() && state == "disabled":
		return "lazy: it starts at its first call"
	case state == "ready":
		return fmt.Sprintf("ready, %d tools", s.GetToolCount())
	case s.GetError() != "":
		return inert.Line(state + ": " + s.GetError())
	}
	return inert.Line(state)
}

// oauthLine is the oauth block of an entry as printLaunch shows it: its
// keys as key=value, secrets by the names of their variables.
func oauthLine(o *nexusv1.McpOAuth) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+policy.ShellWord(v))
		}
	}
	add("grant", o.GetGrant())
	add("clientId", o.GetClientId())
	add("clientSecretEnv", o.GetClientSecretEnv())
	add("privateKeyEnv", o.GetPrivateKeyEnv())
	add("signingAlgorithm", o.GetSigningAlgorithm())
	add("scopes", strings.Join(o.GetScopes(), " "))
	add("clientMetadataUrl", o.GetClientMetadataUrl())
	if p := o.GetRedirectPort(); p != 0 {
		add("redirectPort", strconv.Itoa(int(p)))
	}
	if p := o.GetIdp(); p != nil {
		add("idp.issuer", p.GetIssuer())
		add("idp.tokenEndpoint", p.GetTokenEndpoint())
		add("idp.clientId", p.GetClientId())
		add("idp.clientSecretEnv", p.GetClientSecretEnv())
		add("idp.idTokenEnv", p.GetIdTokenEnv())
		// idp.idTokenCommand has a line of its own (printLaunch).
	}
	return strings.Join(parts, " ")
}
