package mcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's log messages sent during a call are handled before the call
// returns, though the go-sdk hands the answer and the notifications to two
// goroutines: the gateway forwards them only while the call runs.
func TestLogMessagesBeforeTheCallReturns(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			cfg := goStdio(t, "gosdk", ProtocolVersion)
			if transport == "http" {
				cfg = httpEntry("gosdk", serveHTTP(t, newGoServer("")).URL)
			}
			th := newTestHub(t, Options{})
			sub := th.bus.Subscribe(func(ev any) bool { _, ok := ev.(LogMessage); return ok }, 0)
			defer sub.Close()
			th.applyTrusted(map[string]ServerConfig{"gosdk": cfg})
			th.waitState(t, "gosdk", StateReady)
			const calls = logBurst // all within the rate
			for i := range calls {
				text := fmt.Sprint(i)
				wantCompleted(t, th.call(t, "gosdk", "logthen", fmt.Sprintf(`{"text":%q}`, text)), "logged "+text)
				select {
				case ev := <-sub.C:
					if m := ev.(LogMessage); m.Text() != text {
						t.Fatalf("call %d: the log message %q, want %q", i, m.Text(), text)
					}
				default:
					t.Fatalf("call %d of %d returned before its log message was handled", i+1, calls)
				}
			}
		})
	}
}

// The wire reader passes every byte on, however the reads split the
// lines, rewrites only the lines with a requested schema, and counts the
// notifications the go-sdk will hand to the handlers calls wait for.
func TestWireReader(t *testing.T) {
	const (
		log      = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`
		progress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"c1","progress":1}}`
		answer   = `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"notifications/message"}]}}`
		ask      = `{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"b":{},"a":{}}}}}`
	)
	for _, c := range []struct {
		name  string
		in    string
		count uint64
	}{
		{"lines", log + "\n" + answer + "\n", 1},
		{"no newline at the end", progress + "\n" + log, 2},
		{"crlf", log + "\r\n" + progress + "\r\n", 2},
		{"sse", "event: message\ndata: " + log + "\n\nid: 4\ndata: " + answer + "\n\n", 1},
		{"batch", "[" + log + "," + progress + "," + answer + "]\n", 2},
		{"not handled", `{"jsonrpc":"2.0","id":1,"method":"notifications/message","params":{}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/message"}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":"much"}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` + "\n", 0},
		{"a question between", log + "\n" + ask + "\n" + log + "\n", 2},
		{"a long line", log + "\n" + `{"jsonrpc":"2.0","id":1,"result":{"text":"` + strings.Repeat("y", 100<<10) + `"}}` + "\n" + log + "\n", 2},
	} {
		for _, split := range []string{"whole", "bytes"} {
			t.Run(c.name+"/"+split, func(t *testing.T) {
				var h heard
				var r io.Reader = strings.NewReader(c.in)
				if split == "bytes" {
					r = iotest.OneByteReader(r)
				}
				got, err := io.ReadAll(iotest.HalfReader(newWireReader(io.NopCloser(r), &h)))
				if err != nil {
					t.Fatal(err)
				}
				want := c.in
				if strings.Contains(c.in, "requestedSchema") {
					want = strings.Replace(want, ask+"\n", string(withFieldOrder([]byte(ask+"\n"))), 1)
					if want == c.in {
						t.Fatal("the question was not rewritten")
					}
				}
				if string(got) != want {
					t.Errorf("read %d bytes %.200q…, want %d bytes %.200q…", len(got), got, len(want), want)
				}
				if n := h.read.Load(); n != c.count {
					t.Errorf("counted %d notifications, want %d", n, c.count)
				}
			})
		}
	}
}

// Likewise a call's progress: the call the manager returns has it.
func TestProgressBeforeTheCallReturns(t *testing.T) {
	th := newTestHub(t, Options{})
	th.applyTrusted(map[string]ServerConfig{"gosdk": goStdio(t, "gosdk", ProtocolVersion)})
	th.waitState(t, "gosdk", StateReady)
	for i := range 200 {
		c := th.call(t, "gosdk", "progressthen", `{}`)
		wantCompleted(t, c, "reported")
		if c.Progress == nil || c.Progress.Message != "done" {
			t.Fatalf("call %d returned before its progress was handled: %+v", i+1, c.Progress)
		}
	}
}

// await returns once the notifications read were handled, or when its
// context ends (a call's ends with the call and with its session).
func TestHeardAwait(t *testing.T) {
	var h heard
	h.saw([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a"}}` + "\n"))
	h.saw([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}` + "\n"))
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	h.await(cancelled) // returns at once, though nothing was handled

	done := make(chan struct{})
	go func() { h.await(t.Context()); close(done) }()
	h.handle()
	h.handle()
	<-done // both handled
	h.await(t.Context())

	var none *heard
	none.await(t.Context()) // a connection without counts waits for nothing
}

// A line longer than a message may be is passed on before it ends, for the
// go-sdk to refuse, not held whole.
func TestWireReaderPassesOverlongLines(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	go pw.Write(bytes.Repeat([]byte("x"), sdk.DefaultMaxLineLength+1)) // and no newline yet
	defer pw.Close()
	n, err := io.ReadFull(newWireReader(pr, nil), make([]byte, sdk.DefaultMaxLineLength))
	if err != nil || n != sdk.DefaultMaxLineLength {
		t.Fatalf("read %d bytes of the line, %v", n, err)
	}
}
