package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
)

// webServer is a local web site for web_fetch and web_search: it counts
// the requests of each path.
type webServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
	ua   string
}

func startWebServer(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *webServer {
	t.Helper()
	s := &webServer{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.ua = r.UserAgent()
		s.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *webServer) requests(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// byName is the server's URL with the host localhost instead of
// 127.0.0.1: the same server, another host to the rules.
func (s *webServer) byName(path string) string {
	u, _ := url.Parse(s.URL)
	return "http://localhost:" + u.Port() + path
}

const webPage = `<html><head><title>Page</title><script>steal()</script></head>
<body><h1>Release notes</h1><p>Version <b>1.2</b> is out. See <a href="/changes">the changes</a>.</p></body></html>`

func serveWebPage(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/search":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"results":[{"title":"Release notes","url":"http://%s/page","content":"Version 1.2 is out."}]}`, r.Host)
	case "/big":
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("0123456789", 500)))
	default:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(webPage))
	}
}

// lastToolResult is the content of the last tool message the model was
// sent.
func lastToolResult(t *testing.T, m *scriptedModel) string {
	t.Helper()
	bodies := m.requestBodies()
	for i := len(bodies) - 1; i >= 0; i-- {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(bodies[i], &req); err != nil {
			t.Fatal(err)
		}
		for j := len(req.Messages) - 1; j >= 0; j-- {
			if req.Messages[j].Role == "tool" {
				return req.Messages[j].Content
			}
		}
	}
	t.Fatal("the model was sent no tool result")
	return ""
}

func webPrompt(t *testing.T, e *editor, id string) {
	t.Helper()
	var res promptResult
	e.mustCall("nexus/agent/prompt", map[string]any{"sessionId": id, "prompt": "Read the page."}, &res)
	if res.StopReason != "end_turn" {
		t.Fatalf("stop reason %q", res.StopReason)
	}
}

// TestWebFetchAsks: through nexusd and the scripted model, the agent's
// web_fetch of a local page asks the person (the record shows the URL and
// the host), then fetches it and gives the model markdown marked as
// fetched; a rejected fetch never reaches the server; web_search asks
// too and sends the query to the configured SearXNG endpoint; nexus tools
// ls lists both.
func TestWebFetchAsks(t *testing.T) {
	site := startWebServer(t, serveWebPage)
	model := startScriptedModel(t)
	ws := newWorkspace(t, model.config()+fmt.Sprintf("web:\n  search: {provider: searxng, url: %q}\n", site.URL+"/search"))
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	id := newSession(t, e)

	model.next("web_fetch", fmt.Sprintf(`{"url":%q}`, site.URL+"/page"))
	webPrompt(t, e, id)
	asked := e.permissionRequests()
	if len(asked) != 1 || !strings.Contains(asked[0], "web_fetch "+site.URL+"/page") || !strings.Contains(asked[0], `"network: 127.0.0.1"`) ||
		!strings.Contains(asked[0], `web_fetch of any URL on the host \"127.0.0.1\"`) {
		t.Fatalf("permission requests %q", asked)
	}
	if n := site.requests("/page"); n != 1 {
		t.Errorf("the page was fetched %d times, want 1", n)
	}
	if !strings.HasPrefix(site.ua, "Nexus/") {
		t.Errorf("User-Agent %q", site.ua)
	}
	res := lastToolResult(t, model)
	for _, want := range []string{"# Release notes", "**1.2**", "(" + site.URL + "/changes)", "Fetched from the web", "not the person's"} {
		if !strings.Contains(res, want) {
			t.Errorf("the model got %q, without %q", res, want)
		}
	}
	if strings.Contains(res, "steal") {
		t.Errorf("the script came through: %q", res)
	}

	// Rejected: asked, and the server sees nothing.
	e.setPermission("reject_once")
	model.next("web_fetch", fmt.Sprintf(`{"url":%q}`, site.URL+"/secret"))
	webPrompt(t, e, id)
	if n := len(e.permissionRequests()); n != 2 {
		t.Errorf("%d permission requests, want 2", n)
	}
	if n := site.requests("/secret"); n != 0 {
		t.Errorf("a rejected fetch reached the server %d times", n)
	}

	e.setPermission("allow_once")
	model.next("web_search", `{"query":"release notes"}`)
	webPrompt(t, e, id)
	if asked := e.permissionRequests(); len(asked) != 3 || !strings.Contains(asked[2], "web_search 'release notes'") {
		t.Errorf("web_search asked %q", asked[len(asked)-1])
	}
	if res := lastToolResult(t, model); !strings.Contains(res, "Version 1.2 is out.") || !strings.Contains(res, site.URL+"/page") {
		t.Errorf("web_search gave %q", res)
	}

	out, _, code := nexus(t, ws, "", "tools", "ls")
	if code != 0 || !strings.Contains(out, "web_fetch") || !strings.Contains(out, "web_search") {
		t.Errorf("nexus tools ls (%d):\n%s", code, out)
	}
}

// TestWebFetchAllowedDomains: with localhost in web.allowedDomains, the
// agent's web_fetch of a localhost page runs without asking; a page over
// web.maxTextSize is cut with a note; a redirect to another host (the
// same server as 127.0.0.1, not listed) is not followed, and that host
// sees no request.
func TestWebFetchAllowedDomains(t *testing.T) {
	other := startWebServer(t, serveWebPage)
	site := startWebServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, other.URL+"/elsewhere", http.StatusFound)
			return
		}
		serveWebPage(w, r)
	})
	model := startScriptedModel(t)
	ws := newWorkspace(t, model.config()+"web:\n  allowedDomains: [localhost]\n  maxTextSize: 1KiB\n")
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	id := newSession(t, e)

	model.next("web_fetch", fmt.Sprintf(`{"url":%q}`, site.byName("/page")))
	webPrompt(t, e, id)
	if res := lastToolResult(t, model); !strings.Contains(res, "# Release notes") {
		t.Errorf("the model got %q", res)
	}

	model.next("web_fetch", fmt.Sprintf(`{"url":%q}`, site.byName("/big")))
	webPrompt(t, e, id)
	if res := lastToolResult(t, model); !strings.Contains(res, `"truncated":true`) || !strings.Contains(res, "cut at byte 1024 of 5000 (maxSize, or web.maxTextSize): offset 1024 reads on") {
		t.Errorf("the model got %q", res)
	}

	model.next("web_fetch", fmt.Sprintf(`{"url":%q}`, site.byName("/moved")))
	webPrompt(t, e, id)
	if res := lastToolResult(t, model); !strings.Contains(res, "redirected to "+other.URL+"/elsewhere") || !strings.Contains(res, "not followed") {
		t.Errorf("the model got %q", res)
	}
	if n := other.requests("/elsewhere"); n != 0 {
		t.Errorf("the redirect reached the other host %d times", n)
	}
	if asked := e.permissionRequests(); len(asked) != 0 {
		t.Errorf("asked about an allowed host: %q", asked)
	}
}
