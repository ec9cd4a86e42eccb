package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
)

func writeAs(author string) state.WriteOptions { return state.WriteOptions{Author: author} }

// raw is a client that writes bytes and reads frames, for what a real
// client would never send.
type raw struct {
	s      *served
	frames chan string
}

func rawClient(t testing.TB, s *served) *raw {
	r := &raw{s: s, frames: make(chan string, 1<<16)}
	go func() {
		defer close(r.frames)
		br := bufio.NewReader(s.fromSv)
		for {
			body, err := readTestFrame(br)
			if err != nil {
				return
			}
			r.frames <- string(body)
		}
	}()
	return r
}

// readTestFrame reads one frame strictly: the server must write nothing
// but well-formed frames.
func readTestFrame(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, "Content-Length: "), "\r\n"))
	if err != nil || !strings.HasPrefix(line, "Content-Length: ") {
		return nil, fmt.Errorf("bad header line %q", line)
	}
	if blank, err := br.ReadString('\n'); err != nil || blank != "\r\n" {
		return nil, fmt.Errorf("no blank line after the header: %q", blank)
	}
	body := make([]byte, n)
	_, err = io.ReadFull(br, body)
	return body, err
}

func (r *raw) send(t testing.TB, body string) {
	t.Helper()
	r.write(t, fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))
}

func (r *raw) write(t testing.TB, b string) {
	t.Helper()
	if _, err := io.WriteString(r.s.toSrv, b); err != nil {
		t.Fatal(err)
	}
}

// expect reads frames until one contains want, and returns it.
func (r *raw) expect(t testing.TB, want string) string {
	t.Helper()
	return r.expectAll(t, want)[0]
}

// expectAll reads frames until each of wants has been in one, in any
// order, and returns those frames in the order of wants.
func (r *raw) expectAll(t testing.TB, wants ...string) []string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	got := make([]string, len(wants))
	left := len(wants)
	var seen []string
	for left > 0 {
		select {
		case f, ok := <-r.frames:
			if !ok {
				t.Fatalf("the server closed before sending %q; it sent:\n%s", wants, strings.Join(seen, "\n"))
			}
			matched := false
			for i, want := range wants {
				if got[i] == "" && strings.Contains(f, want) {
					got[i], matched = f, true
					left--
					break
				}
			}
			if !matched {
				seen = append(seen, clip(f))
			}
		case <-deadline:
			t.Fatalf("never got all of %q; got:\n%s", wants, strings.Join(seen, "\n"))
		}
	}
	return got
}

