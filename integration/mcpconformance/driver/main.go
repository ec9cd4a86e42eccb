// Command driver is the MCP client that the official MCP conformance suite
// (@modelcontextprotocol/conformance) runs to test Nexus's McpHub: it
// drives the real nexusd only through the nexus CLI. scripts/mcp-conformance.sh
// builds it and hands it to "conformance client --command".
//
// The suite runs it as "driver SERVER_URL" with the scenario in
// $MCP_CONFORMANCE_SCENARIO and, for some scenarios, a JSON object in
// $MCP_CONFORMANCE_CONTEXT (a pre-registered client, for instance). The
// driver makes a temporary workspace whose .nexus/mcp.json declares the
// suite's server, starts nexusd on it ($NEXUSD, else nexusd beside the
// driver), approves the server with "nexus mcp trust" ($NEXUS, else nexus
// beside the driver), does what the scenario's plan says (see [plans]:
// "nexus mcp login", "nexus tools ls", "nexus tools run", whose
// elicitations are accepted with the defaults) and stops nexusd
// with SIGTERM. It exits 0 when every step worked.
//
// "driver browse URL" is the browser that "nexus mcp login" runs: it GETs
// URL and follows the redirects, as a person's browser would, which takes
// the authorization code to nexusd's loopback listener.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("driver: ")
	if len(os.Args) == 3 && os.Args[1] == "browse" {
		if err := browse(os.Args[2]); err != nil {
			log.Fatal(err)
		}
		return
	}
	fs := flag.NewFlagSet("driver", flag.ExitOnError)
	timeout := fs.Duration("timeout", 50*time.Second, "give up after `d`; keep it below the suite's --timeout so that nexusd is stopped")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: MCP_CONFORMANCE_SCENARIO=NAME driver [-timeout D] SERVER_URL\n       driver browse URL")
		fs.PrintDefaults()
	}
	fs.Parse(os.Args[1:])
	if fs.NArg() != 1 {
		fs.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := run(ctx, os.Getenv("MCP_CONFORMANCE_SCENARIO"), fs.Arg(0), os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		log.Fatal(err)
	}
}

// run plays scenario against the suite's server at url.
func run(ctx context.Context, scenario, url, contextJSON string) error {
	p, ok := plans[scenario]
	if !ok {
		return fmt.Errorf("no plan for scenario %q (MCP_CONFORMANCE_SCENARIO): add it to the driver's plans", scenario)
	}
	sc, err := parseContext(contextJSON)
	if err != nil {
		return err
	}
	bins, err := binaries()
	if err != nil {
		return err
	}
	ws, err := os.MkdirTemp("", "nexus-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	cfg, env := workspaceConfig(p, url, sc)
	if err := writeWorkspace(ws, cfg); err != nil {
		return err
	}
	log.Printf("scenario %s: workspace %s, server %s", scenario, ws, url)

	d, err := startDaemon(ctx, bins, ws, env)
	if err != nil {
		return err
	}
	err = play(ctx, d, p)
	return errors.Join(err, d.stop())
}

// play does what plan p says with the daemon d, whose server waits for
// approval.
func play(ctx context.Context, d *daemon, p plan) error {
	if _, err := d.nexus(ctx, nil, "mcp", "trust", serverName); err != nil {
		return err
	}
	logins := 0
	var signedIn time.Time
	login := func() error {
		logins++
		err := d.login(ctx)
		signedIn = time.Now()
		return err
	}
	// signIn runs "nexus mcp login" while the server needs it and the plan
	// allows, and returns the state it settles in.
	signIn := func() (serverStatus, error) {
		for {
			st, err := d.settledAfter(ctx, signedIn)
			if err != nil || st.State != stateNeedsAuth || p.Grant != authorizationCode || logins == maxLogins {
				return st, err
			}
			if err := login(); err != nil {
				return st, err
			}
		}
	}
	st, err := signIn()
	if err != nil {
		return err
	}
	if st.State != stateReady {
		return fmt.Errorf("server %s is %s, not ready%s", serverName, st.State, suffix(st.Error))
	}
	if _, err := d.nexus(ctx, nil, "tools", "ls", "--server", serverName); err != nil {
		return err
	}
	if p.Tool == "" {
		return nil
	}
	// The suite's servers ask as the SDKs' conformance clients answer:
	// every form accepted with its defaults (SEP-1034).
	args := []string{"tools", "run", p.Tool, "--server", serverName, "--elicit", "accept-defaults"}
	if p.Args != "" {
		args = append(args, "--args", p.Args)
	}
	for {
		_, callErr := d.nexus(ctx, nil, args...)
		if callErr == nil {
			return nil
		}
		// Step-up authorization: the call needs more scopes than the
		// token has, and the server waits for another sign-in.
		if p.Grant != authorizationCode || logins == maxLogins {
			return callErr
		}
		st, err := d.status(ctx)
		if err != nil {
			return errors.Join(callErr, err)
		}
		if st.State != stateNeedsAuth && !strings.Contains(callErr.Error(), "nexus mcp login") {
			return callErr
		}
		if err := login(); err != nil {
			return err
		}
		if st, err = signIn(); err != nil {
			return err
		}
		if st.State != stateReady {
			return fmt.Errorf("server %s is %s after signing in again, not ready%s", serverName, st.State, suffix(st.Error))
		}
	}
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// bins are the paths of the programs the driver runs.
type bins struct {
	nexusd, nexus, self string
}

// binaries finds nexusd and nexus: $NEXUSD and $NEXUS, else beside the
// driver.
func binaries() (bins, error) {
	self, err := os.Executable()
	if err != nil {
		return bins{}, err
	}
	b := bins{nexusd: os.Getenv("NEXUSD"), nexus: os.Getenv("NEXUS"), self: self}
	if b.nexusd == "" {
		b.nexusd = filepath.Join(filepath.Dir(self), "nexusd")
	}
	if b.nexus == "" {
		b.nexus = filepath.Join(filepath.Dir(self), "nexus")
	}
	for _, p := range []string{b.nexusd, b.nexus} {
		if _, err := os.Stat(p); err != nil {
			return bins{}, fmt.Errorf("%w (set $NEXUSD and $NEXUS to the binaries)", err)
		}
	}
	return b, nil
}
