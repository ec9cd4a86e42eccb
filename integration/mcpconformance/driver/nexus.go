package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// States of "nexus mcp ls" that the driver acts on.
const (
	stateReady     = "ready"
	stateStarting  = "starting"
	stateNeedsAuth = "needs_auth"
	statePending   = "pending_approval"
)

// poll is how often the driver asks nexus for the server's state.
const poll = 50 * time.Millisecond

// authGrace is how long after "nexus mcp login" the driver waits for the
// server to leave needs_auth before it takes it as asking again.
const authGrace = 3 * time.Second

// writeWorkspace writes cfg to ws/.nexus/mcp.json.
func writeWorkspace(ws string, cfg mcpConfig) error {
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(ws, ".nexus"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(ws, ".nexus", "mcp.json"), append(data, '\n'), 0o644)
}

// A daemon is a nexusd the driver started, and the CLI that talks to it.
type daemon struct {
	bins   bins
	ws     string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

// startDaemon starts nexusd on ws with env added to the driver's
// environment, and waits until the CLI reaches it. Its output goes to the
// driver's stderr, which the suite keeps.
func startDaemon(ctx context.Context, b bins, ws string, env map[string]string) (*daemon, error) {
	d := &daemon{bins: b, ws: ws, exited: make(chan struct{})}
	d.cmd = exec.Command(b.nexusd, "--workspace", ws)
	d.cmd.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		d.cmd.Env = append(d.cmd.Env, k+"="+env[k])
	}
	d.cmd.Stdout, d.cmd.Stderr = os.Stderr, os.Stderr
	// Gone with the driver, even when the suite kills it at its timeout
	// (on Linux).
	d.cmd.SysProcAttr = daemonAttr()
	if err := d.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		d.err = d.cmd.Wait()
		close(d.exited)
	}()
	for {
		if _, _, err := d.run(ctx, nil, "--json", "mcp", "ls"); err == nil {
			return d, nil
		}
		select {
		case <-d.exited:
			return nil, fmt.Errorf("nexusd exited before it answered: %v", d.err)
		case <-ctx.Done():
			return nil, errors.Join(fmt.Errorf("nexusd did not answer: %w", ctx.Err()), d.stop())
		case <-time.After(poll):
		}
	}
}

// stop sends nexusd SIGTERM and waits for it to exit; an exit that is not
// clean is an error.
func (d *daemon) stop() error {
	select {
	case <-d.exited:
		return fmt.Errorf("nexusd exited by itself: %v", d.err)
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		if d.err != nil {
			return fmt.Errorf("nexusd exited with %v after SIGTERM", d.err)
		}
		return nil
	case <-time.After(10 * time.Second):
		d.cmd.Process.Kill()
		<-d.exited
		return errors.New("nexusd did not exit within 10s of SIGTERM; killed")
	}
}

// nexus runs the CLI on the workspace, logs the command line and its
// output, and returns its stdout; a failure is an error that holds its
// stderr. extraEnv is added to the environment.
func (d *daemon) nexus(ctx context.Context, extraEnv []string, args ...string) (string, error) {
	log.Printf("$ nexus %s", strings.Join(args, " "))
	stdout, stderr, err := d.run(ctx, extraEnv, args...)
	for line := range strings.Lines(stdout + stderr) {
		log.Print("  ", strings.TrimRight(line, "\n"))
	}
	if err != nil {
		return stdout, fmt.Errorf("nexus %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr))
	}
	return stdout, nil
}

// run runs the CLI and returns its stdout and stderr.
func (d *daemon) run(ctx context.Context, extraEnv []string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, d.bins.nexus, append([]string{"--workspace", d.ws}, args...)...)
	cmd.Env = append(os.Environ(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// serverStatus is a server of "nexus --json mcp ls".
type serverStatus struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Error string `json:"error"`
}

// status returns the state of the suite's server.
func (d *daemon) status(ctx context.Context) (serverStatus, error) {
	out, stderr, err := d.run(ctx, nil, "--json", "mcp", "ls")
	if err != nil {
		return serverStatus{}, fmt.Errorf("nexus --json mcp ls: %v: %s", err, strings.TrimSpace(stderr))
	}
	var resp struct {
		Servers []serverStatus `json:"servers"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		return serverStatus{}, fmt.Errorf("nexus --json mcp ls: %v in %q", err, out)
	}
	for _, s := range resp.Servers {
		if s.Name == serverName {
			return s, nil
		}
	}
	return serverStatus{}, fmt.Errorf("nexus mcp ls does not show server %s: %s", serverName, out)
}

// settledAfter waits until the server has done connecting: ready,
// needs_auth, failed, or starting again after an attempt that failed (the
// hub retries with a backoff; one failure is enough to know). It logs the
// state. Until signedIn+authGrace (the last sign-in), needs_auth is taken
// for the state the hub has not left yet, not for a new request to sign in.
func (d *daemon) settledAfter(ctx context.Context, signedIn time.Time) (serverStatus, error) {
	for {
		st, err := d.status(ctx)
		if err != nil {
			return st, err
		}
		stale := st.State == stateNeedsAuth && time.Since(signedIn) < authGrace
		if !stale && st.State != statePending && (st.State != stateStarting || st.Error != "") {
			log.Printf("server %s is %s%s", serverName, st.State, suffix(st.Error))
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("server %s still %s: %w", serverName, st.State, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// login signs in to the suite's server with "nexus mcp login", whose
// $BROWSER is the driver's browse mode. The command must print the
// authorization URL on a line "open: URL".
func (d *daemon) login(ctx context.Context) error {
	browser, err := d.browser()
	if err != nil {
		return err
	}
	out, err := d.nexus(ctx, []string{"BROWSER=" + browser}, "mcp", "login", serverName)
	if err != nil {
		return err
	}
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "open: ") {
			return nil
		}
	}
	return errors.New(`nexus mcp login printed no "open: URL" line`)
}

// browser writes the script that $BROWSER names: a single executable path
// runs whether the CLI executes $BROWSER or hands it to a shell.
func (d *daemon) browser() (string, error) {
	path := filepath.Join(d.ws, "browser.sh")
	script := fmt.Sprintf("#!/bin/sh\nexec %s browse \"$@\"\n", shellQuote(d.bins.self))
	return path, os.WriteFile(path, []byte(script), 0o755)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// browse GETs url following redirects, as a browser does when the person
// has nothing to approve; the last response must not be an error.
func browse(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("browse: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	log.Printf("browse: %s: %s", resp.Request.URL.Redacted(), resp.Status)
	if resp.StatusCode >= 400 {
		return fmt.Errorf("browse: %s answered %s: %s", resp.Request.URL.Redacted(), resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
