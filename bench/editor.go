package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/nexuscocreate/nexus/daemon"
	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/server"
	"github.com/nexuscocreate/nexus/tools"
)

// The editor protocol (nexusd --stdio): notifications to a client reading
// the pipe, a request round trip against a bare jsonrpc2 echo on the same
// kind of pipe, a disk edit to its notification, and the start of the real
// binary to its initialize reply.

// runEditor runs the editor-protocol benchmarks; large is a workspace with
// 1,000 files and 10k commits (made here when empty).
func runEditor(tmp, large string) error {
	fmt.Println()
	if os.Getenv("NEXUS_BENCH_START_ONLY") != "" {
		return benchStart(tmp, large)
	}
	if err := benchNotifications(tmp); err != nil {
		return err
	}
	if err := benchRoundTrip(tmp); err != nil {
		return err
	}
	if err := benchDiskEdit(tmp); err != nil {
		return err
	}
	return benchStart(tmp, large)
}

// pipeConn is one end of two os.Pipes: what the server writes, the client
// reads, and the other way round.
type pipeConn struct {
	io.Reader
	io.Writer
	close func() error
}

func (p pipeConn) Close() error { return p.close() }

func pipes() (client, srv pipeConn, err error) {
	aR, aW, err := os.Pipe()
	if err != nil {
		return client, srv, err
	}
	bR, bW, err := os.Pipe()
	if err != nil {
		return client, srv, err
	}
	client = pipeConn{Reader: bR, Writer: aW, close: func() error { aW.Close(); return bR.Close() }}
	srv = pipeConn{Reader: aR, Writer: bW, close: func() error { aR.Close(); return bW.Close() }}
	return client, srv, nil
}

// stdCodec decodes results with encoding/json (the library's default is
// JSON v2, which matches field names case-sensitively).
type stdCodec struct{}

func (stdCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (stdCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// editorServer is an in-process server on real pipes, over real stores.
type editorServer struct {
	bus    *events.Bus
	client jsonrpc2.Conn
	notes  atomic.Int64
	seen   chan string // the first call id of each notification batch, for latency
	stop   func()
}

func startEditorServer(tmp string) (*editorServer, error) {
	dir, err := os.MkdirTemp(tmp, "editor-")
	if err != nil {
		return nil, err
	}
	// The daemon's own parts, as nexusd opens them; only the editor
	// protocol is served, on pipes.
	parts, err := daemon.Open(context.Background(), daemon.Options{Workspace: dir, Stderr: io.Discard, LogLevel: "error", Version: "bench"})
	if err != nil {
		return nil, err
	}
	bus := parts.Bus
	srv := server.New(server.Options{Definitions: parts.Definitions, Runtime: parts.Runtime, Tools: parts.Tools, Bus: bus, MaxPendingCalls: 1 << 20})
	cp, sp, err := pipes()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, sp.Reader, sp.Writer, sp.Close); close(done) }()
	e := &editorServer{bus: bus, seen: make(chan string, 1<<16)}
	e.client = jsonrpc2.NewConn(jsonrpc2.NewStream(cp), jsonrpc2.WithCodec(stdCodec{}))
	e.client.Go(ctx, func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		if req.Method() == "nexus/toolCall" {
			e.notes.Add(1)
			select {
			case e.seen <- "":
			default:
			}
		}
		return nil, nil
	})
	e.stop = func() {
		cancel()
		cp.Close()
		<-done
		parts.Close()
	}
	if _, err := e.client.Call(ctx, "initialize", map[string]any{"capabilities": map[string]any{}}, nil); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

func benchNotifications(tmp string) error {
	e, err := startEditorServer(tmp)
	if err != nil {
		return err
	}
	defer e.stop()
	call := func(i int, status string) tools.Call {
		return tools.Call{ID: "0190e2c4-8f3a-7d2e-9b1c-" + fmt.Sprintf("%012d", i), ToolName: "get_current_time",
			ArgumentsJSON: json.RawMessage(`{"timezone":"Europe/Paris"}`), Status: status, Title: "Get the current time",
			Kind: tools.KindRead, StartedAt: time.Now().UTC()}
	}
	// Latency: one status change at a time, from Publish to the client.
	var lat []time.Duration
	for i := range 3000 {
		for len(e.seen) > 0 {
			<-e.seen
		}
		c := call(i, tools.StatusRunning)
		t := time.Now()
		e.bus.Publish(c)
		<-e.seen
		lat = append(lat, time.Since(t))
	}
	p50 := median(lat)

	// The anchor: a bare jsonrpc2 notification of the same payload, written
	// and read on the same kind of pipe.
	anchorLat, anchorRate, err := bareNotify(call(0, tools.StatusCompleted))
	if err != nil {
		return err
	}
	report("tool-call notification to the editor, p50", p50, anchorLat, "bare jsonrpc2 Notify, same pipe", "p50 ≤ 100µs")

	// Throughput: distinct calls (nothing to coalesce), each a final status.
	const total = 200000
	base := e.notes.Load()
	start := time.Now()
	for i := range total {
		e.bus.Publish(call(1_000_000+i, tools.StatusCompleted))
	}
	for e.notes.Load()-base < total {
		time.Sleep(100 * time.Microsecond)
	}
	rate := float64(total) / time.Since(start).Seconds()
	fmt.Printf("%-44s %9.0f/s   %-34s %9.0f/s   ratio %.4f×   (target ≥ 100,000/s)\n", "tool-call notifications to the editor",
		rate, "vs bare jsonrpc2 Notify, same pipe", anchorRate, rate/anchorRate)
	return nil
}

