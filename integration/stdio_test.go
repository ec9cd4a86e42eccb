package integration

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// The editor mode: nexusd --stdio on real pipes, driven by a client that
// checks every byte the daemon writes on its standard output.

// rpcMsg is any JSON-RPC 2.0 message.
type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

type rpcNote struct {
	method string
	params json.RawMessage
	id     json.RawMessage // of a request
}

// editor is nexusd --stdio and the test's ends of its pipes. A reader
// parses the daemon's stdout strictly: every byte must belong to a frame
// "Content-Length: N\r\n\r\n" + N bytes of a JSON-RPC 2.0 message.
type editor struct {
	t       *testing.T
	ws      string
	cmd     *exec.Cmd
	stdin   *os.File // the daemon's stdin, written by the test
	errFile string   // the daemon's stderr (its log)
	exited  chan struct{}
	waitErr error

	writeMu sync.Mutex

	mu        sync.Mutex
	nextID    int
	pending   map[string]chan rpcMsg
	notes     []rpcNote
	requests  []rpcNote // requests of the daemon, as they came
	orphans   []rpcMsg  // responses with id null or an id nobody waits for
	violation []string  // what on stdout was not a well-formed frame
	frames    int
	outBytes  int64
	onNote    func(method string, params json.RawMessage) // called under mu
	// permission is the answer to nexus/requestPermission; default
	// allow_once; "never": the request is left unanswered.
	permission string
	// elicit answers nexus/requestElicitation (nil: not a method of this
	// editor); it returns the result, or nil to leave the request open.
	elicit   func(params json.RawMessage) any
	change   chan struct{}
	readDone chan struct{}
}

// startEditor spawns nexusd --stdio on ws with real pipes.
func startEditor(t *testing.T, ws string) *editor {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	e := &editor{t: t, ws: ws, stdin: inW, errFile: filepath.Join(t.TempDir(), "nexusd.log"), exited: make(chan struct{}),
		pending: map[string]chan rpcMsg{}, change: make(chan struct{}, 1), readDone: make(chan struct{})}
	errF, err := os.Create(e.errFile)
	if err != nil {
		t.Fatal(err)
	}
	e.cmd = exec.Command(filepath.Join(binDir, "nexusd"), "--stdio", "--workspace", ws)
	e.cmd.Stdin, e.cmd.Stdout, e.cmd.Stderr = inR, outW, errF
	err = e.cmd.Start()
	inR.Close()
	outW.Close()
	errF.Close()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		e.waitErr = e.cmd.Wait()
		close(e.exited)
	}()
	go e.read(outR)
	t.Cleanup(func() {
		e.stdin.Close()
		select {
		case <-e.exited:
		case <-time.After(30 * time.Second):
			e.cmd.Process.Kill()
			<-e.exited
			t.Errorf("nexusd did not exit after its stdin was closed\n%s", e.log())
		}
		<-e.readDone
		outR.Close()
	})
	return e
}

// log is the daemon's stderr so far.
func (e *editor) log() string {
	data, _ := os.ReadFile(e.errFile)
	return string(data)
}

func (e *editor) signal() {
	select {
	case e.change <- struct{}{}:
	default:
	}
}

func (e *editor) violate(format string, args ...any) {
	e.mu.Lock()
	e.violation = append(e.violation, fmt.Sprintf(format, args...))
	e.mu.Unlock()
	e.signal()
}

// read parses stdout until EOF.
func (e *editor) read(r io.Reader) {
	defer close(e.readDone)
	defer e.signal()
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		body, n, err := readStrictFrame(br)
		if err == io.EOF {
			return
		}
		if err != nil {
			e.violate("%v", err)
			io.Copy(io.Discard, br) // keep the daemon from blocking
			return
		}
		e.mu.Lock()
		e.frames++
		e.outBytes += int64(n)
		e.mu.Unlock()
		e.dispatch(body)
	}
}

// readStrictFrame reads one frame exactly as nexusd writes them. io.EOF
// means the stream ended between frames.
func readStrictFrame(br *bufio.Reader) ([]byte, int, error) {
	line, err := br.ReadString('\n')
	if err == io.EOF && line == "" {
		return nil, 0, io.EOF
	}
	if err != nil {
		return nil, 0, fmt.Errorf("stdout ended inside a header: %q", clipStr(line))
	}
	digits, ok := strings.CutPrefix(line, "Content-Length: ")
	digits, ok2 := strings.CutSuffix(digits, "\r\n")
	n, aerr := strconv.Atoi(digits)
	if !ok || !ok2 || aerr != nil || n <= 0 || strconv.Itoa(n) != digits {
		return nil, 0, fmt.Errorf("stdout has a line that is not a frame header: %q", clipStr(line))
	}
	blank, err := br.ReadString('\n')
	if err != nil || blank != "\r\n" {
		return nil, 0, fmt.Errorf("no blank line after %q: %q", strings.TrimSpace(line), clipStr(blank))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, 0, fmt.Errorf("stdout ended inside a body of %d bytes: %v", n, err)
	}
	if !utf8.Valid(body) || !json.Valid(body) {
		return nil, 0, fmt.Errorf("a frame body is not valid UTF-8 JSON: %q", clipStr(string(body)))
	}
	return body, len(line) + len(blank) + n, nil
}

