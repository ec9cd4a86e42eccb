package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
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
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/nexuscocreate/nexus/daemon"
	"github.com/nexuscocreate/nexus/integration/localllm"
	"github.com/nexuscocreate/nexus/server"
)

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
	// llama-server's own mid-stream errors end a sample, which is skipped;
	// they are not the bench's to print.
	rp.ErrorLog = log.New(io.Discard, "", 0)
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
	first, err := firstText(resp.Body, start)
	if err == nil && first == 0 {
		err = fmt.Errorf("no text in the bare stream")
	}
	return first, err
}

// firstText reads a Chat Completions stream to its end and returns the
// time from start to its first chunk with text, 0 when none had any.
func firstText(r io.Reader, start time.Time) (time.Duration, error) {
	sc := bufio.NewScanner(r)
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
	return first, sc.Err()
}

// benchTTFT prints the time to the first token of an agent's answer
// through the editor's method, beside the same request sent bare to the
// same llama-server.
func benchTTFT() error {
	base, stop, err := localllm.Serve()
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
			continue // the random model broke llama-server's parser: another sample
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
	reportTTFT("agent TTFT, editor nexus/agent/prompt, p50", ours, bare)

	// The terminal: nexus chat -p, a process of its own that reaches the
	// daemon over gRPC, to its first chunk of text on stdout.
	sctx, stopServe := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- parts.Serve(sctx) }()
	defer func() { stopServe(); <-served }()
	bin := filepath.Join(ws, "nexus")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/nexus").CombinedOutput(); err != nil {
		return fmt.Errorf("go build nexus: %v\n%s", err, out)
	}
	for !fileExists(filepath.Join(ws, ".nexus", "run", "daemon.json")) {
		time.Sleep(10 * time.Millisecond)
	}
	ours, bare = ours[:0], bare[:0]
	for i := range n + 3 {
		first, err := chatFirstChunk(bin, ws)
		if err != nil || first == 0 {
			continue // no text, or the random model broke llama-server's parser
		}
		proxy.mu.Lock()
		body := proxy.body
		proxy.mu.Unlock()
		b, err := curlFirstToken(base, body, ws)
		if err != nil {
			return err
		}
		if b == 0 {
			continue
		}
		if i >= 3 {
			ours = append(ours, first)
			bare = append(bare, b)
		}
	}
	if len(ours) < n/2 {
		return fmt.Errorf("nexus chat -p gave text in only %d of %d runs", len(ours), n)
	}
	slices.Sort(ours)
	slices.Sort(bare)
	o, a := ours[len(ours)/2], bare[len(bare)/2]
	report("agent TTFT, nexus chat -p (a new process), p50", o, a, "the same request by curl, a new process", fmt.Sprintf("≤ 1.1× or ≤ 5ms added (added %v)", (o-a).Round(time.Microsecond)))
	return nil
}

// curlFirstToken sends body with curl, a process of its own as nexus chat
// is, and returns the time from its start to its first chunk with text (0
// when the model wrote none).
func curlFirstToken(base string, body []byte, dir string) (time.Duration, error) {
	f := filepath.Join(dir, "body.json")
	if err := os.WriteFile(f, body, 0o600); err != nil {
		return 0, err
	}
	cmd := exec.Command("curl", "-sSN", "-H", "Content-Type: application/json", "--data-binary", "@"+f, base+"/v1/chat/completions")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("curl (the anchor of nexus chat -p): %w", err)
	}
	first, err := firstText(out, start)
	return first, errors.Join(err, cmd.Wait())
}

func reportTTFT(name string, ours, bare []time.Duration) {
	slices.Sort(ours)
	slices.Sort(bare)
	o, a := ours[len(ours)/2], bare[len(bare)/2]
	report(name, o, a, "the same request, bare HTTP", fmt.Sprintf("≤ 1.1× or ≤ 5ms added (added %v)", (o-a).Round(time.Microsecond)))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// chatFirstChunk runs nexus chat -p --json in ws and returns the time
// from its start to its first line of answer text (0 when the model
// wrote none).
func chatFirstChunk(bin, ws string) (time.Duration, error) {
	cmd := exec.Command(bin, "--workspace", ws, "chat", "-p", "Say something.", "--json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	var first time.Duration
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if first == 0 && bytes.Contains(sc.Bytes(), []byte(`"agent_message_chunk"`)) {
			first = time.Since(start)
		}
	}
	if err := cmd.Wait(); err != nil {
		return 0, fmt.Errorf("nexus chat -p: %v\n%s", err, stderr.String())
	}
	return first, nil
}