// bareNotify measures go.lsp.dev/jsonrpc2 notifications of params between
// two plain connections on os.Pipes: p50 latency and throughput.
func bareNotify(params any) (time.Duration, float64, error) {
	cp, sp, err := pipes()
	if err != nil {
		return 0, 0, err
	}
	defer cp.Close()
	defer sp.Close()
	var count atomic.Int64
	seen := make(chan struct{}, 1<<16)
	ctx := context.Background()
	reader := jsonrpc2.NewConn(jsonrpc2.NewStream(cp))
	reader.Go(ctx, func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		count.Add(1)
		select {
		case seen <- struct{}{}:
		default:
		}
		return nil, nil
	})
	writer := jsonrpc2.NewConn(jsonrpc2.NewStream(sp), jsonrpc2.WithCodec(stdCodec{}))
	writer.Go(ctx, jsonrpc2.MethodNotFoundHandler)
	var lat []time.Duration
	for range 3000 {
		for len(seen) > 0 {
			<-seen
		}
		t := time.Now()
		if err := writer.Notify(ctx, "nexus/toolCall", params); err != nil {
			return 0, 0, err
		}
		<-seen
		lat = append(lat, time.Since(t))
	}
	const total = 200000
	base := count.Load()
	start := time.Now()
	go func() {
		for range total {
			writer.Notify(ctx, "nexus/toolCall", params)
		}
	}()
	for count.Load()-base < total {
		time.Sleep(100 * time.Microsecond)
	}
	return median(lat), float64(total) / time.Since(start).Seconds(), nil
}

// benchRoundTrip compares nexus/runtime/get with a bare jsonrpc2 echo, both
// over os.Pipes, interleaved call by call.
func benchRoundTrip(tmp string) error {
	e, err := startEditorServer(tmp)
	if err != nil {
		return err
	}
	defer e.stop()
	ctx := context.Background()
	if _, err := e.client.Call(ctx, "nexus/runtime/set", map[string]any{"namespace": "bench", "key": "k", "value": "a small value"}, nil); err != nil {
		return err
	}
	cp, sp, err := pipes()
	if err != nil {
		return err
	}
	defer cp.Close()
	echoSrv := jsonrpc2.NewConn(jsonrpc2.NewStream(sp))
	echoSrv.Go(ctx, func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		return jsonrpc2.RawMessage(req.Params()), nil
	})
	echo := jsonrpc2.NewConn(jsonrpc2.NewStream(cp), jsonrpc2.WithCodec(stdCodec{}))
	echo.Go(ctx, jsonrpc2.MethodNotFoundHandler)
	params := map[string]string{"namespace": "bench", "key": "k"}
	var got struct {
		Found bool   `json:"found"`
		Value string `json:"value"`
	}
	calls := []func() error{
		func() error { _, err := echo.Call(ctx, "echo", params, &got); return err },
		func() error { _, err := e.client.Call(ctx, "nexus/runtime/get", params, &got); return err },
	}
	for range 1000 { // warm up
		for _, c := range calls {
			if err := c(); err != nil {
				return err
			}
		}
	}
	samples := make([][]time.Duration, len(calls))
	for range 10000 {
		for i, c := range calls {
			t := time.Now()
			if err := c(); err != nil {
				return err
			}
			samples[i] = append(samples[i], time.Since(t))
		}
	}
	if !got.Found || got.Value != "a small value" {
		return fmt.Errorf("runtime/get answered %+v", got)
	}
	report("nexus/runtime/get round trip, p50", median(samples[1]), median(samples[0]), "bare jsonrpc2 echo, same pipe", "≤ 2×")
	return nil
}