func clipStr(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// dispatch routes one frame body: responses to their callers, requests of
// the daemon answered, notifications recorded.
func (e *editor) dispatch(body []byte) {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(body, &batch); err != nil || len(batch) == 0 {
			e.violate("a batch frame that is not an array of messages: %q", clipStr(string(body)))
			return
		}
		for _, m := range batch {
			e.dispatch(m)
		}
		return
	}
	var m rpcMsg
	if err := json.Unmarshal(body, &m); err != nil || m.JSONRPC != "2.0" {
		e.violate("a frame that is not a JSON-RPC 2.0 message: %q", clipStr(string(body)))
		return
	}
	switch {
	case m.Method != "" && m.ID != nil:
		e.mu.Lock()
		e.requests = append(e.requests, rpcNote{method: m.Method, params: m.Params, id: m.ID})
		e.mu.Unlock()
		go e.answer(m)
	case m.Method != "":
		e.mu.Lock()
		e.notes = append(e.notes, rpcNote{method: m.Method, params: m.Params})
		if e.onNote != nil {
			e.onNote(m.Method, m.Params)
		}
		e.mu.Unlock()
	default:
		if m.ID == nil || (m.Result == nil) == (m.Error == nil) {
			e.violate("a response without an id, or without exactly one of result and error: %q", clipStr(string(body)))
			return
		}
		e.mu.Lock()
		ch := e.pending[string(m.ID)]
		delete(e.pending, string(m.ID))
		if ch == nil {
			e.orphans = append(e.orphans, m)
		}
		e.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
	e.signal()
}

// answer replies to a request of the daemon: permission is allowed once,
// anything else (nexus/requestMcpTrust included: an MCP server stays
// waiting for approval) is not a method of this editor.
func (e *editor) answer(m rpcMsg) {
	reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	e.mu.Lock()
	elicit := e.elicit
	e.mu.Unlock()
	if m.Method == "nexus/requestElicitation" && elicit != nil {
		res := elicit(m.Params)
		if res == nil {
			return
		}
		reply["result"] = res
	} else if m.Method == "nexus/requestPermission" {
		e.mu.Lock()
		ans := cmp.Or(e.permission, "allow_once")
		e.mu.Unlock()
		if ans == "never" {
			return
		}
		reply["result"] = ans
	} else {
		reply["error"] = map[string]any{"code": -32601, "message": "not an editor method"}
	}
	body, _ := json.Marshal(reply)
	e.writeFrame(body)
}

// permissionsAsked is how many permission requests the daemon has sent.
func (e *editor) permissionsAsked() int { return len(e.permissionRequests()) }

// permissionRequests are the params of the permission requests the
// daemon has sent, in order.
func (e *editor) permissionRequests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, r := range e.requests {
		if r.method == "nexus/requestPermission" {
			out = append(out, string(r.params))
		}
	}
	return out
}

// setPermission sets the answer to the next permission requests.
func (e *editor) setPermission(ans string) {
	e.mu.Lock()
	e.permission = ans
	e.mu.Unlock()
}

// writeRaw writes bytes to the daemon's stdin as they are.
func (e *editor) writeRaw(b []byte) error {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	_, err := e.stdin.Write(b)
	return err
}

func (e *editor) writeFrame(body []byte) error {
	return e.writeRaw(append([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))), body...))
}

// expect registers a response the test waits for.
func (e *editor) expect(id string) chan rpcMsg {
	ch := make(chan rpcMsg, 1)
	e.mu.Lock()
	e.pending[id] = ch
	e.mu.Unlock()
	return ch
}

// start sends a request and returns where its response will arrive.
func (e *editor) start(method string, params any) (int, chan rpcMsg) {
	e.t.Helper()
	e.mu.Lock()
	e.nextID++
	id := e.nextID
	e.mu.Unlock()
	ch := e.expect(strconv.Itoa(id))
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.writeFrame(body); err != nil {
		e.t.Fatalf("%s: %v\n%s", method, err, e.log())
	}
	return id, ch
}

// wait waits for a response, with a deadline that only guards against a
// hung daemon.
func (e *editor) wait(what string, ch chan rpcMsg) rpcMsg {
	e.t.Helper()
	select {
	case m := <-ch:
		return m
	case <-e.exited:
		select {
		case m := <-ch:
			return m
		case <-e.readDone:
		}
		e.t.Fatalf("nexusd exited (%v) before it answered %s\n%s", e.waitErr, what, e.log())
	case <-time.After(60 * time.Second):
		e.t.Fatalf("no answer to %s\n%s", what, e.log())
	}
	return rpcMsg{}
}

