package llm_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/llm"
)

// answer is one answer of a replay server: a recorded body from testdata,
// sent byte for byte with a status and headers.
type answer struct {
	status int
	header http.Header
	file   string // under testdata/
	// cut > 0 sends only the first cut bytes of the file, then breaks the
	// connection (a stream cut mid-way).
	cut int
	// until, when set, sends the file only up to where this text starts.
	until string
	// hold sends the file, then keeps the request open until its context
	// ends, which closes replay.ended.
	hold bool
}

// recorded is a request the replay server got.
type recorded struct {
	method, path, query string
	header              http.Header
	body                []byte
}

// replay is a local HTTP server that gives its answers in order, one per
// request, and records the requests.
type replay struct {
	*httptest.Server
	mu      sync.Mutex
	answers []answer
	reqs    []recorded
	ended   chan struct{}
}

func newReplay(t *testing.T, answers ...answer) *replay {
	t.Helper()
	r := &replay{answers: answers, ended: make(chan struct{})}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve(t)))
	t.Cleanup(r.Close)
	return r
}

func (r *replay) serve(t *testing.T) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.reqs)
		r.reqs = append(r.reqs, recorded{req.Method, req.URL.Path, req.URL.RawQuery, req.Header.Clone(), body})
		r.mu.Unlock()
		if n >= len(r.answers) {
			t.Errorf("request %d: the replay has only %d answers", n+1, len(r.answers))
			http.Error(w, "no more answers", http.StatusTeapot)
			return
		}
		a := r.answers[n]
		data, err := os.ReadFile(filepath.Join("testdata", a.file))
		if err != nil {
			t.Error(err)
			return
		}
		if a.until != "" {
			data = data[:strings.Index(string(data), a.until)]
		}
		for k, v := range a.header {
			w.Header()[k] = v
		}
		if w.Header().Get("Content-Type") == "" {
			if strings.HasSuffix(a.file, ".sse") {
				w.Header().Set("Content-Type", "text/event-stream")
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
		}
		status := a.status
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		if a.cut > 0 {
			_, _ = w.Write(data[:a.cut])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection breaks
		}
		_, _ = w.Write(data)
		w.(http.Flusher).Flush()
		if a.hold {
			<-req.Context().Done()
			close(r.ended)
		}
	}
}

func (r *replay) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

// sleeps records the waits of the retry loop instead of waiting.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeps) sleep(done <-chan struct{}, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return nil
}

// collect runs a request and returns its events.
func collect(t *testing.T, p llm.Provider, req *llm.Request) (*llm.Response, []llm.Event, error) {
	t.Helper()
	var events []llm.Event
	resp, err := p.Stream(t.Context(), req, func(ev llm.Event) { events = append(events, ev) })
	return resp, events, err
}

// kinds counts the events of each kind.
func kinds(events []llm.Event) map[llm.EventKind]int {
	m := map[llm.EventKind]int{}
	for _, ev := range events {
		m[ev.Kind]++
	}
	return m
}

func fixedKey(key string) func(string) (string, bool) {
	return func(string) (string, bool) { return key, true }
}
