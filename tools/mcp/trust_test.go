package mcp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// thePerson approves servers in these tests, as nexus mcp trust does.
var thePerson = access.Person("cli")

// marked returns an entry that runs changing.mjs through sh, which first
// writes marker: if the marker exists, the entry ran.
func marked(t *testing.T, name, marker string) ServerConfig {
	t.Helper()
	script := changing(t).Args[0]
	return stdio(name, "sh", "-c", `echo ran > "$0"; exec node "$1"`, marker, script)
}

func noMarker(t *testing.T, marker string) {
	t.Helper()
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the server waiting for approval ran (marker %s: %v)", marker, err)
	}
}

func TestPinCoversWhatRuns(t *testing.T) {
	base := ServerConfig{Name: "s", Source: ".mcp.json", Transport: "stdio", Command: "node", Args: []string{"a.js"},
		Cwd: "/ws", Env: map[string]string{"A": "1"}, InheritEnv: []string{"HOME"}, Enabled: true}
	pin := base.Launch().Pin()
	if !strings.HasPrefix(pin, "sha256:") || len(pin) != len("sha256:")+64 {
		t.Fatalf("pin %q", pin)
	}
	changed := map[string]func(c *ServerConfig){
		"command":    func(c *ServerConfig) { c.Command = "python3" },
		"args":       func(c *ServerConfig) { c.Args = []string{"b.js"} },
		"extra arg":  func(c *ServerConfig) { c.Args = []string{"a.js", "--evil"} },
		"args split": func(c *ServerConfig) { c.Command, c.Args = "node a.js", nil },
		"cwd":        func(c *ServerConfig) { c.Cwd = "/tmp" },
		"env value":  func(c *ServerConfig) { c.Env = map[string]string{"A": "2"} },
		"env added":  func(c *ServerConfig) { c.Env = map[string]string{"A": "1", "NODE_OPTIONS": "--require=x"} },
		"inherit":    func(c *ServerConfig) { c.InheritEnv = []string{"HOME", "OPENAI_API_KEY"} },
		"to http":    func(c *ServerConfig) { c.Transport, c.URL = "http", "http://x/mcp" },
	}
	for what, change := range changed {
		c := base
		change(&c)
		if c.Launch().Pin() == pin {
			t.Errorf("%s changed: the pin did not", what)
		}
	}
	same := map[string]func(c *ServerConfig){
		"source":       func(c *ServerConfig) { c.Source = ".vscode/mcp.json" },
		"lazy":         func(c *ServerConfig) { c.Lazy = true },
		"timeouts":     func(c *ServerConfig) { c.CallTimeout, c.StartupTimeout = time.Second, time.Minute },
		"tool filters": func(c *ServerConfig) { c.AllowTools = []string{"x"} },
		"url of stdio": func(c *ServerConfig) { c.URL = "http://ignored" },
		"empty maps":   func(c *ServerConfig) { c.Headers = map[string]string{} },
	}
	for what, change := range same {
		c := base
		change(&c)
		if c.Launch().Pin() != pin {
			t.Errorf("%s changed nothing that runs, but the pin changed", what)
		}
	}
	web := ServerConfig{Name: "w", Transport: "http", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer a"}, Cwd: "/ws"}
	webPin := web.Launch().Pin()
	for what, change := range map[string]func(c *ServerConfig){
		"url":    func(c *ServerConfig) { c.URL = "https://evil.example/mcp" },
		"header": func(c *ServerConfig) { c.Headers = map[string]string{"Authorization": "Bearer b"} },
	} {
		c := web
		change(&c)
		if c.Launch().Pin() == webPin {
			t.Errorf("http %s changed: the pin did not", what)
		}
	}
	c := web
	c.Cwd = "/elsewhere" // not used by an http server
	if c.Launch().Pin() != webPin {
		t.Error("the cwd of an http server changed its pin")
	}
}

// TestPendingUntilTrusted: a new entry waits, runs nothing (not even when
// its tools are called), and starts once the person approves it.
func TestPendingUntilTrusted(t *testing.T) {
	th := newTestHub(t, Options{})
	marker := filepath.Join(t.TempDir(), "ran")
	cfg := marked(t, "marked", marker)
	th.Apply(map[string]ServerConfig{"marked": cfg})
	st := th.waitState(t, "marked", StatePendingApproval)
	if st.Trusted || st.PID != 0 || st.Pin != cfg.Launch().Pin() || st.Launch.Command != "sh" || len(st.Launch.Args) != 4 {
		t.Fatalf("pending status %+v", st)
	}
	if !strings.Contains(st.Error, "nexus mcp trust marked") {
		t.Errorf("the pending status does not say how to approve: %q", st.Error)
	}
	// A call does not start it, and says why and how.
	c := th.call(t, "marked", "greet", `{"name":"x"}`)
	wantError(t, c, tools.CodePermissionDenied, "waits for the person's approval")
	if !strings.Contains(c.Error.Message, "nexus mcp trust marked") {
		t.Errorf("the call's error does not say how to approve: %q", c.Error.Message)
	}
	if err := th.Restart("marked"); err == nil || !strings.Contains(err.Error(), "approval") {
		t.Errorf("restart of a pending server: %v", err)
	}
	if _, err := th.Resources(t.Context(), "marked"); err == nil || !strings.Contains(err.Error(), "approval") {
		t.Errorf("resources of a pending server: %v", err)
	}
	noMarker(t, marker)

	// A pin that is not the entry's is refused.
	other := cfg
	other.Args = append([]string{}, cfg.Args...)
	other.Args[0] = `exec node "$1"`
	if _, err := th.Trust(thePerson, "marked", other.Launch().Pin()); !errors.Is(err, ErrPinMismatch) {
		t.Fatalf("trust with another pin: %v", err)
	}
	noMarker(t, marker)
	if _, err := th.Trust(thePerson, "nope", ""); !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("trust of an unknown server: %v", err)
	}

	// Only the person approves: an app, or an agent acting for one, on
	// whatever door, is refused, and nothing is pinned.
	planner := access.ForApp(&access.App{ID: "planner"})
	for _, by := range []access.Party{planner, planner.Agent("s1"), {}} {
		if _, err := th.Trust(by, "marked", st.Pin); !errors.Is(err, policy.ErrNotThePerson) {
			t.Fatalf("trust by %v: %v", by, err)
		}
	}
	if data, _ := os.ReadFile(TrustFile(th.ws)); strings.Contains(string(data), "marked") {
		t.Fatalf("an app's approval was pinned: %s", data)
	}
	noMarker(t, marker)

	// Approved with the pin shown: it starts.
	if _, err := th.Trust(thePerson, "marked", st.Pin); err != nil {
		t.Fatal(err)
	}
	st = th.waitState(t, "marked", StateReady)
	if !st.Trusted || st.Error != "" {
		t.Fatalf("trusted status %+v", st)
	}
	wantCompleted(t, th.call(t, "marked", "greet", `{"name":"trusted"}`), "hello trusted")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the trusted server did not run: %v", err)
	}
	// Trusting it again changes nothing.
	if _, err := th.Trust(thePerson, "marked", ""); err != nil || th.statusOf("marked").PID != st.PID {
		t.Fatalf("trust again: %v, %+v", err, th.statusOf("marked"))
	}
}