func TestMalformedFrames(t *testing.T) {
	p := newParts(t)
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	batch := func(n int) string {
		var b strings.Builder
		b.WriteString("[")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"nexus/tools/list"}`, 1000+i)
		}
		b.WriteString("]")
		return frame(b.String())
	}
	for _, tc := range []struct {
		name, input, want string
	}{
		{"no Content-Length", "Content-Type: application/json\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"x\"}", `"code":-32700,"message":"header has no Content-Length"`},
		{"duplicate Content-Length", "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", `"message":"header has Content-Length twice"`},
		{"conflicting Content-Length", "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}x", `different Content-Length values`},
		{"negative length", "Content-Length: -5\r\n\r\nhello", `Content-Length \"-5\" is not a number of bytes`},
		{"non-numeric length", "Content-Length: twelve\r\n\r\nhello", `Content-Length \"twelve\" is not a number of bytes`},
		{"line without colon", "Content-Length 5\r\n\r\nhello", `is not \"Name: value\"`},
		{"invalid JSON", frame(`{"jsonrpc":"2.0","id":3,"method":`), `"id":null,"error":{"code":-32700,"message":"message is not valid JSON"`},
		{"not a request", frame(`{"hello":"world"}`), `"code":-32600`},
		{"a number", frame(`42`), `"code":-32600`},
		{"invalid UTF-8", frame("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"nexus/tools/get\",\"params\":{\"name\":\"\xff\"}}"), `"id":4,"error":{"code":-32700,"message":"message is not valid UTF-8 (byte `},
		{"empty batch", frame(`[]`), `"code":-32600`},
		{"batch of 10,000", batch(10000), `"message":"batch of 10000 requests is over the limit of 100"`},
		{"zero length", "Content-Length: 0\r\n\r\n", `Content-Length: 0`},
		{"over the limit", "Content-Length: 300\r\n\r\n" + strings.Repeat(" ", 300), `message of 300 bytes is over the limit of 200 bytes`},
		{"header line of 1 MiB", "X-Junk: " + strings.Repeat("j", 1<<20) + "\r\n\r\n", `header line over 4096 bytes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := p.options()
			opts.MaxMessage = 200
			if strings.HasPrefix(tc.name, "batch") {
				opts.MaxMessage = 0
			}
			s := serve(t, opts)
			r := rawClient(t, s)
			r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`)
			r.expect(t, `"id":1,"result"`)
			r.write(t, tc.input)
			r.expect(t, tc.want)
			// The connection goes on: the next request is answered.
			r.send(t, `{"jsonrpc":"2.0","id":2,"method":"nexus/tools/get","params":{"name":"echo"}}`)
			r.expect(t, `"id":2,"result":{"tool"`)
		})
	}
	t.Run("small batch", func(t *testing.T) {
		s := serve(t, p.options())
		r := rawClient(t, s)
		r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`)
		r.expect(t, `"id":1,"result"`)
		r.write(t, batch(3))
		got := r.expect(t, `"id":1002`)
		if !strings.HasPrefix(got, "[") || !strings.Contains(got, `"id":1000`) {
			t.Errorf("batch answer = %s", clip(got))
		}
	})
}

// A frame that claims 2 GiB and then ends costs what arrived, not what it
// claimed; a truncated body is a clean close.
func TestHugeClaimsAreNotAllocated(t *testing.T) {
	p := newParts(t)
	s := serve(t, p.options())
	r := rawClient(t, s)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r.write(t, "Content-Length: 2147483648\r\n\r\n{\"jsonrpc\":")
	r.expect(t, `message of 2147483648 bytes is over the limit`)
	s.toSrv.Close()
	if code := s.wait(t); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("allocated %d MiB for a frame that sent 11 bytes", grew>>20)
	}

	s = serve(t, p.options())
	r = rawClient(t, s)
	runtime.ReadMemStats(&before)
	r.write(t, "Content-Length: 60000000\r\n\r\n{\"jsonrpc\":\"2.0\"")
	s.toSrv.Close()
	s.wait(t)
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("allocated %d MiB for a truncated frame of 16 bytes", grew>>20)
	}
}

// A slow editor gets the latest status of each call, never an unbounded
// queue, and every final status.
func TestSlowEditorGetsCoalescedUpdates(t *testing.T) {
	p := newParts(t)
	s := serve(t, p.options())
	r := &raw{s: s, frames: make(chan string, 1<<20)}
	r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`)
	br := bufio.NewReader(s.fromSv)
	if _, err := readTestFrame(br); err != nil { // the reply: the server listens to the bus
		t.Fatal(err)
	}
	// Nobody reads now: the pipe fills and the outbox holds the rest.
	const calls, updates = 200, 100
	for i := range calls {
		c := tools.Call{ID: fmt.Sprintf("call-%03d", i), ToolName: "echo", Status: tools.StatusRunning, StartedAt: time.Now()}
		for u := range updates {
			c.Progress = &tools.Progress{Progress: float64(u), Total: updates}
			p.bus.Publish(c)
		}
		c.Status = tools.StatusCompleted
		p.bus.Publish(c)
	}
	readErr := make(chan error, 1)
	go func() {
		defer close(r.frames)
		for {
			body, err := readTestFrame(br)
			if err != nil {
				readErr <- err
				return
			}
			r.frames <- string(body)
		}
	}()
	final := map[string]bool{}
	received := 0
	deadline := time.After(20 * time.Second)
	for len(final) < calls {
		select {
		case f := <-r.frames:
			if strings.Contains(f, notifyToolCall) {
				received++
				if strings.Contains(f, `"status":"completed"`) {
					final[f[strings.Index(f, "call-"):][:8]] = true
				}
			}
		case err := <-readErr:
			t.Fatalf("reading: %v", err)
		case <-deadline:
			t.Fatalf("%d of %d final statuses after %d notifications", len(final), calls, received)
		}
	}
	if received >= calls*(updates+1) {
		t.Errorf("received %d notifications: nothing was coalesced", received)
	}
	t.Logf("%d status changes arrived as %d notifications", calls*(updates+1), received)
}

// FuzzFrames feeds arbitrary bytes to the framing and dispatch: the server
// must answer with well-formed frames only, and end when the input ends.
func FuzzFrames(f *testing.F) {
	for _, seed := range []string{
		"Content-Length: 52\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}",
		"Content-Length: 10\r\n\r\n[1,2,3,4]",
		"Content-Length: -1\r\n\r\n",
		"Content-Length: 99999999999999999999\r\n\r\n",
		"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
		"\r\n\r\nContent-Length: 2\r\n\r\n{}",
		"Content-Length: 60\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"nexus/tools/list\",\"params\":[]}",
		"Content-Length: 45\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\"}",
	} {
		f.Add([]byte(seed))
	}
	p := newParts(f)
	f.Fuzz(func(t *testing.T, input []byte) {
		opts := p.options()
		opts.MaxMessage = 4096
		var out bytes.Buffer
		srv := New(opts)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Serve(ctx, bytes.NewReader(initFrame(input)), &lockedWriter{w: &out}, nil)
		if ctx.Err() != nil {
			t.Fatalf("Serve did not end when its input ended")
		}
		br := bufio.NewReader(bytes.NewReader(out.Bytes()))
		for {
			body, err := readTestFrame(br)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("malformed output: %v\n%q", err, out.String())
			}
			if !jsonValid(body) {
				t.Fatalf("output frame is not JSON: %q", body)
			}
		}
	})
}

// initFrame puts an initialize before the input, so that the fuzzer
// reaches the nexus/ methods too.
func initFrame(input []byte) []byte {
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}}`
	return append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(init), init)), input...)
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func jsonValid(b []byte) bool { return json.Valid(b) }