// call sends a request, waits for its response and decodes its result.
func (e *editor) call(method string, params, result any) *rpcError {
	e.t.Helper()
	_, ch := e.start(method, params)
	m := e.wait(method, ch)
	if m.Error != nil {
		return m.Error
	}
	if result != nil {
		if err := json.Unmarshal(m.Result, result); err != nil {
			e.t.Fatalf("%s: result %s: %v", method, clipStr(string(m.Result)), err)
		}
	}
	return nil
}

func (e *editor) mustCall(method string, params, result any) {
	e.t.Helper()
	if err := e.call(method, params, result); err != nil {
		e.t.Fatalf("%s: %v", method, err)
	}
}

func (e *editor) notify(method string, params any) {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err := e.writeFrame(body); err != nil {
		e.t.Fatalf("%s: %v", method, err)
	}
}

type initResult struct {
	ServerInfo struct {
		Name string `json:"name"`
	} `json:"serverInfo"`
	Nexus struct {
		GRPCAddress    string `json:"grpcAddress"`
		AdminTokenFile string `json:"adminTokenFile"`
	} `json:"nexus"`
}

// initialize runs the LSP handshake with processId pid.
func (e *editor) initialize(pid int) initResult {
	e.t.Helper()
	var res initResult
	e.mustCall("initialize", map[string]any{"processId": pid, "clientInfo": map[string]string{"name": "stdio_test"},
		"capabilities": map[string]any{}}, &res)
	if res.ServerInfo.Name != "nexusd" || !strings.HasPrefix(res.Nexus.GRPCAddress, "unix://") || res.Nexus.AdminTokenFile == "" {
		e.t.Fatalf("initialize result: %+v", res)
	}
	e.notify("initialized", map[string]any{})
	// A barrier: the daemon handles a notification and the requests that
	// are not async in order, on its read loop, so once this answers the
	// editor is attached to answer permissions. Without it, a call made
	// over gRPC just after could find no editor yet (and be denied).
	var tools json.RawMessage
	e.mustCall("nexus/tools/list", map[string]any{}, &tools)
	return res
}

// await waits until cond holds; cond runs under the editor's lock, at
// every message and every few milliseconds (for conditions on disk).
func (e *editor) await(what string, timeout time.Duration, cond func() bool) {
	e.t.Helper()
	deadline := time.After(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		e.mu.Lock()
		ok := cond()
		e.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-e.change:
		case <-tick.C:
		case <-deadline:
			e.t.Fatalf("never saw %s\n%s", what, e.log())
		}
	}
}

// waitExit waits for the daemon to exit and returns its exit code.
func (e *editor) waitExit(why string) int {
	e.t.Helper()
	select {
	case <-e.exited:
	case <-time.After(60 * time.Second):
		e.cmd.Process.Kill()
		e.t.Fatalf("nexusd did not exit in 60s after %s\n%s", why, e.log())
	}
	return e.cmd.ProcessState.ExitCode()
}