// TestChangedEntryPendingAgain: a change of what runs makes an approved
// server wait again; a change of anything else does not.
func TestChangedEntryPendingAgain(t *testing.T) {
	th := newTestHub(t, Options{})
	cfg := changing(t)
	th.applyTrusted(map[string]ServerConfig{"changing": cfg})
	th.waitState(t, "changing", StateReady)

	// Not what runs: restarted, still trusted.
	timed := cfg
	timed.CallTimeout = time.Minute
	th.Apply(map[string]ServerConfig{"changing": timed})
	th.waitState(t, "changing", StateReady)

	for what, change := range map[string]func(c *ServerConfig){
		"args": func(c *ServerConfig) { c.Args = append(append([]string{}, c.Args...), "--extra") },
		"env":  func(c *ServerConfig) { c.Env = map[string]string{"NODE_OPTIONS": "--trace-warnings"} },
		"cwd":  func(c *ServerConfig) { c.Cwd = t.TempDir() },
	} {
		c := timed
		change(&c)
		th.Apply(map[string]ServerConfig{"changing": c})
		st := th.waitState(t, "changing", StatePendingApproval)
		if st.Trusted || st.PID != 0 {
			t.Fatalf("%s changed: %+v", what, st)
		}
		if _, ok := th.m.Lookup("greet", "changing"); ok {
			t.Fatalf("%s changed: the pending server's tools are still registered", what)
		}
		wantError(t, th.call(t, "changing", "greet", `{"name":"x"}`), tools.CodePermissionDenied, "approval")
		// Back to the approved values: trusted again, no question asked.
		th.Apply(map[string]ServerConfig{"changing": timed})
		th.waitState(t, "changing", StateReady)
	}
}