// benchDiskEdit times an edit made on disk to its nexus/definitionChanged,
// through the whole daemon (in this process) on pipes.
func benchDiskEdit(tmp string) error {
	ws, err := os.MkdirTemp(tmp, "disk-")
	if err != nil {
		return err
	}
	cp, sp, err := pipes()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	devnull, _ := os.Open(os.DevNull)
	go func() {
		done <- daemon.Run(ctx, daemon.Options{Workspace: ws, LogLevel: "error", Stderr: devnull, Version: "bench",
			Stdio: &daemon.Stdio{In: sp.Reader, Out: sp.Writer, Close: sp.Close}})
	}()
	defer func() { cancel(); cp.Close(); <-done }()
	changed := make(chan string, 1024)
	client := jsonrpc2.NewConn(jsonrpc2.NewStream(cp), jsonrpc2.WithCodec(stdCodec{}))
	client.Go(ctx, func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		if req.Method() == "nexus/definitionChanged" {
			var p struct {
				Path   string `json:"path"`
				Author string `json:"author"`
			}
			if json.Unmarshal(req.Params(), &p) == nil && p.Author == "disk" {
				changed <- p.Path
			}
		}
		return nil, nil
	})
	var init struct {
		Nexus struct {
			DefinitionsRoot string `json:"definitionsRoot"`
			Debounce        string `json:"watchDebounce"`
		} `json:"nexus"`
	}
	if _, err := client.Call(ctx, "initialize", map[string]any{"capabilities": map[string]any{}}, &init); err != nil {
		return err
	}
	debounce, err := time.ParseDuration(init.Nexus.Debounce)
	if err != nil {
		return err
	}
	var lat []time.Duration
	for i := range 40 {
		name := fmt.Sprintf("edit%02d.md", i%8)
		t := time.Now()
		if err := os.WriteFile(filepath.Join(init.Nexus.DefinitionsRoot, name), fmt.Appendf(nil, "version %d\n", i), 0o644); err != nil {
			return err
		}
		for p := range changed {
			if p == name {
				break
			}
		}
		lat = append(lat, time.Since(t))
	}
	fmt.Printf("%-44s %10v   %-34s %10v   (target p50 ≤ debounce + 20ms)\n", "disk edit to nexus/definitionChanged, p50",
		median(lat).Round(time.Microsecond/10), "vs the debounce", debounce)
	return nil
}

// benchStart times the real binary from exec to its initialize reply on a
// workspace of 1,000 files and 10k commits, against the exec of
// nexusd --version, and reports its idle RSS.
func benchStart(tmp, large string) error {
	bin := filepath.Join(tmp, "nexusd")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/nexusd").CombinedOutput(); err != nil {
		return fmt.Errorf("build nexusd: %v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(large, ".nexus", "history.git")); err != nil {
		if err := makeHistory(large, 10000, 1000); err != nil {
			return err
		}
	}
	_, err := os.Stat(filepath.Join(large, ".nexus", "history.git", "nexus-history.idx"))
	firstNote := "the history index is already built"
	if err != nil {
		firstNote = "builds the history index"
	}
	files, commits := countFiles(filepath.Join(large, ".nexus", "definitions")), strings.TrimSpace(gitOut(large, "rev-list", "--count", "main"))
	first := true
	var starts, versions []time.Duration
	var rss int
	for range 7 {
		t := time.Now()
		if err := exec.Command(bin, "--version").Run(); err != nil {
			return err
		}
		versions = append(versions, time.Since(t))
		d, kb, err := startOnce(bin, large)
		if err != nil {
			return err
		}
		if first {
			fmt.Printf("%-44s %10v   (%d files, %s commits; %s)\n", "setup: first nexusd --stdio start to initialize", d.Round(time.Millisecond), files, commits, firstNote)
			first = false
			continue
		}
		starts = append(starts, d)
		rss = kb
	}
	report("nexusd --stdio start to initialize reply", median(starts), median(versions), "exec of nexusd --version", "≤ 100ms")
	fmt.Printf("%-44s %7d KiB   (target: report)\n", "nexusd --stdio idle RSS after start", rss)
	return nil
}

func countFiles(dir string) int {
	n := 0
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// startOnce starts nexusd --stdio, times its initialize reply, reads its
// RSS after a second of idling, and stops it with shutdown and exit.
func startOnce(bin, ws string) (time.Duration, int, error) {
	cmd := exec.Command(bin, "--stdio", "--workspace", ws, "--log-level", "error")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	send := func(body string) {
		fmt.Fprintf(stdin, "Content-Length: %d\r\n\r\n%s", len(body), body)
	}
	t := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"capabilities":{}}}`)
	br := bufio.NewReader(stdout)
	if err := readReply(br, `"id":1`); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return 0, 0, err
	}
	d := time.Since(t)
	send(`{"jsonrpc":"2.0","method":"initialized","params":{}}`)
	time.Sleep(time.Second)
	rss := vmRSS(cmd.Process.Pid)
	send(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`)
	send(`{"jsonrpc":"2.0","method":"exit"}`)
	go io.Copy(io.Discard, br)
	if err := cmd.Wait(); err != nil {
		return 0, 0, fmt.Errorf("nexusd after exit: %w", err)
	}
	return d, rss, nil
}

func readReply(br *bufio.Reader, want string) error {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "Content-Length:")))
		if err != nil {
			return fmt.Errorf("bad header %q", line)
		}
		br.ReadString('\n')
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			return err
		}
		if strings.Contains(string(body), want) {
			return nil
		}
	}
}

func vmRSS(pid int) int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb
		}
	}
	return 0
}