// checkProtocol waits until stdout ends and reports anything on it that
// was not a well-formed frame.
func (e *editor) checkProtocol() {
	e.t.Helper()
	select {
	case <-e.readDone:
	case <-time.After(30 * time.Second):
		e.t.Fatalf("stdout did not end after nexusd exited (a child holds it?)")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, v := range e.violation {
		e.t.Errorf("stdout: %s", v)
	}
}

// grpcAdmin connects to the daemon's gRPC address with the admin token.
func grpcAdmin(t *testing.T, res initResult) (*grpc.ClientConn, context.Context) {
	t.Helper()
	tok, err := os.ReadFile(res.Nexus.AdminTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(res.Nexus.GRPCAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, as(strings.TrimSpace(string(tok)))
}

// Processes, read from /proc.

// pidsOf returns the processes whose command line is exactly args.
func pidsOf(args ...string) []int {
	want := strings.Join(args, "\x00") + "\x00"
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && string(data) == want {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat returns the state and parent of pid; ok false when it is gone.
func procStat(pid int) (state byte, ppid int, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	i := bytes.LastIndexByte(data, ')')
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0][0], ppid, true
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	st, _, ok := procStat(pid)
	return ok && st != 'Z'
}

// rssKiB reads a VmRSS/VmHWM line of /proc/pid/status.
func rssKiB(t *testing.T, pid int, field string) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatalf("%s: %q", field, line)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// startLongCommand starts, through the editor, an execute_command whose
// shell leaves a background sleep behind, and returns the processes
// between the daemon and that sleep (helper, shell, sleep), which must all
// be gone once the daemon is.
func startLongCommand(t *testing.T, e *editor) []int {
	t.Helper()
	marker := strconv.Itoa(100000 + rand.IntN(900000))
	e.start("nexus/tools/execute", map[string]any{"toolName": "execute_command",
		"arguments": map[string]string{"command": "sleep " + marker + " & echo $! > child.pid; wait"}})
	var pids []int
	e.await("the command's child started", 30*time.Second, func() bool {
		if _, err := os.Stat(filepath.Join(e.ws, "child.pid")); err != nil {
			return false
		}
		pids = pidsOf("sleep", marker)
		return len(pids) == 1
	})
	// The sleep's pid in child.pid is the one of its PID namespace; its
	// ancestors up to the daemon are found through /proc.
	chain := []int{pids[0]}
	for pid := pids[0]; ; {
		_, ppid, ok := procStat(pid)
		if !ok || ppid <= 1 {
			t.Fatalf("process %d is not a descendant of nexusd (%d)", pids[0], e.cmd.Process.Pid)
		}
		if ppid == e.cmd.Process.Pid {
			break
		}
		chain = append(chain, ppid)
		pid = ppid
	}
	var names []string
	for _, pid := range chain {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		names = append(names, fmt.Sprintf("%d %q", pid, bytes.ReplaceAll(bytes.TrimSuffix(cmdline, []byte{0}), []byte{0}, []byte{' '})))
	}
	t.Logf("the command's processes: %s", strings.Join(names, " < "))
	return chain
}

// awaitGone waits until the processes have exited.
func awaitGone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left []int
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				t.Errorf("process %d (%q) outlived nexusd", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

const stdioConfig = `
tools:
  timeout: 10m
`

func TestStdioParentDeathStopsDaemon(t *testing.T) {
	ws := newWorkspace(t, stdioConfig)
	parent := exec.Command("sleep", "1000") // the editor that launched nexusd
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		parent.Process.Kill()
		parent.Wait()
	}()
	e := startEditor(t, ws)
	e.initialize(parent.Process.Pid)
	if _, err := os.Stat(filepath.Join(ws, ".nexus", "run", "daemon.json")); err != nil {
		t.Fatalf("daemon.json: %v", err)
	}
	procs := startLongCommand(t, e)

	parent.Process.Kill()
	parent.Wait() // reaped, as the editor's own parent would
	if code := e.waitExit("its parent process died"); code != 1 {
		t.Errorf("exit code %d after the parent died without shutdown, want 1", code)
	}
	awaitGone(t, procs)
	if _, err := os.Stat(filepath.Join(ws, ".nexus", "run", "daemon.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("daemon.json left behind: %v", err)
	}
	e.checkProtocol()
	if log := e.log(); !strings.Contains(log, "the editor's process exited") {
		t.Errorf("the log does not say why nexusd stopped:\n%s", log)
	}
}

func TestStdioStdinCloseStopsDaemon(t *testing.T) {
	ws := newWorkspace(t, stdioConfig)
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	procs := startLongCommand(t, e)

	e.stdin.Close()
	if code := e.waitExit("its stdin was closed while a nexus/tools/execute request was in flight"); code != 1 {
		t.Errorf("exit code %d after stdin closed without shutdown, want 1", code)
	}
	awaitGone(t, procs)
	if _, err := os.Stat(filepath.Join(ws, ".nexus", "run", "daemon.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("daemon.json left behind: %v", err)
	}
	e.checkProtocol()
}

func TestStdioStdoutIsOnlyProtocol(t *testing.T) {
	ws := newWorkspace(t, stdioConfig)
	e := startEditor(t, ws)
	res := e.initialize(os.Getpid())
	conn, admin := grpcAdmin(t, res)

	// A command that floods its stdout and stderr: it goes into the
	// result, never onto the daemon's stdout.
	var out struct {
		Success    bool   `json:"success"`
		Message    string `json:"message"`
		ErrorCode  string `json:"errorCode"`
		OutputJSON string `json:"outputJson"`
	}
	e.mustCall("nexus/tools/execute", map[string]any{"toolName": "execute_command", "arguments": map[string]string{
		"command": "yes | head -c 1000000; yes err | head -c 1000000 >&2; echo done"}}, &out)
	var cmdRes execResult
	// 2 MB is over the output cap of 1 MiB: the call ends with output_limit
	// and keeps the head and the tail.
	if err := json.Unmarshal([]byte(out.OutputJSON), &cmdRes); err != nil || out.ErrorCode != "output_limit" || !cmdRes.Truncated ||
		!strings.HasSuffix(cmdRes.Stdout, "done\n") {
		t.Errorf("flooding command: success %v (%s %s), exit %d, stdout %d bytes ending %q, stderr %d bytes, truncated %v: %v",
			out.Success, out.ErrorCode, out.Message, cmdRes.ExitCode, len(cmdRes.Stdout), cmdRes.Stdout[max(0, len(cmdRes.Stdout)-20):], len(cmdRes.Stderr), cmdRes.Truncated, err)
	}

	// A log entry of an app: nexus/log and window/logMessage.
	if _, err := nexusv1.NewCoreFrameworkClient(conn).LogMessage(admin, &nexusv1.LogMessageRequest{Level: "warn", Message: "hello from gRPC"}); err != nil {
		t.Fatal(err)
	}
	e.await("the log entry as nexus/log and window/logMessage", 30*time.Second, func() bool {
		var log, msg bool
		for _, n := range e.notes {
			if strings.Contains(string(n.params), "hello from gRPC") {
				log = log || n.method == "nexus/log"
				msg = msg || n.method == "window/logMessage"
			}
		}
		return log && msg
	})

	// A malformed frame is answered on stdout, and logged on stderr.
	e.writeRaw([]byte("Content-Length: 5\r\n\r\nhello"))
	e.await("the answer to a malformed frame", 30*time.Second, func() bool {
		return len(e.orphans) == 1 && e.orphans[0].Error != nil && e.orphans[0].Error.Code == -32700
	})
	e.mustCall("nexus/tools/list", map[string]any{}, nil)

	if err := e.call("shutdown", nil, nil); err != nil {
		t.Fatal(err)
	}
	e.notify("exit", nil)
	if code := e.waitExit("exit"); code != 0 {
		t.Errorf("exit code %d after shutdown and exit, want 0", code)
	}
	e.checkProtocol()
	e.mu.Lock()
	t.Logf("stdout: %d frames, %d bytes, all well-formed", e.frames, e.outBytes)
	e.mu.Unlock()
	if log := e.log(); !strings.Contains(log, "malformed") {
		t.Errorf("the malformed frame is not in the daemon's log:\n%s", log)
	}
}

func TestStdioMalformedFramesDoNotDisturbGRPC(t *testing.T) {
	ws := newWorkspace(t, stdioConfig)
	e := startEditor(t, ws)
	res := e.initialize(os.Getpid())
	conn, admin := grpcAdmin(t, res)
	cf := nexusv1.NewCoreFrameworkClient(conn)
	if _, err := cf.SetRuntimeValue(admin, &nexusv1.SetRuntimeValueRequest{Namespace: "n", Key: "k", Value: "v"}); err != nil {
		t.Fatal(err)
	}

	// gRPC clients keep calling while the editor misbehaves.
	var (
		calls   atomic.Int64
		errMu   sync.Mutex
		grpcErr []string
		wg      sync.WaitGroup
	)
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopLoop := func() {
		stopOnce.Do(func() { close(stop) })
		wg.Wait()
	}
	defer stopLoop()
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(admin, 30*time.Second)
				v, err := cf.GetRuntimeValue(ctx, &nexusv1.GetRuntimeValueRequest{Namespace: "n", Key: "k"})
				if err == nil && (!v.Found || v.Value != "v") {
					err = fmt.Errorf("GetRuntimeValue = %v", v)
				}
				if err == nil {
					var r *nexusv1.ExecuteToolResponse
					r, err = cf.ExecuteTool(ctx, &nexusv1.ExecuteToolRequest{ToolName: "get_current_time", ArgumentsJson: `{"timezone":"UTC"}`})
					if err == nil && !r.Success {
						err = fmt.Errorf("get_current_time = %v", r)
					}
				}
				cancel()
				if err != nil {
					errMu.Lock()
					grpcErr = append(grpcErr, err.Error())
					errMu.Unlock()
				}
				calls.Add(1)
			}
		})
	}
	awaitCalls := func(n int64) {
		deadline := time.Now().Add(60 * time.Second)
		for calls.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("the gRPC loop is stuck at %d calls", calls.Load())
			}
			time.Sleep(time.Millisecond)
		}
	}
	awaitCalls(10)
	before := calls.Load()

	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	var bigBatch strings.Builder
	bigBatch.WriteString("[")
	for i := range 10000 {
		if i > 0 {
			bigBatch.WriteString(",")
		}
		fmt.Fprintf(&bigBatch, `{"jsonrpc":"2.0","id":%d,"method":"nexus/tools/list"}`, 100000+i)
	}
	bigBatch.WriteString("]")
	overLimit := 100 << 20 // over the daemon's 22 MiB message limit, and sent in full
	cases := []struct {
		name string
		raw  string
		id   string // the id the error must carry; "" for null
		code int
	}{
		{"no Content-Length", "Content-Type: application/json\r\n\r\n" + `{"jsonrpc":"2.0","id":50,"method":"nexus/tools/list"}`, "", -32700},
		{"negative Content-Length", "Content-Length: -5\r\n\r\nhello", "", -32700},
		{"non-numeric Content-Length", "Content-Length: 1e3\r\n\r\nhello", "", -32700},
		{"Content-Length 0", "Content-Length: 0\r\n\r\n", "", -32600},
		{"header line over 4 KiB", "X-Padding: " + strings.Repeat("a", 8<<10) + "\r\n", "", -32700},
		{"header without colon", "Content-Length 12\r\n\r\n", "", -32700},
		{"invalid JSON", frame(`{"jsonrpc":"2.0","id":51,"method":`), "", -32700},
		{"invalid UTF-8", frame(`{"jsonrpc":"2.0","id":52,"method":"nexus/tools/list","params":{"x":"` + "\xff\xfe" + `"}}`), "52", -32700},
		{"not JSON-RPC", frame(`{"id":53,"hello":"world"}`), "53", -32600},
		{"JSON-RPC 1.0", frame(`{"id":54,"method":"nexus/tools/list","params":[]}`), "54", -32600},
		{"a JSON string", frame(`"hello"`), "", -32600},
		{"batch of 10,000 requests", frame(bigBatch.String()), "", -32600},
		{"empty batch", frame(`[]`), "", -32600},
		{"100 MiB message", fmt.Sprintf("Content-Length: %d\r\n\r\n", overLimit) + strings.Repeat("x", overLimit), "", -32600},
	}
	for i, tc := range cases {
		var ch chan rpcMsg
		e.mu.Lock()
		nOrphans := len(e.orphans)
		e.mu.Unlock()
		if tc.id != "" {
			ch = e.expect(tc.id)
		}
		if err := e.writeRaw([]byte(tc.raw)); err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, e.log())
		}
		var got rpcMsg
		if ch != nil {
			got = e.wait(tc.name, ch)
		} else {
			e.await("the answer to "+tc.name, 60*time.Second, func() bool { return len(e.orphans) > nOrphans })
			e.mu.Lock()
			got = e.orphans[nOrphans]
			e.mu.Unlock()
		}
		if got.Error == nil || got.Error.Code != tc.code || (tc.id == "" && string(got.ID) != "null") {
			t.Errorf("%s: answered id %s %+v, want id %q code %d", tc.name, got.ID, got.Error, tc.id, tc.code)
		}
		// The next request is read and answered as if nothing happened.
		var list struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := e.call("nexus/tools/list", map[string]any{}, &list); err != nil || len(list.Tools) == 0 {
			t.Fatalf("after %s (case %d): %v %v", tc.name, i, err, list)
		}
	}
	if calls.Load() == before {
		t.Errorf("no gRPC call completed while the malformed frames were sent")
	}
	// A small batch is answered as a batch.
	chA, chB := e.expect(`"a"`), e.expect(`"b"`)
	e.writeRaw([]byte(frame(`[{"jsonrpc":"2.0","id":"a","method":"nexus/tools/list"},{"jsonrpc":"2.0","id":"b","method":"nexus/runtime/get","params":{"namespace":"n","key":"k"}}]`)))
	if a, b := e.wait("batch a", chA), e.wait("batch b", chB); a.Error != nil || b.Error != nil || !strings.Contains(string(b.Result), `"v"`) {
		t.Errorf("batch: %+v %+v", a, b)
	}
	nullIDs := 0
	for _, tc := range cases {
		if tc.id == "" {
			nullIDs++
		}
	}
	e.mu.Lock()
	nOrphans := len(e.orphans)
	if nOrphans != nullIDs {
		t.Errorf("%d answers with an unknown or null id, want %d: %+v", nOrphans, nullIDs, e.orphans)
	}
	e.mu.Unlock()

	// Last, a frame that claims 2 GiB and sends a few bytes: what follows
	// is its body, so the valid request after it is never answered.
	e.writeRaw([]byte("Content-Length: 2147483648\r\n\r\n{\"short\":1}" + frame(`{"jsonrpc":"2.0","id":999,"method":"nexus/tools/list"}`)))
	e.await("the answer to the 2 GiB claim", 60*time.Second, func() bool { return len(e.orphans) > nOrphans })
	e.mu.Lock()
	if got := e.orphans[nOrphans]; got.Error == nil || got.Error.Code != -32600 || string(got.ID) != "null" {
		t.Errorf("2 GiB claim: answered %s %+v", got.ID, got.Error)
	}
	e.mu.Unlock()
	awaitCalls(calls.Load() + 10) // gRPC still answers while the body is being skipped
	stopLoop()
	errMu.Lock()
	for _, err := range grpcErr {
		t.Errorf("gRPC call failed: %s", err)
	}
	errMu.Unlock()
	hwm, rss := rssKiB(t, e.cmd.Process.Pid, "VmHWM"), rssKiB(t, e.cmd.Process.Pid, "VmRSS")
	t.Logf("%d gRPC calls; nexusd peak RSS %d MiB, now %d MiB", calls.Load(), hwm>>10, rss>>10)
	if hwm > 512<<10 {
		t.Errorf("nexusd peak RSS %d MiB, want < 512 MiB", hwm>>10)
	}

	e.stdin.Close() // ends the 2 GiB body early: the input is gone
	if code := e.waitExit("its stdin was closed"); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	e.checkProtocol()
	e.mu.Lock()
	for _, m := range e.orphans[nOrphans+1:] {
		t.Errorf("answered inside the 2 GiB body: %s %+v", m.ID, m.Error)
	}
	e.mu.Unlock()
}

func TestStdioTenThousandFilesOnDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 fsynced commits: slow")
	}
	ws := newWorkspace(t, stdioConfig)
	e := startEditor(t, ws)
	const dirs, perDir = 10, 1000
	want := map[string]bool{}
	for d := range dirs {
		for f := range perDir {
			want[fmt.Sprintf("bulk/d%d/f%04d.md", d, f)] = true
		}
	}
	var notifiedMu sync.Mutex
	notified := map[string]bool{}
	e.mu.Lock()
	e.onNote = func(method string, params json.RawMessage) {
		if method != "nexus/definitionChanged" {
			return
		}
		var c struct {
			Path   string `json:"path"`
			Author string `json:"author"`
		}
		if json.Unmarshal(params, &c) == nil && c.Author == "disk" && strings.HasPrefix(c.Path, "bulk/") {
			notifiedMu.Lock()
			notified[c.Path] = true
			notifiedMu.Unlock()
		}
	}
	e.mu.Unlock()
	e.initialize(os.Getpid())

	start := time.Now()
	root := filepath.Join(ws, ".nexus", "definitions")
	var wg sync.WaitGroup
	for d := range dirs {
		wg.Go(func() {
			dir := filepath.Join(root, "bulk", fmt.Sprintf("d%d", d))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Error(err)
				return
			}
			for f := range perDir {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.md", f)), fmt.Appendf(nil, "file %d/%d\n", d, f), 0o644); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	written := time.Since(start)

	type entry struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	var files int
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var list struct {
			Entries []entry `json:"entries"`
		}
		if err := e.call("nexus/definitions/list", map[string]any{"path": "bulk", "recursive": true}, &list); err != nil && err.Code != -32004 {
			t.Fatalf("list: %v", err)
		}
		files = 0
		for _, en := range list.Entries {
			if en.Type == "FILE" {
				files++
			}
		}
		if files == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 5m, nexus/definitions/list shows %d of %d files\n%s", files, len(want), e.log())
		}
		time.Sleep(200 * time.Millisecond)
	}
	listed := time.Since(start)

	// Every file has exactly one history entry, by disk. The one exception
	// is a file the store read between os.WriteFile's create and its write
	// (its writer descheduled past the watcher's quiet time, on a loaded
	// machine): it is recorded empty, then edited; both by disk, the older
	// one empty, the newer one the content.
	authors := map[string][]string{}
	var author string
	commits := 0
	for line := range strings.SplitSeq(git(t, ws, "log", "--format=@@%an", "--name-only", "--no-renames"), "\n") {
		switch {
		case strings.HasPrefix(line, "@@"):
			author = line[2:]
			commits++
		case line != "":
			authors[line] = append(authors[line], author)
		}
	}
	readMidWrite := func(p string) bool {
		revs := strings.Fields(git(t, ws, "log", "--format=%H", "--", p))
		return len(revs) == 2 && git(t, ws, "cat-file", "-s", revs[1]+":"+p) == "0\n" &&
			strings.HasPrefix(git(t, ws, "cat-file", "-p", revs[0]+":"+p), "file ")
	}
	bad, midWrite := 0, 0
	for p := range want {
		if a := authors[p]; len(a) == 2 && a[0] == "disk" && a[1] == "disk" && readMidWrite(p) {
			midWrite++
			continue
		}
		if a := authors[p]; len(a) != 1 || a[0] != "disk" {
			if bad++; bad <= 10 {
				t.Errorf("%s: history authors %v, want [disk]", p, a)
			}
		}
	}
	for p := range authors {
		if strings.HasPrefix(p, "bulk/") && !want[p] {
			t.Errorf("history has %s, which was never written", p)
		}
	}
	if bad > 10 {
		t.Errorf("... and %d more files with a wrong history", bad-10)
	}

	// Every path was notified as a disk change.
	e.await("a nexus/definitionChanged by disk for every file", 60*time.Second, func() bool {
		notifiedMu.Lock()
		defer notifiedMu.Unlock()
		return len(notified) >= len(want)
	})
	notifiedMu.Lock()
	missing := 0
	for p := range want {
		if !notified[p] {
			missing++
		}
	}
	notifiedMu.Unlock()
	if missing > 0 {
		t.Errorf("%d files never notified", missing)
	}
	if midWrite > 0 {
		t.Logf("%d files were read between their create and their write, and recorded empty first", midWrite)
	}
	if strings.Contains(e.log(), "events were lost") {
		t.Logf("the watcher overflowed and rescanned")
	}
	t.Logf("10,000 files written in %v; all listed after %v (%d commits), all notified after %v", written.Round(time.Millisecond),
		listed.Round(time.Millisecond), commits, time.Since(start).Round(time.Millisecond))

	if err := e.call("shutdown", nil, nil); err != nil {
		t.Fatal(err)
	}
	e.notify("exit", nil)
	if code := e.waitExit("exit"); code != 0 {
		t.Errorf("exit code %d after shutdown and exit, want 0", code)
	}
	e.checkProtocol()
}