// TestTrustSurvivesRestart: approvals are kept in the trust file (0600)
// and hold for a new hub on the same workspace; a damaged file trusts
// nothing and is not overwritten.
func TestTrustSurvivesRestart(t *testing.T) {
	ws := t.TempDir()
	cfg := changing(t)
	th := newTestHub(t, Options{Workspace: ws})
	th.Apply(map[string]ServerConfig{"changing": cfg})
	th.waitState(t, "changing", StatePendingApproval)
	if _, err := th.Trust(thePerson, "changing", ""); err != nil {
		t.Fatal(err)
	}
	th.waitState(t, "changing", StateReady)
	th.Close()
	fi, err := os.Stat(TrustFile(ws))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("trust file: %v %v", fi, err)
	}
	data, _ := os.ReadFile(TrustFile(ws))
	if !strings.Contains(string(data), cfg.Launch().Pin()) || strings.Contains(string(data), cfg.Args[0]) {
		t.Fatalf("the trust file holds %s; want the pin and no launch values", data)
	}

	th2 := newTestHub(t, Options{Workspace: ws})
	th2.Apply(map[string]ServerConfig{"changing": cfg})
	if st := th2.waitState(t, "changing", StateReady); !st.Trusted {
		t.Fatalf("after a restart: %+v", st)
	}
	th2.Close()

	if err := os.WriteFile(TrustFile(ws), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	th3 := newTestHub(t, Options{Workspace: ws})
	th3.Apply(map[string]ServerConfig{"changing": cfg})
	st := th3.waitState(t, "changing", StatePendingApproval)
	if !strings.Contains(st.Error, "trust file cannot be read") {
		t.Errorf("pending status with a damaged trust file: %q", st.Error)
	}
	if _, err := th3.Trust(thePerson, "changing", ""); !errors.Is(err, ErrCorruptTrust) {
		t.Fatalf("trust with a damaged trust file: %v", err)
	}
	if data, _ := os.ReadFile(TrustFile(ws)); string(data) != "{not json" {
		t.Fatalf("the damaged trust file was overwritten: %q", data)
	}
}

