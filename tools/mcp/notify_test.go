package mcp

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The hub asks each server for the daemon's level, mapped to MCP's.
func TestLogLevelIsAskedOfServers(t *testing.T) {
	for _, c := range []struct {
		daemon slog.Level
		want   string
	}{
		{slog.LevelDebug, "debug"},
		{slog.LevelInfo, "info"},
		{slog.LevelWarn, "warning"},
		{slog.LevelError, "error"},
	} {
		t.Run(c.daemon.String(), func(t *testing.T) {
			g := newGoServer("")
			hs := serveHTTP(t, g)
			th := newTestHub(t, Options{LogLevel: c.daemon})
			th.applyTrusted(map[string]ServerConfig{"web": httpEntry("web", hs.URL)})
			th.waitState(t, "web", StateReady)
			g.waitFor(t, "logging/setLevel", func() bool { return len(g.levels) > 0 })
			g.mu.Lock()
			defer g.mu.Unlock()
			if !slices.Equal(g.levels, []string{c.want}) {
				t.Fatalf("setLevel %v, want [%s]", g.levels, c.want)
			}
		})
	}
}

// A server's log messages go to the daemon log, structured, and onto the
// bus; those under the daemon's level are not even sent.
func TestServerLogMessages(t *testing.T) {
	g := newGoServer("")
	hs := serveHTTP(t, g)
	var log syncBuffer
	th := newTestHub(t, Options{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	sub := th.bus.Subscribe(func(ev any) bool { _, ok := ev.(LogMessage); return ok }, 0)
	defer sub.Close()
	th.applyTrusted(map[string]ServerConfig{"web": httpEntry("web", hs.URL)})
	th.waitState(t, "web", StateReady)
	wantCompleted(t, th.call(t, "web", "log", `{}`), "logged")

	var got []LogMessage
	for len(got) < 2 {
		select {
		case ev := <-sub.C:
			got = append(got, ev.(LogMessage))
		case <-time.After(10 * time.Second):
			t.Fatalf("log messages on the bus: %+v", got)
		}
	}
	warn, errm := got[0], got[1]
	if warn.Server != "web" || warn.Level != "warning" || warn.Logger != "disk" || string(warn.Data) != `{"free":"3%","path":"/var"}` || warn.Time.IsZero() {
		t.Errorf("the warning: %+v", warn)
	}
	if errm.Level != "error" || errm.Text() != "an error line" {
		t.Errorf("the error: %+v (%s)", errm, errm.Text())
	}
	log.waitFor(t, `level=WARN msg="MCP server log" server=web mcpLevel=warning logger=disk data="{\"free\":\"3%\",\"path\":\"/var\"}"`)
	log.waitFor(t, `level=ERROR msg="MCP server log" server=web mcpLevel=error logger="" data="an error line"`)
	if strings.Contains(log.String(), "a debug line") {
		t.Error("a debug message came though the daemon is at info")
	}
}

// A server that floods the log is held to the rate: the rest is dropped
// and counted in the daemon log.
func TestServerLogFloodIsBounded(t *testing.T) {
	g := newGoServer("")
	hs := serveHTTP(t, g)
	var log syncBuffer
	th := newTestHub(t, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	sub := th.bus.Subscribe(func(ev any) bool { m, ok := ev.(LogMessage); return ok && strings.HasPrefix(m.Text(), "line ") }, 2000)
	defer sub.Close()
	th.applyTrusted(map[string]ServerConfig{"web": httpEntry("web", hs.URL)})
	th.waitState(t, "web", StateReady)
	const sent = 1000
	wantCompleted(t, th.call(t, "web", "flood", fmt.Sprintf(`{"n":%d}`, sent)), "flooded")
	// One more message once the flood is over reports the last drops.
	time.Sleep(50 * time.Millisecond) // a few tokens come back
	wantCompleted(t, th.call(t, "web", "log", `{}`), "logged")
	log.waitFor(t, "mcpLevel=warning")
	passed := len(sub.C)
	dropped := 0
	for _, m := range regexp.MustCompile(`(\d+) of its messages were dropped`).FindAllStringSubmatch(log.String(), -1) {
		n, _ := strconv.Atoi(m[1])
		dropped += n
	}
	if passed < logBurst || passed >= sent || passed+dropped != sent {
		t.Fatalf("%d messages passed and %d were reported dropped, of %d sent", passed, dropped, sent)
	}
}

func TestLogData(t *testing.T) {
	if got := string(logData(map[string]int{"a": 1})); got != `{"a":1}` {
		t.Errorf("small data: %s", got)
	}
	big := logData(strings.Repeat("x", 3*maxLogData))
	var s string
	if json.Unmarshal(big, &s) != nil || len(big) > maxLogData+64 || !strings.HasSuffix(s, fmt.Sprintf("… (%d bytes)", 3*maxLogData+2)) {
		t.Errorf("big data: %d bytes, %q…", len(big), big[:40])
	}
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
