package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/nexuscocreate/nexus/daemon"
	"github.com/nexuscocreate/nexus/server"
)

// llamaServer starts llama.cpp's llama-server with the tiny model of
// scripts/local-llm.sh (root only) and returns its base URL and a stop.
func llamaServer() (string, func(), error) {
	if os.Geteuid() != 0 {
		return "", nil, fmt.Errorf("llama-server runs in a chroot that needs root")
	}
	script := filepath.Join("scripts", "local-llm.sh")
	if out, err := exec.Command("bash", script, "install").CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("%s install: %v\n%s", script, err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("bash", script, "serve", fmt.Sprint(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() { cmd.Process.Signal(syscall.SIGTERM); <-exited }
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for {
		select {
		case <-exited:
			return "", nil, fmt.Errorf("llama-server exited before it was ready")
		case <-time.After(50 * time.Millisecond):
		}
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, stop, nil
			}
		}
	}
}

// recordingProxy forwards to target and keeps the last request body: the
// anchor sends the very request the agent sent.
type recordingProxy struct {
	mu   sync.Mutex
	body []byte
	srv  *http.Server
	url  string
}

func newRecordingProxy(target string) (*recordingProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &recordingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // stream as it comes
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.url = "http://" + l.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.body = b
		p.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		rp.ServeHTTP(w, r)
	})}
	go p.srv.Serve(l)
	return p, nil
}

// bareFirstToken posts body to the chat endpoint and returns the time to
// the first chunk with text.
func bareFirstToken(base string, body []byte) (time.Duration, error) {
	start := time.Now()
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var first time.Duration
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok || first != 0 {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal(data, &c) == nil && len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			first = time.Since(start)
		}
	}
	if first == 0 {
		return 0, fmt.Errorf("no text in the bare stream")
	}
	return first, sc.Err()
}

// benchTTFT prints the time to the first token of an agent's answer
// through the editor's method, beside the same request sent bare to the
// same llama-server.
func benchTTFT() error {
	base, stop, err := llamaServer()
	if err != nil {
		fmt.Printf("%-44s skipped: %v\n", "agent time to first token", err)
		return nil
	}
	defer stop()
	proxy, err := newRecordingProxy(base)
	if err != nil {
		return err
	}
	defer proxy.srv.Close()
	ws, err := os.MkdirTemp("", "nexus-bench-ttft-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	os.MkdirAll(filepath.Join(ws, ".nexus"), 0o755)
	// Text only (token 5 starts a tool call), a few tokens.
	cfg := fmt.Sprintf(`llm:
  provider: openai-compatible
  api: chat
  baseURL: %s/v1
  model: tiny
  maxOutputTokens: 4
  extraBody: {"logit_bias": {"5": -100}}
agent:
  tools: [get_current_time]
`, proxy.url)
	if err := os.WriteFile(filepath.Join(ws, ".nexus", "config.yaml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	parts, err := daemon.Open(context.Background(), daemon.Options{Workspace: ws, Stderr: io.Discard, LogLevel: "error", Version: "bench"})
	if err != nil {
		return err
	}
	defer parts.Close()
	srv := server.New(server.Options{Definitions: parts.Definitions, Runtime: parts.Runtime, Tools: parts.Tools, Bus: parts.Bus, Agent: parts.Agent})
	cp, sp, err := pipes()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, sp.Reader, sp.Writer, sp.Close); close(done) }()
	defer func() { cancel(); cp.Close(); <-done }()
	firstChunk := make(chan time.Time, 64)
	client := jsonrpc2.NewConn(jsonrpc2.NewStream(cp), jsonrpc2.WithCodec(stdCodec{}))
	client.Go(ctx, func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		if req.Method() == "nexus/agent/update" && strings.Contains(string(req.Params()), `"agent_message_chunk"`) {
			select {
			case firstChunk <- time.Now():
			default:
			}
		}
		return nil, nil
	})
	if _, err := client.Call(ctx, "initialize", map[string]any{"capabilities": map[string]any{}}, nil); err != nil {
		return err
	}
	var sess struct {
		Session struct {
			ID string `json:"sessionId"`
		} `json:"session"`
	}
	if _, err := client.Call(ctx, "nexus/agent/sessions/new", map[string]any{}, &sess); err != nil {
		return err
	}
	prompt := func(text string) error {
		var res map[string]any
		_, err := client.Call(ctx, "nexus/agent/prompt", map[string]any{"sessionId": sess.Session.ID, "prompt": text}, &res)
		return err
	}
	const n = 30
	var ours, bare []time.Duration
	for i := range n + 3 {
		if err := prompt("/clear"); err != nil { // the same request each time
			return err
		}
		for len(firstChunk) > 0 {
			<-firstChunk
		}
		start := time.Now()
		if err := prompt("Say something."); err != nil {
			return err
		}
		var first time.Time
		select {
		case first = <-firstChunk:
		default:
			continue // the random model said nothing this time
		}
		proxy.mu.Lock()
		body := proxy.body
		proxy.mu.Unlock()
		b, err := bareFirstToken(base, body)
		if err != nil {
			continue
		}
		if i >= 3 { // warm-up
			ours = append(ours, first.Sub(start))
			bare = append(bare, b)
		}
	}
	if len(ours) < n/2 {
		return fmt.Errorf("the model gave text in only %d of %d turns", len(ours), n)
	}
	slices.Sort(ours)
	slices.Sort(bare)
	o, a := ours[len(ours)/2], bare[len(bare)/2]
	report("agent TTFT, editor nexus/agent/prompt, p50", o, a, "the same request, bare HTTP", fmt.Sprintf("≤ 1.1× or ≤ 5ms added (added %v)", (o-a).Round(time.Microsecond)))
	return nil
}
