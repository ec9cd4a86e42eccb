// Command tokenproxy serves http://ADDR/mcp and passes every request to
// the MCP gateway at URL with "Authorization: Bearer" and the token of
// FILE: the conformance suite's server scenarios send no token, and
// nexusd's endpoint takes none.
//
//	tokenproxy -listen 127.0.0.1:PORT -to http://127.0.0.1:P/mcp -token-file .nexus/run/admin.token
//
// It logs each exchange on stderr when it ends: the HTTP method, the
// session, the JSON-RPC method or id of a POST, the status, the bytes of
// the response, how long it took and how it ended, so that a request the
// suite says got no answer can be followed.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve")
	to := flag.String("to", "", "the gateway's URL")
	tokenFile := flag.String("token-file", "", "file holding the bearer token")
	flag.Parse()
	target, err := url.Parse(*to)
	if err != nil || *to == "" {
		log.Fatalf("-to: %v", err)
	}
	tok, err := os.ReadFile(*tokenFile)
	if err != nil {
		log.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = target.Path
			r.Out.Host = target.Host
			r.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1, // SSE
	}
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	log.Fatal(http.ListenAndServe(*listen, logged(proxy)))
}

// logged logs each exchange of next when it ends.
func logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		what := ""
		if r.Method == http.MethodPost && r.Body != nil {
			body, _ := io.ReadAll(r.Body)
			r.Body.Close()
			r.Body = io.NopCloser(bytes.NewReader(body))
			what = rpcSummary(body)
		}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		ended := "done"
		if err := r.Context().Err(); err != nil {
			ended = "client gone: " + err.Error()
		}
		log.Printf("%s session=%s %s -> %d, %d bytes, %v, %s", r.Method, r.Header.Get("Mcp-Session-Id"), what,
			rec.status, rec.bytes, time.Since(start).Round(time.Millisecond), ended)
	})
}

// rpcSummary names the JSON-RPC messages of a POST body: method and id.
func rpcSummary(body []byte) string {
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	var one msg
	if json.Unmarshal(body, &one) == nil {
		return one.Method + " id=" + string(one.ID)
	}
	var batch []msg
	if json.Unmarshal(body, &batch) == nil {
		var parts []string
		for _, m := range batch {
			parts = append(parts, m.Method+" id="+string(m.ID))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return "(not JSON)"
}

type recorder struct {
	http.ResponseWriter
	status, bytes int
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	n, err := r.ResponseWriter.Write(p)
	r.bytes += n
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
