package core

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

// webTool returns the tool name of WebTools(cfg).
func webTool(t *testing.T, cfg WebConfig, name string) tools.Tool {
	t.Helper()
	for _, tool := range WebTools(cfg) {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("no tool %s", name)
	return tools.Tool{}
}

func callWeb(t *testing.T, tool tools.Tool, args any) (map[string]any, error) {
	t.Helper()
	raw, _ := json.Marshal(args)
	out, err := tool.Handler(context.Background(), &tools.Invocation{}, raw)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("result %s: %v", out, err)
	}
	return m, nil
}

func wantWebError(t *testing.T, err error, code, contains string) {
	t.Helper()
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != code || !strings.Contains(te.Message, contains) {
		t.Fatalf("error %v, want %s containing %q", err, code, contains)
	}
}

func TestWebFetchContent(t *testing.T) {
	var agent, cookie atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent.Store(r.UserAgent())
		cookie.Store(r.Header.Get("Cookie"))
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte(`<html><head><title>T</title><script>alert(1)</script></head><body><h1>Hello</h1><p>Some <b>bold</b> text and <a href="/next">a link</a>.</p></body></html>`))
		case "/plain":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("just text\n"))
		case "/json":
			w.Header().Set("Content-Type", "application/problem+json")
			w.Write([]byte(`{"a":1}`))
		case "/png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00"))
		case "/sniff":
			w.Header()["Content-Type"] = nil
			w.Write([]byte("\x00\x01\x02binary"))
		case "/missing":
			http.NotFound(w, r)
		case "/redirect":
			http.SetCookie(w, &http.Cookie{Name: "s", Value: "secret"})
			http.Redirect(w, r, "/plain", http.StatusFound)
		}
	}))
	defer srv.Close()
	fetch := webTool(t, WebConfig{UserAgent: "Nexus/test"}, "web_fetch")

	m, err := callWeb(t, fetch, map[string]any{"url": srv.URL + "/page#frag"})
	if err != nil {
		t.Fatal(err)
	}
	content := m["content"].(string)
	if !strings.Contains(content, "# Hello") || !strings.Contains(content, "**bold**") || !strings.Contains(content, "("+srv.URL+"/next)") {
		t.Errorf("content %q: want markdown with an absolute link", content)
	}
	if strings.Contains(content, "alert") {
		t.Errorf("content %q keeps the script", content)
	}
	if m["notice"] != fetchedNotice || m["contentType"] != "text/html" || m["url"] != srv.URL+"/page" || m["status"] != 200.0 {
		t.Errorf("result %v", m)
	}
	if agent.Load() != "Nexus/test" {
		t.Errorf("User-Agent %q", agent.Load())
	}

	if m, err = callWeb(t, fetch, map[string]any{"url": srv.URL + "/json"}); err != nil || m["content"] != `{"a":1}` {
		t.Errorf("json: %v, %v", m, err)
	}
	// A redirect on the same host is followed; its cookie is not sent back.
	if m, err = callWeb(t, fetch, map[string]any{"url": srv.URL + "/redirect"}); err != nil || m["content"] != "just text\n" || m["url"] != srv.URL+"/plain" {
		t.Errorf("redirect: %v, %v", m, err)
	}
	if c := cookie.Load(); c != "" {
		t.Errorf("the redirect sent the cookie %q", c)
	}

	_, err = callWeb(t, fetch, map[string]any{"url": srv.URL + "/png"})
	wantWebError(t, err, tools.CodeExecutionFailed, "is image/png, not text")
	_, err = callWeb(t, fetch, map[string]any{"url": srv.URL + "/sniff"})
	wantWebError(t, err, tools.CodeExecutionFailed, "not text")
	_, err = callWeb(t, fetch, map[string]any{"url": srv.URL + "/missing"})
	wantWebError(t, err, tools.CodeExecutionFailed, "answered 404 Not Found")
}

func TestWebFetchURLs(t *testing.T) {
	fetch := webTool(t, WebConfig{}, "web_fetch")
	for _, tc := range []struct{ url, want string }{
		{"ftp://example.org/x", "only http and https"},
		{"file:///etc/passwd", "only http and https"},
		{"https://user:pw@example.org/", "user name or password"},
		{"/relative", "only http and https"},
		{"http://", "names no host"},
	} {
		_, err := callWeb(t, fetch, map[string]any{"url": tc.url})
		wantWebError(t, err, tools.CodeInvalidArguments, tc.want)
	}
	// The metadata service is refused before anything is dialled.
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[::ffff:169.254.169.254]/", "http://0.0.0.0:1/"} {
		_, err := callWeb(t, fetch, map[string]any{"url": u})
		wantWebError(t, err, tools.CodePermissionDenied, "a link-local, unspecified or multicast address")
	}
}

