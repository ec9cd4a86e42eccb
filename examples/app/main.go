// Command app is an example sandbox app on the Nexus gRPC API, the one
// `make demo` runs: copy it to start your own.
//
// It dials the workspace's nexusd over its unix socket with its own app
// token, so the daemon knows it as app "planner" and holds it to that
// app's grants in .nexus/config.yaml. It reads and writes its definitions
// (files under .nexus/definitions/planner/, each write a commit in the
// history), sets a runtime value, logs, and calls tools through
// ExecuteToolStream, printing each status change as it comes: initiated,
// running, completed or error. One call, a write_file, is one the policy
// asks the person about: it waits until the person answers, in the editor
// or at a terminal that runs `nexus calls --watch --answer`.
//
//	nexusd --workspace DIR &
//	nexus --workspace DIR calls --watch --answer &
//	go run ./examples/app --workspace DIR
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/workspace"
)

// appID is the app this program is: its token is the planner's, and the
// daemon holds it to the planner's grants (apps in .nexus/config.yaml).
const appID = "planner"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("app", flag.ContinueOnError)
	ws := fs.String("workspace", ".", "the workspace `DIR` whose nexusd to call")
	addr := fs.String("addr", "", "the daemon's gRPC `ADDRESS` (default: grpcAddress in DIR/.nexus/run/daemon.json)")
	tokenFile := fs.String("token-file", "", "the app's token `FILE` (default: DIR/.nexus/run/apps/planner.token, which nexusd writes)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil // the usage is printed
	} else if err != nil {
		return err
	}
	layout := workspace.NewLayout(absolute(*ws))
	if *addr == "" {
		var info workspace.DaemonInfo
		found, err := workspace.ReadJSONFile(layout.DaemonJSON, &info)
		switch {
		case err != nil:
			return fmt.Errorf("read %s: %w", layout.DaemonJSON, err)
		case !found:
			return fmt.Errorf("no nexusd runs in %s (no %s): start one with nexusd --workspace %s", layout.Workspace, layout.DaemonJSON, layout.Workspace)
		}
		*addr = info.GRPCAddress
	}
	if *tokenFile == "" {
		*tokenFile = layout.AppToken(appID)
	}
	token, err := os.ReadFile(*tokenFile)
	if err != nil {
		return fmt.Errorf("read the token of app %q: %w", appID, err)
	}
	if strings.TrimSpace(string(token)) == "" {
		return fmt.Errorf("the token file %s is empty", *tokenFile)
	}

	// Every call carries "authorization: Bearer <token>". The unix socket
	// needs no TLS; a TCP address does (grpc credentials/tls, with the
	// certificate named in daemon.json).
	conn, err := grpc.NewClient(*addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(bearer(strings.TrimSpace(string(token)))))
	if err != nil {
		return fmt.Errorf("daemon address %q: %w", *addr, err)
	}
	defer conn.Close()
	p := &planner{core: nexusv1.NewCoreFrameworkClient(conn), out: out}
	return p.work(ctx)
}

// planner is the app's work: its calls and what it prints of them.
type planner struct {
	core nexusv1.CoreFrameworkClient
	out  io.Writer
}

