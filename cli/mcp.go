package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/internal/inert"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// mcpCommand is "nexus mcp": the MCP servers of the workspace, their
// resources and prompts.
func (e *env) mcpCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "List, approve, sign in to and restart MCP servers, read their resources and prompts",
		Long: `List, approve, sign in to and restart the MCP servers of the workspace, read
their resources and render their prompts. Servers are configured in
.nexus/mcp.json, .vscode/mcp.json or .mcp.json; their tools are in "nexus tools
ls". A server runs only once you have approved its entry ("nexus mcp trust");
until then, and again after its command, args, env, url or oauth block change,
it is pending_approval. An http server that needs you to sign in is needs_auth:
"nexus mcp login" signs in.`,
		Args: cobra.ArbitraryArgs,
		RunE: needVerb,
	}
	cmd.AddCommand(e.mcpLsCommand(), e.mcpTrustCommand(), e.mcpRestartCommand(), e.mcpResourcesCommand(), e.mcpPromptsCommand(),
		e.mcpLoginCommand(), e.mcpLogoutCommand())
	return cmd
}

func (e *env) mcpLsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the MCP servers, their state and their last error",
		Args:  argsBetween(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				resp, err := t.ListMcpServers(ctx, &nexusv1.ListMcpServersRequest{})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					if len(resp.GetServers()) == 0 {
						_, err := fmt.Fprintln(w, "no MCP servers: configure them in .nexus/mcp.json, .vscode/mcp.json or .mcp.json")
						return err
					}
					return printServers(w, resp.GetServers())
				})
			})
		},
	}
}

