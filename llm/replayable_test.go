package llm_test

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"testing"

	"github.com/nexuscocreate/nexus/llm"
)

// TestKeptAliveClosed: a server that closes a kept-alive connection after
// reading the next request on it, before answering (llama-server does after
// some streams), costs no retry: net/http sends the request again at once
// on a new connection, as it may for a request with an Idempotency-Key, and
// the key is the same both times. The Messages stream is read to its end,
// so its connection is always kept; the OpenAI ones stop at [DONE] or
// response.completed and keep it only when the body's end came with that.
func TestKeptAliveClosed(t *testing.T) {
	for _, c := range []struct{ api, file string }{
		{llm.APIMessages, "anthropic/llama-max-tokens.sse"},
	} {
		t.Run(c.api, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			f := newFake(t, func(n int, w http.ResponseWriter, _ *http.Request) {
				if n == 2 {
					conn, _, err := w.(http.Hijacker).Hijack()
					if err != nil {
						t.Error(err)
						return
					}
					conn.Close()
					return
				}
				writeSSE(w, body)
			})
			p := f.provider(t, compatible(c.api), nil)
			// The first turn's connection is back in the pool before the
			// second turn starts, so the second goes out on it.
			idle := make(chan error, 1)
			ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{PutIdleConn: func(err error) { idle <- err }})
			for turn := 1; turn <= 2; turn++ {
				var ev events
				if _, err := p.Stream(ctx, simpleRequest(), ev.emit); err != nil || len(ev.retries) != 0 {
					t.Fatalf("turn %d: error %v, retries %+v", turn, err, ev.retries)
				}
				if turn == 1 {
					if err := <-idle; err != nil {
						t.Fatalf("the first turn's connection is not kept: %v", err)
					}
					ctx = context.Background()
				}
			}
			key := func(i int) string { return f.request(i).header.Get("Idempotency-Key") }
			if f.count() != 3 || key(0) == "" || key(0) == key(1) || key(1) != key(2) {
				t.Errorf("%d requests with keys %q, want 3: a new key, then one key sent twice", f.count(), []string{key(0), key(1), key(f.count() - 1)})
			}
		})
	}
}