func TestWebFetchLimits(t *testing.T) {
	page := strings.Repeat("é", 3000) // 6000 bytes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(page))
	}))
	defer srv.Close()

	m, err := callWeb(t, webTool(t, WebConfig{MaxTextSize: 1001}, "web_fetch"), map[string]any{"url": srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if c := m["content"].(string); c != page[:1000] || m["truncated"] != true || m["note"] != "cut at byte 1000 of 6000 (maxSize, or web.maxTextSize): offset 1000 reads on" {
		t.Errorf("web.maxTextSize: %d bytes, %v, %q", len(c), m["truncated"], m["note"])
	}
	m, err = callWeb(t, webTool(t, WebConfig{}, "web_fetch"), map[string]any{"url": srv.URL, "maxSize": 10})
	if err != nil || m["content"] != page[:10] {
		t.Errorf("maxSize: %v, %v", m, err)
	}
	// Reading on: an offset inside a character starts at the next one.
	m, err = callWeb(t, webTool(t, WebConfig{}, "web_fetch"), map[string]any{"url": srv.URL, "maxSize": 10, "offset": 5999})
	if err != nil || m["content"] != "" || m["note"] != "the text from byte 6000 on" {
		t.Errorf("offset in the last character: %v, %v", m, err)
	}
	m, err = callWeb(t, webTool(t, WebConfig{}, "web_fetch"), map[string]any{"url": srv.URL, "maxSize": 10, "offset": 3})
	if err != nil || m["content"] != page[4:14] || m["note"] != "the text from byte 4 on; cut at byte 14 of 6000 (maxSize, or web.maxTextSize): offset 14 reads on" {
		t.Errorf("offset: %v, %v", m, err)
	}
	_, err = callWeb(t, webTool(t, WebConfig{}, "web_fetch"), map[string]any{"url": srv.URL, "offset": 6000})
	wantWebError(t, err, tools.CodeInvalidArguments, "offset 6000 is past the end of the text (6000 bytes)")
	m, err = callWeb(t, webTool(t, WebConfig{MaxFetchSize: 4000}, "web_fetch"), map[string]any{"url": srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if c := m["content"].(string); c != page[:4000] || m["truncated"] != true || !strings.Contains(m["note"].(string), "cut at 4000 bytes (web.maxFetchSize)") {
		t.Errorf("web.maxFetchSize: %d bytes, %v", len(c), m)
	}
}

func TestWebFetchRedirectsToOtherHosts(t *testing.T) {
	var otherHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		w.Write([]byte("other"))
	}))
	defer other.Close()
	// The same server by another name: localhost rather than 127.0.0.1.
	u, _ := url.Parse(other.URL)
	otherByName := "http://localhost:" + u.Port() + "/x"
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherByName, http.StatusFound)
	}))
	defer first.Close()

	_, err := callWeb(t, webTool(t, WebConfig{}, "web_fetch"), map[string]any{"url": first.URL})
	wantWebError(t, err, tools.CodePermissionDenied, "redirected to "+otherByName+", which is on another host (localhost)")
	if n := otherHits.Load(); n != 0 {
		t.Fatalf("the other host got %d requests", n)
	}

	m, err := callWeb(t, webTool(t, WebConfig{AllowedDomains: []string{"localhost"}}, "web_fetch"), map[string]any{"url": first.URL})
	if err != nil || m["content"] != "other" {
		t.Fatalf("allowed redirect: %v, %v", m, err)
	}
}

func TestWebCheckAddr(t *testing.T) {
	w := &web{cfg: WebConfig{AllowedDomains: []string{"metadata.internal", "*.corp.example", "intranet.example"}}}
	for _, tc := range []struct {
		host, addr string
		ok         bool
	}{
		{"example.org", "93.184.215.14", true},
		{"127.0.0.1", "127.0.0.1", true},
		{"localhost", "127.0.0.1", true},
		{"app.localhost", "::1", true},
		{"192.168.1.10", "192.168.1.10", true},
		{"evil.example", "127.0.0.1", false}, // a public name that leads here
		{"evil.example", "10.0.0.1", false},
		{"evil.example", "100.64.1.1", false},
		{"intranet.example", "10.0.0.1", true}, // listed
		{"a.corp.example", "192.168.0.1", true},
		{"169.254.169.254", "169.254.169.254", false}, // metadata, even as an address
		{"evil.example", "169.254.169.254", false},
		{"x.corp.example", "169.254.169.254", false}, // a wildcard is not enough
		{"metadata.internal", "169.254.169.254", true},
		{"evil.example", "fe80::1", false},
		{"0.0.0.0", "0.0.0.0", false},
		{"evil.example", "224.0.0.1", false},
	} {
		err := w.checkAddr(tc.host, netip.MustParseAddr(tc.addr))
		if (err == nil) != tc.ok {
			t.Errorf("checkAddr(%s, %s) = %v, want ok %v", tc.host, tc.addr, err, tc.ok)
		}
	}
}

func TestWebSearch(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.URL.Query())
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"query":"go","results":[
			{"title":"The Go language","url":"https://go.dev/","content":"Build simple, secure, scalable systems."},
			{"title":"A file","url":"file:///etc/passwd","content":"not readable by web_fetch"},
			{"title":"Go docs","url":"https://go.dev/doc/","content":"Docs"},
			{"title":"Third","url":"https://example.org/","content":""}]}`))
	}))
	defer srv.Close()
	if n := len(WebTools(WebConfig{})); n != 1 {
		t.Fatalf("without a provider: %d tools, want web_fetch alone", n)
	}
	search := webTool(t, WebConfig{Search: &SearchConfig{URL: srv.URL + "/search?language=en", MaxResults: 2}}, "web_search")
	m, err := callWeb(t, search, map[string]any{"query": "go & more"})
	if err != nil {
		t.Fatal(err)
	}
	q := got.Load().(url.Values)
	if q.Get("q") != "go & more" || q.Get("format") != "json" || q.Get("language") != "en" {
		t.Errorf("query sent: %v", q)
	}
	b, _ := json.Marshal(m["results"])
	if want := `[{"snippet":"Build simple, secure, scalable systems.","title":"The Go language","url":"https://go.dev/"},{"snippet":"Docs","title":"Go docs","url":"https://go.dev/doc/"}]`; string(b) != want {
		t.Errorf("results %s\nwant %s", b, want)
	}
	if m["notice"] != fetchedNotice {
		t.Errorf("notice %v", m["notice"])
	}
}