// printServers prints a table of servers, each followed by its error on an
// indented line of its own. The rows are aligned first, as one block, so
// that the error lines do not break the columns.
func printServers(w io.Writer, servers []*nexusv1.McpServer) error {
	var buf bytes.Buffer
	tw := newTable(&buf)
	fmt.Fprintln(tw, "NAME\tSTATE\tTOOLS\tTRANSPORT\tSOURCE\tRESTARTS")
	for _, s := range servers {
		state, tools := s.GetState(), "-"
		if s.GetLazy() && state == "disabled" {
			state = "lazy"
		}
		if state == "ready" {
			tools = fmt.Sprint(s.GetToolCount())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", inert.Line(s.GetName()), inert.Line(state), tools, inert.Line(orDash(s.GetTransport())),
			inert.Line(orDash(s.GetSource())), s.GetRestarts())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	rows := strings.SplitAfter(buf.String(), "\n")
	var out strings.Builder
	out.WriteString(rows[0])
	for i, s := range servers {
		out.WriteString(rows[i+1])
		if msg := strings.TrimSpace(s.GetError()); msg != "" {
			out.WriteString("    " + strings.ReplaceAll(inert.Text(msg), "\n", "\n    ") + "\n")
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
}

func (e *env) mcpTrustCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "trust NAME | --all",
		Short: "Show what an MCP server entry runs and approve it, so that it starts",
		Long: `Show what the entry of an MCP server runs — command, args, cwd, env and the
variables it inherits, or url and headers — and approve exactly that: the
approval is pinned to those values (kept in .nexus/mcp-trust.json), and a
later change of any of them makes the server wait for approval again.
--all approves every server waiting for approval, showing each.

A server waiting for approval runs nothing, not even when its tools are called:
an entry written by a tool call, or cloned with the repository, runs only once
you have seen it here.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if all {
				return argsBetween(0, 0)(cmd, args)
			}
			return argsBetween(1, 1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				list, err := t.ListMcpServers(ctx, &nexusv1.ListMcpServersRequest{})
				if err != nil {
					return err
				}
				var todo []*nexusv1.McpServer
				for _, s := range list.GetServers() {
					if all && s.GetState() == "pending_approval" || !all && s.GetName() == args[0] {
						todo = append(todo, s)
					}
				}
				if !all && len(todo) == 0 {
					return status.Errorf(codes.NotFound, "no MCP server named %q is configured: servers are configured in .nexus/mcp.json, .vscode/mcp.json or .mcp.json", args[0])
				}
				trusted := &nexusv1.ListMcpServersResponse{}
				for _, s := range todo {
					if !e.json {
						if err := printLaunch(e.stdout, s); err != nil {
							return err
						}
					}
					if s.GetTrusted() {
						trusted.Servers = append(trusted.Servers, s)
						if !e.json {
							fmt.Fprintf(e.stdout, "%s is already approved\n", inert.Line(s.GetName()))
						}
						continue
					}
					// The pin of what was shown: if the entry changed in
					// between, the daemon refuses.
					resp, err := t.TrustMcpServer(ctx, &nexusv1.TrustMcpServerRequest{Name: s.GetName(), Pin: s.GetPin()})
					if err != nil {
						return err
					}
					trusted.Servers = append(trusted.Servers, resp.GetServer())
					if !e.json {
						state := resp.GetServer().GetState()
						if resp.GetServer().GetLazy() && state == "disabled" {
							state = "lazy: it starts at its first call"
						}
						fmt.Fprintf(e.stdout, "approved %s (%s)\n", inert.Line(s.GetName()), inert.Line(state))
					}
				}
				if e.json {
					return e.printJSON(trusted)
				}
				if all && len(todo) == 0 {
					_, err := fmt.Fprintln(e.stdout, "no MCP server waits for approval")
					return err
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "approve every server waiting for approval")
	return cmd
}

// printLaunch shows what a server's entry runs, as the person approves it.
// Every value is the entry's (a file's) and shown inert: a word of a
// command with a control character is written as bash's $'…'
// (policy.ShellWord), any other value escaped (inert.Line), so an entry
// cannot show one command and pin another.
func printLaunch(w io.Writer, s *nexusv1.McpServer) error {
	l := s.GetLaunch()
	var b strings.Builder
	fmt.Fprintf(&b, "MCP server %s (%s, %s)\n", inert.Line(s.GetName()), inert.Line(orDash(s.GetSource())), inert.Line(orDash(l.GetTransport())))
	field := func(name, value string) {
		if name != "" {
			name += ":"
		}
		fmt.Fprintf(&b, "  %-9s %s\n", name, inert.Line(value))
	}
	pairs := func(name string, m map[string]string) {
		for i, k := range slices.Sorted(maps.Keys(m)) {
			if i > 0 {
				name = ""
			}
			field(name, inert.Line(k)+"="+policy.ShellWord(m[k]))
		}
	}
	if l.GetTransport() == "http" {
		field("url", l.GetUrl())
		pairs("headers", l.GetHeaders())
		if o := l.GetOauth(); o != nil {
			field("oauth", oauthLine(o))
			if argv := o.GetIdp().GetIdTokenCommand(); len(argv) > 0 {
				// A command the hub runs for the ID token (oauth.idp).
				field("id token", commandLine(argv))
			}
		}
	} else {
		field("command", commandLine(append([]string{l.GetCommand()}, l.GetArgs()...)))
		field("cwd", l.GetCwd())
		pairs("env", l.GetEnv())
		if len(l.GetInheritEnv()) > 0 {
			field("inherits", commandLine(l.GetInheritEnv()))
		}
	}
	field("pin", s.GetPin())
	_, err := io.WriteString(w, b.String())
	return err
}

// commandLine is argv as a shell would read it, inert (policy.ShellWord).
func commandLine(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = policy.ShellWord(a)
	}
	return strings.Join(words, " ")
}

func (e *env) mcpRestartCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "restart NAME",
		Short: "Stop an MCP server and start it again, also a failed or lazy one",
		Args:  argsBetween(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				resp, err := t.RestartMcpServer(ctx, &nexusv1.RestartMcpServerRequest{Name: args[0]})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "restarting %s\n", args[0])
					return err
				})
			})
		},
	}
}

func (e *env) mcpResourcesCommand() *cobra.Command {
	var uri string
	var templates bool
	var subscribe []string
	cmd := &cobra.Command{
		Use:   "resources [SERVER] [--read URI | --templates | --subscribe URI...]",
		Short: "List the resources of the ready MCP servers, read one, or watch it",
		Long: `List the resources of an MCP server, or of every ready one without SERVER.

With --read, print the contents of a resource of SERVER: text as it is, and
for binary contents the file under .nexus/mcp/blobs they were written to.
--json prints the contents as a JSON array.

With --templates, list the resource templates (URI templates such as
file:///{path}) instead of the resources.

With --subscribe (repeatable), subscribe to resources of SERVER and print a
line each time the server says one changed, and when its lists of tools,
resources or prompts change, until interrupted (Ctrl-C); the subscription
ends with the command. --json prints each change as a JSON line.`,
		Args: argsBetween(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var server string
			if len(args) == 1 {
				server = args[0]
			}
			modes := 0
			for _, on := range []bool{uri != "", templates, len(subscribe) > 0} {
				if on {
					modes++
				}
			}
			switch {
			case modes > 1:
				return usagef("--read, --templates and --subscribe go one at a time")
			case uri != "" && server == "":
				return usagef("--read needs the SERVER of the resource")
			case len(subscribe) > 0 && server == "":
				return usagef("--subscribe needs the SERVER of the resource")
			}
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				switch {
				case uri != "":
					resp, err := t.ReadMcpResource(ctx, &nexusv1.ReadMcpResourceRequest{ServerName: server, Uri: uri})
					if err != nil {
						return err
					}
					if e.json {
						return e.writeJSONLine([]byte(resp.GetContentsJson()))
					}
					return e.printContents(resp.GetContentsJson())
				case templates:
					resp, err := t.ListMcpResourceTemplates(ctx, &nexusv1.ListMcpResourceTemplatesRequest{ServerName: server})
					if err != nil {
						return err
					}
					return e.output(resp, func(w io.Writer) error {
						tw := newTable(w)
						fmt.Fprintln(tw, "SERVER\tURI TEMPLATE\tNAME\tMIME TYPE\tDESCRIPTION")
						for _, r := range resp.GetTemplates() {
							fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", inert.Line(r.GetServerName()), inert.Line(r.GetUriTemplate()), inert.Line(orDash(r.GetName())),
								inert.Line(orDash(r.GetMimeType())), inert.Line(firstSentence(r.GetDescription())))
						}
						return tw.Flush()
					})
				case len(subscribe) > 0:
					return e.watchMcp(ctx, t, server, subscribe)
				}
				resp, err := t.ListMcpResources(ctx, &nexusv1.ListMcpResourcesRequest{ServerName: server})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					tw := newTable(w)
					fmt.Fprintln(tw, "SERVER\tURI\tNAME\tMIME TYPE\tDESCRIPTION")
					for _, r := range resp.GetResources() {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", inert.Line(r.GetServerName()), inert.Line(r.GetUri()), inert.Line(orDash(r.GetName())),
							inert.Line(orDash(r.GetMimeType())), inert.Line(firstSentence(r.GetDescription())))
					}
					return tw.Flush()
				})
			})
		},
	}
	cmd.Flags().StringVar(&uri, "read", "", "print the contents of the resource `URI`")
	cmd.Flags().BoolVar(&templates, "templates", false, "list the resource templates")
	cmd.Flags().StringArrayVar(&subscribe, "subscribe", nil, "print the updates of the resource `URI` until interrupted (repeatable)")
	return cmd
}

// watchMcp subscribes to resources of a server and prints what changes
// until ctx ends (Ctrl-C). Once the subscriptions are in place it says so
// on stderr.
func (e *env) watchMcp(ctx context.Context, t nexusv1.ToolManagerClient, server string, uris []string) error {
	stream, err := t.WatchMcpChanges(ctx, &nexusv1.WatchMcpChangesRequest{ServerName: server, SubscribeUris: uris})
	if err != nil {
		return err
	}
	// Headers come once the subscriptions are in place; a stream that ends
	// without them has its error in Recv.
	md, err := stream.Header()
	if err != nil {
		return err
	}
	if md == nil {
		_, err := stream.Recv()
		return err
	}
	fmt.Fprintf(e.stderr, "subscribed to %s of %s: changes follow until interrupted\n", strings.Join(uris, ", "), server)
	for {
		c, err := stream.Recv()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if e.json {
			if err := e.printJSON(c); err != nil {
				return err
			}
			continue
		}
		what := c.GetKind() + " list changed"
		if c.GetKind() == "resource" {
			what = c.GetUri() + " updated"
		}
		if _, err := fmt.Fprintf(e.stdout, "%s %s %s\n", c.GetTime().AsTime().Local().Format("15:04:05"), inert.Line(c.GetServerName()), inert.Line(what)); err != nil {
			return err
		}
	}
}

// resourceContents is one item of ReadMcpResourceResponse.contents_json.
type resourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType"`
	Text     string `json:"text"`
	Bytes    int64  `json:"bytes"`
	Blob     string `json:"blob"`
}

// printContents prints text contents raw and says where binary contents
// were written, as a path the user can open from anywhere.
func (e *env) printContents(contentsJSON string) error {
	var items []resourceContents
	if err := json.Unmarshal([]byte(contentsJSON), &items); err != nil {
		return fmt.Errorf("the daemon sent contents that are not a JSON array: %w", err)
	}
	for _, c := range items {
		if c.Blob == "" {
			if _, err := io.WriteString(e.stdout, c.Text); err != nil {
				return err
			}
			continue
		}
		path := c.Blob
		if !filepath.IsAbs(path) {
			if ws, _, err := e.locateDaemon(); err == nil {
				path = filepath.Join(ws, path)
			}
		}
		if _, err := fmt.Fprintf(e.stdout, "%s: %d bytes of %s written to %s\n", inert.Line(c.URI), c.Bytes, inert.Line(orDash(c.MIMEType)), inert.Line(path)); err != nil {
			return err
		}
	}
	return nil
}

func (e *env) mcpPromptsCommand() *cobra.Command {
	var name string
	var pairs []string
	cmd := &cobra.Command{
		Use:   "prompts [SERVER] [--get NAME [--arg KEY=VALUE]...]",
		Short: "List the prompts of the ready MCP servers, or render one",
		Long: `List the prompts of an MCP server, or of every ready one without SERVER, with
their arguments; * marks a required argument.

With --get, render a prompt of SERVER with the --arg values and print its
messages, one "role: text" a message. --json prints the whole result.`,
		Args: argsBetween(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var server string
			if len(args) == 1 {
				server = args[0]
			}
			if name == "" && len(pairs) > 0 {
				return usagef("--arg needs --get NAME")
			}
			if name != "" && server == "" {
				return usagef("--get needs the SERVER of the prompt")
			}
			promptArgs, err := parsePairs("arg", pairs)
			if err != nil {
				return err
			}
			return e.callTools(cmd.Context(), func(ctx context.Context, t nexusv1.ToolManagerClient, _ nexusv1.CoreFrameworkClient) error {
				if name != "" {
					resp, err := t.GetMcpPrompt(ctx, &nexusv1.GetMcpPromptRequest{ServerName: server, Name: name, Arguments: promptArgs})
					if err != nil {
						return err
					}
					if e.json {
						return e.writeJSONLine([]byte(resp.GetResultJson()))
					}
					return printPrompt(e.stdout, resp.GetResultJson())
				}
				resp, err := t.ListMcpPrompts(ctx, &nexusv1.ListMcpPromptsRequest{ServerName: server})
				if err != nil {
					return err
				}
				return e.output(resp, func(w io.Writer) error {
					tw := newTable(w)
					fmt.Fprintln(tw, "SERVER\tNAME\tARGUMENTS\tDESCRIPTION")
					for _, p := range resp.GetPrompts() {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", inert.Line(p.GetServerName()), inert.Line(p.GetName()), inert.Line(promptArgNames(p.GetArgumentsJson())),
							inert.Line(firstSentence(p.GetDescription())))
					}
					return tw.Flush()
				})
			})
		},
	}
	cmd.Flags().StringVar(&name, "get", "", "render the prompt `NAME` and print its messages")
	cmd.Flags().StringArrayVar(&pairs, "arg", nil, "an argument of the prompt, `KEY=VALUE` (repeatable)")
	return cmd
}

// promptArgNames spells the arguments of a prompt, given as the JSON array
// [{name, description, required}], as "a*, b": * marks a required one.
func promptArgNames(argumentsJSON string) string {
	var args []struct {
		Name     string `json:"name"`
		Required bool   `json:"required"`
	}
	if json.Unmarshal([]byte(argumentsJSON), &args) != nil || len(args) == 0 {
		return "-"
	}
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = a.Name
		if a.Required {
			names[i] += "*"
		}
	}
	return strings.Join(names, ", ")
}

// promptContent is the content of a prompt message: text, image, audio, an
// embedded resource or a resource link. Binary data is base64 in Data (or
// Blob, for a resource) as the MCP server sent it, unless the daemon wrote it
// to a file: then Blob is the file and Bytes its size.
type promptContent struct {
	Type     string            `json:"type"`
	Text     string            `json:"text"`
	URI      string            `json:"uri"`
	MIMEType string            `json:"mimeType"`
	Data     string            `json:"data"`
	Bytes    *int64            `json:"bytes"`
	Blob     string            `json:"blob"`
	Resource *embeddedResource `json:"resource"`
}

type embeddedResource struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType"`
	Bytes    *int64 `json:"bytes"`
	Blob     string `json:"blob"`
}