// The configuration files are watched: an edit of .nexus/config.yaml that
// does not load is an error the editor sees at once, naming the file and
// the line; a valid one is a warning that it applies at the next start.
// An MCP configuration in a directory created after the start is applied.
func TestStdioConfigFilesAreWatched(t *testing.T) {
	ws := newWorkspace(t, stdioConfig)
	e := startEditor(t, ws)
	e.initialize(os.Getpid())
	logged := func(level, message string, context ...string) func() bool {
		return func() bool {
			for _, n := range e.notes {
				var l struct {
					Level   string            `json:"level"`
					Message string            `json:"message"`
					Context map[string]string `json:"context"`
				}
				if n.method != "nexus/log" || json.Unmarshal(n.params, &l) != nil || l.Level != level || !strings.Contains(l.Message, message) {
					continue
				}
				all := strings.Join(slices.Collect(maps.Values(l.Context)), " ")
				if !slices.ContainsFunc(context, func(c string) bool { return !strings.Contains(all, c) }) {
					return true
				}
			}
			return false
		}
	}
	config := filepath.Join(ws, ".nexus", "config.yaml")
	if err := os.WriteFile(config, []byte(stdioConfig+"  outputLimit: lots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.await("an error naming the invalid configuration's file and line", 30*time.Second,
		logged("error", "the edited configuration is invalid", config+":4:", "tools.outputLimit"))

	if err := os.WriteFile(config, []byte(stdioConfig+"  outputLimit: 2MiB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.await("a warning that the valid configuration applies at the next start", 30*time.Second,
		logged("warn", "restart nexusd to apply it", config))

	// .vscode does not exist at the start; the server it names waits for
	// approval, and the editor is asked about it, with what it runs.
	if err := os.Mkdir(filepath.Join(ws, ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".vscode", "mcp.json"),
		[]byte(`{"servers": {"late": {"type": "stdio", "command": "/nonexistent/mcp-server"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	type serverStatus struct {
		Name, Source, State, Error, Pin string
		Trusted                         bool
		Launch                          struct{ Command string }
	}
	var pending serverStatus
	e.await("nexus/mcpServerStatus and nexus/requestMcpTrust of the server in .vscode/mcp.json", 30*time.Second, func() bool {
		var status, asked bool
		for _, n := range e.notes {
			if n.method == "nexus/mcpServerStatus" && json.Unmarshal(n.params, &pending) == nil &&
				pending.Name == "late" && pending.Source == ".vscode/mcp.json" && pending.State == "pending_approval" &&
				pending.Launch.Command == "/nonexistent/mcp-server" && !pending.Trusted {
				status = true
				break
			}
		}
		for _, r := range e.requests {
			var p struct{ Server serverStatus }
			if r.method == "nexus/requestMcpTrust" && json.Unmarshal(r.params, &p) == nil && p.Server.Name == "late" && p.Server.Pin != "" {
				asked = true
			}
		}
		return status && asked
	})
	// Approved with nexus/mcp/trust, it is started (and fails, naming the
	// missing program).
	e.mustCall("nexus/mcp/trust", map[string]any{"name": "late", "pin": pending.Pin}, nil)
	e.await("nexus/mcpServerStatus of the approved server, failed", 30*time.Second, func() bool {
		for _, n := range e.notes {
			var s serverStatus
			if n.method == "nexus/mcpServerStatus" && json.Unmarshal(n.params, &s) == nil &&
				s.Name == "late" && s.Trusted && strings.Contains(s.Error, "/nonexistent/mcp-server") {
				return true
			}
		}
		return false
	})
	var servers struct {
		Servers []struct{ Name string } `json:"servers"`
	}
	e.mustCall("nexus/mcp/servers", map[string]any{}, &servers)
	if len(servers.Servers) != 1 || servers.Servers[0].Name != "late" {
		t.Errorf("nexus/mcp/servers = %+v", servers)
	}
}