func (p *planner) work(ctx context.Context) error {
	// Definitions: paths are relative to the app's own root,
	// .nexus/definitions/planner/. Reading another app's files needs a grant.
	brief, err := p.core.GetDefinitionFileContent(ctx, &nexusv1.GetDefinitionFileContentRequest{Path: "brief.md"})
	if err != nil {
		return fmt.Errorf("read brief.md: %w", err)
	}
	p.say("read brief.md at %.7s: %q", brief.GetRevision(), firstLine(brief.GetContent()))

	plan := "# Today's plan\n\n1. Read the brief.\n2. Write this plan.\n3. Publish it for the reviewer.\n"
	set, err := p.core.SetDefinitionFileContent(ctx, &nexusv1.SetDefinitionFileContentRequest{
		Path: "plans/today.md", Content: plan, CommitMessage: "planner: today's plan"})
	if err != nil {
		return fmt.Errorf("write plans/today.md: %w", err)
	}
	p.say("wrote plans/today.md: commit %.7s", set.GetRevision())

	ls, err := p.core.ListDefinitionDirectory(ctx, &nexusv1.ListDefinitionDirectoryRequest{Path: "", Recursive: true})
	if err != nil {
		return fmt.Errorf("list my files: %w", err)
	}
	var names []string
	for _, e := range ls.GetEntries() {
		if e.GetType() == nexusv1.EntryType_FILE {
			names = append(names, e.GetPath())
		}
	}
	p.say("my files: %s", strings.Join(names, ", "))

	// Runtime values live in the app's own namespace, here for an hour.
	if _, err := p.core.SetRuntimeValue(ctx, &nexusv1.SetRuntimeValueRequest{Key: "current-step", Value: "3", TtlSeconds: 3600}); err != nil {
		return fmt.Errorf("set current-step: %w", err)
	}
	p.say("runtime current-step = 3 (for an hour)")

	// Logs go to the daemon's log, under the app's name.
	if _, err := p.core.LogMessage(ctx, &nexusv1.LogMessageRequest{Level: "info", Message: "plan written",
		Context: map[string]string{"revision": set.GetRevision()}}); err != nil {
		return fmt.Errorf("log: %w", err)
	}
	p.say("logged \"plan written\"")

	// Tool calls. The config's lists for this app decide each: allowed,
	// asked of the person, or denied. Core tools take paths relative to the
	// workspace root; the app's definitions are under .nexus/definitions/planner/.
	const planFile = ".nexus/definitions/planner/plans/today.md"
	calls := []struct {
		tool             string
		args             map[string]any
		intent, expected string // shown to the person when the call asks
	}{
		// allowed: a read
		{"get_current_time", map[string]any{}, "date the plan", "the time"},
		// allowed: the app reads its own definition file
		{"read_file", map[string]any{"path": planFile}, "check the plan as written", "the plan's three steps"},
		// asked: the app's lists say that every write_file asks the person
		{"write_file", map[string]any{"path": planFile, "content": plan + "4. Date it.\n"}, "add a step to the plan", "the plan has a fourth step"},
		// denied: this app runs no commands
		{"execute_command", map[string]any{"command": "ls"}, "list the workspace", "the names of the files"},
	}
	for _, c := range calls {
		if err := p.call(ctx, c.tool, c.args, c.intent, c.expected); err != nil {
			return err
		}
	}
	return nil
}

// call runs one tool through ExecuteToolStream and prints each status
// change as it comes. A call that ran and failed (denied, rejected, an
// error of the tool) is printed, not returned: the app goes on. Only a
// failure of the request itself (no daemon, a bad token) is an error.
func (p *planner) call(ctx context.Context, tool string, args map[string]any, intent, expected string) error {
	p.say("call %s", tool)
	argsJSON, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("call %s: %w", tool, err)
	}
	stream, err := p.core.ExecuteToolStream(ctx, &nexusv1.ExecuteToolRequest{ToolName: tool, ArgumentsJson: string(argsJSON),
		Intent: intent, ExpectedOutcome: expected})
	if err != nil {
		return fmt.Errorf("call %s: %w", tool, err)
	}
	for {
		c, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil // the last message was the final status
		}
		if err != nil {
			return fmt.Errorf("call %s: %w", tool, err)
		}
		line := "  " + c.GetStatus()
		switch {
		case c.GetStatus() == "initiated" && c.GetIcerc() != nil:
			line += ": waiting for the person's answer"
		case c.GetStatus() == "completed":
			line += ": " + clip(c.GetResultJson())
		case c.GetError() != nil:
			line += ": " + c.GetError().GetCode() + ": " + c.GetError().GetMessage()
		}
		p.say("%s", line)
	}
}

func (p *planner) say(format string, args ...any) {
	fmt.Fprintf(p.out, "planner: "+format+"\n", args...)
}

// bearer sends the app's token with every call.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity is false for the unix socket; over TCP, use TLS.
func (bearer) RequireTransportSecurity() bool { return false }

func absolute(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// clip shortens a result to one line of at most 100 bytes.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}