// printPrompt prints the messages of a rendered prompt, {description,
// messages}, as "role: text", one a message; content other than text is
// summarised in brackets.
func printPrompt(w io.Writer, resultJSON string) error {
	var res struct {
		Messages []struct {
			Role    string        `json:"role"`
			Content promptContent `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(resultJSON), &res); err != nil {
		return fmt.Errorf("the daemon sent a prompt that is not JSON: %w", err)
	}
	for _, m := range res.Messages {
		if _, err := fmt.Fprintf(w, "%s: %s\n", inert.Line(m.Role), inert.Text(contentText(m.Content))); err != nil {
			return err
		}
	}
	return nil
}

// contentText is the text of a content, or a summary in brackets of what
// it holds: "[image: image/png, 1234 bytes]".
func contentText(c promptContent) string {
	if c.Type == "text" {
		return c.Text
	}
	data := c.Data
	if r := c.Resource; r != nil {
		c.URI, c.MIMEType, c.Bytes, c.Blob = r.URI, r.MIMEType, r.Bytes, r.Blob
	}
	if c.Bytes == nil { // Blob, if any, is the data itself
		data = cmp.Or(data, c.Blob)
	}
	var parts []string
	for _, s := range []string{c.URI, c.MIMEType} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	switch {
	case c.Bytes != nil:
		parts = append(parts, fmt.Sprintf("%d bytes in %s", *c.Bytes, c.Blob))
	case data != "":
		if b, err := base64.StdEncoding.DecodeString(data); err == nil {
			parts = append(parts, fmt.Sprintf("%d bytes", len(b)))
		}
	}
	kind := cmp.Or(c.Type, "content")
	if len(parts) == 0 {
		return "[" + kind + "]"
	}
	return "[" + kind + ": " + strings.Join(parts, ", ") + "]"
}
