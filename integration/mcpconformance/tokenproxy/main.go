// Command tokenproxy serves http://ADDR/mcp and passes every request to
// the MCP gateway at URL with "Authorization: Bearer" and the token of
// FILE: the conformance suite's server scenarios send no token, and
// nexusd's endpoint takes none.
//
//	tokenproxy -listen 127.0.0.1:PORT -to http://127.0.0.1:P/mcp -token-file .nexus/run/admin.token
package main

import (
	"flag"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
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
	log.Fatal(http.ListenAndServe(*listen, proxy))
}