// TestWrittenWhileRunningNeverStarts: an entry a tool call could write
// (.mcp.json, .vscode/mcp.json) while the daemon runs waits, and its
// program does not run until the person approves it.
func TestWrittenWhileRunningNeverStarts(t *testing.T) {
	ws := t.TempDir()
	th := newTestHub(t, Options{Workspace: ws})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	th.Reload(nil) // the files as they were: an edit after it is seen
	go th.Watch(ctx, nil)
	marker := filepath.Join(t.TempDir(), "ran")
	script := changing(t).Args[0]
	for _, file := range []string{".mcp.json", ".vscode/mcp.json"} {
		key := map[string]string{".mcp.json": "mcpServers", ".vscode/mcp.json": "servers"}[file]
		p := filepath.Join(ws, file)
		os.MkdirAll(filepath.Dir(p), 0o755)
		entry := `{"` + key + `": {"intruder": {"command": "sh", "args": ["-c", "echo ran > \"$0\"; exec node \"$1\"", "` + marker + `", "` + script + `"]}}}`
		if err := os.WriteFile(p, []byte(entry), 0o644); err != nil {
			t.Fatal(err)
		}
		st := th.waitState(t, "intruder", StatePendingApproval)
		if st.Source != file {
			t.Fatalf("intruder from %s: %+v", file, st)
		}
		wantError(t, th.call(t, "intruder", "greet", `{"name":"x"}`), tools.CodePermissionDenied, "waits for the person's approval")
		noMarker(t, marker)
		os.Remove(p)
		deadline := time.Now().Add(10 * time.Second)
		for th.statusOf("intruder").Name != "" {
			if time.Now().After(deadline) {
				t.Fatal("the removed entry is still there")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	noMarker(t, marker)
}

// TestLazyPending: a lazy entry that waits is not started by a call;
// approved, it starts at its first call.
func TestLazyPending(t *testing.T) {
	th := newTestHub(t, Options{})
	marker := filepath.Join(t.TempDir(), "ran")
	cfg := marked(t, "lazy", marker)
	cfg.Lazy = true
	th.Apply(map[string]ServerConfig{"lazy": cfg})
	th.waitState(t, "lazy", StatePendingApproval)
	wantError(t, th.call(t, "lazy", "greet", `{"name":"x"}`), tools.CodePermissionDenied, "approval")
	noMarker(t, marker)
	st, err := th.Trust(thePerson, "lazy", "")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateDisabled || !st.Lazy || !st.Trusted {
		t.Fatalf("a trusted lazy server before its first call: %+v", st)
	}
	noMarker(t, marker)
	wantCompleted(t, th.call(t, "lazy", "greet", `{"name":"lazy"}`), "hello lazy")
}

// TestDisabledAndInvalidEntries: a disabled entry is disabled whether
// trusted or not, and can be approved; an invalid one cannot.
func TestDisabledAndInvalidEntries(t *testing.T) {
	th := newTestHub(t, Options{})
	off := changing(t)
	off.Name, off.Enabled = "off", false
	bad := stdio("bad", "")
	bad.Err = errors.New(`"command" is required for a stdio server`)
	th.Apply(map[string]ServerConfig{"off": off, "bad": bad})
	if st := th.statusOf("off"); st.State != StateDisabled || st.Trusted {
		t.Fatalf("disabled, not trusted: %+v", st)
	}
	if st, err := th.Trust(thePerson, "off", ""); err != nil || st.State != StateDisabled || !st.Trusted {
		t.Fatalf("trust a disabled entry: %+v %v", st, err)
	}
	if st := th.statusOf("bad"); st.State != StateFailed {
		t.Fatalf("invalid: %+v", st)
	}
	if _, err := th.Trust(thePerson, "bad", ""); err == nil || !strings.Contains(err.Error(), "invalid") {
		t.Fatalf("trust an invalid entry: %v", err)
	}
}

// TestTrustAsker: the attached asker is asked about each waiting entry
// once; yes starts it, no leaves it waiting, and a question made moot is
// cancelled.
func TestTrustAsker(t *testing.T) {
	th := newTestHub(t, Options{})
	marker := filepath.Join(t.TempDir(), "ran")
	waiting := marked(t, "early", marker)
	th.Apply(map[string]ServerConfig{"early": waiting})
	th.waitState(t, "early", StatePendingApproval)

	type question struct {
		st  Status
		ctx context.Context
	}
	var mu sync.Mutex
	answers := map[string]bool{"early": false, "late": true}
	asked := make(chan question, 10)
	th.SetTrustAsker(thePerson, func(ctx context.Context, st Status) (bool, error) {
		asked <- question{st, ctx}
		mu.Lock()
		yes, ok := answers[st.Name]
		mu.Unlock()
		if !ok {
			<-ctx.Done()
			return false, ctx.Err()
		}
		return yes, nil
	})
	// Attached: asked at once about the entry already waiting; no keeps it
	// waiting, and it is not asked again.
	q := <-asked
	if q.st.Name != "early" || q.st.Launch.Command != "sh" || q.st.Pin != waiting.Launch().Pin() {
		t.Fatalf("asked about %+v", q.st)
	}
	late := changing(t)
	late.Name = "late"
	th.Apply(map[string]ServerConfig{"early": waiting, "late": late})
	if q := <-asked; q.st.Name != "late" {
		t.Fatalf("asked about %q, want late", q.st.Name)
	}
	th.waitState(t, "late", StateReady)
	if st := th.statusOf("early"); st.State != StatePendingApproval {
		t.Fatalf("early after no: %+v", st)
	}
	noMarker(t, marker)

	// A question left unanswered ends when the server is approved another
	// way.
	third := changing(t)
	third.Name, third.Env = "third", map[string]string{"X": "1"}
	th.Apply(map[string]ServerConfig{"early": waiting, "late": late, "third": third})
	q = <-asked
	if q.st.Name != "third" {
		t.Fatalf("asked about %q, want third", q.st.Name)
	}
	if _, err := th.Trust(thePerson, "third", ""); err != nil {
		t.Fatal(err)
	}
	<-q.ctx.Done()
	th.waitState(t, "third", StateReady)
	select {
	case q := <-asked:
		t.Fatalf("asked again about %q", q.st.Name)
	default:
	}
}
