package mcp

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/tools"
)

// countingTransport counts the GET requests the hub makes: each is the
// standalone stream or the resumption of a closed one.
type countingTransport struct {
	mu   sync.Mutex
	gets int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		c.mu.Lock()
		c.gets++
		c.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// waitNot waits until a server leaves a state, and returns its status.
func (th *testHub) waitNot(t *testing.T, name, state string) Status {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st := th.statusOf(name); st.State != state {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %s is still %s", name, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *countingTransport) GETs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets
}

// A server that closes a call's SSE stream (SEP-1699) answers on the
// stream the hub opens again with Last-Event-ID: the call completes, the
// server is not restarted.
func TestHTTPStreamClosedMidCallIsResumed(t *testing.T) {
	hs := serveHTTP(t, newGoServer(""))
	th := newTestHub(t, Options{})
	th.applyTrusted(map[string]ServerConfig{"web": httpEntry("web", hs.URL)})
	th.waitState(t, "web", StateReady)
	wantCompleted(t, th.call(t, "web", "resume", `{}`), "answered on the resumed stream")
	if hs.count("resume") == 0 {
		t.Fatal("the server never saw a GET with Last-Event-ID")
	}
	if st := th.statusOf("web"); st.State != StateReady || st.Restarts != 0 {
		t.Fatalf("after the resumed call: %+v", st)
	}
	// Twice in a row on the same session.
	wantCompleted(t, th.call(t, "web", "resume", `{}`), "answered on the resumed stream")
}

// A server that dies mid-call is seen at once: the call fails with
// server_unavailable without the go-sdk's reconnection attempts (5, over
// some 15 s), the server restarts, and once its endpoint is back it is
// ready again.
func TestHTTPServerGoneMidCall(t *testing.T) {
	hs := serveHTTP(t, newGoServer(""))
	counter := &countingTransport{}
	th := newTestHub(t, Options{HTTPTransport: counter})
	th.applyTrusted(map[string]ServerConfig{"web": httpEntry("web", hs.URL)})
	th.waitState(t, "web", StateReady)

	done := make(chan tools.Call, 1)
	go func() { done <- th.call(t, "web", "block", `{}`) }()
	hs.waitFor(t, "the call", func() bool { return strings.Contains(strings.Join(hs.events["post"], " "), "tools/call") })
	before := counter.GETs()
	hs.kill()
	c := <-done
	wantError(t, c, tools.CodeServerUnavailable, "ended during the call")
	st := th.waitNot(t, "web", StateReady)
	if n := counter.GETs() - before; n > 1 {
		t.Errorf("%d GETs after the server died: the hub waited for reconnection attempts", n)
	}
	if !strings.Contains(st.Error, "cannot be reached") && !strings.Contains(st.Error, "connecting to") {
		t.Errorf("the status does not say the server is unreachable: %q", st.Error)
	}

	// The same endpoint comes back: the hub's restarts find it.
	addr := strings.TrimSuffix(strings.TrimPrefix(hs.URL, "http://"), "/mcp")
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	back := &http.Server{Handler: hs.srv.Handler}
	go back.Serve(l)
	t.Cleanup(func() { back.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for th.statusOf("web").State != StateReady {
		if time.Now().After(deadline) {
			t.Fatalf("not back: %+v", th.statusOf("web"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantCompleted(t, th.call(t, "web", "echo", `{"text":"back"}`), "echo: back")
}

// The same with a real server process killed with SIGKILL: the npm
// server-everything over Streamable HTTP.
func TestHTTPServerProcessKilledMidCall(t *testing.T) {
	url, server := startHTTPEverythingProc(t)
	counter := &countingTransport{}
	th := newTestHub(t, Options{HTTPTransport: counter, MaxRestarts: 1})
	th.applyTrusted(map[string]ServerConfig{"web": httpEntry("web", url)})
	th.waitState(t, "web", StateReady)
	done := make(chan tools.Call, 1)
	running := make(chan struct{})
	go func() {
		done <- th.m.Execute(t.Context(), tools.ExecuteRequest{ServerName: "web", ToolName: "trigger-long-running-operation",
			Arguments: json.RawMessage(`{"duration":60,"steps":60}`), OnUpdate: func(c tools.Call) {
				if c.Progress != nil {
					select {
					case <-running:
					default:
						close(running)
					}
				}
			}})
	}()
	<-running // the server is at work on it
	before := counter.GETs()
	if err := server.Kill(); err != nil {
		t.Fatal(err)
	}
	wantError(t, <-done, tools.CodeServerUnavailable, "ended during the call")
	if n := counter.GETs() - before; n > 1 {
		t.Errorf("%d GETs after the server died: the hub waited for reconnection attempts", n)
	}
	st := th.waitState(t, "web", StateFailed)
	if !strings.Contains(st.Error, "connecting to "+url) {
		t.Errorf("failed with %q", st.Error)
	}
}
