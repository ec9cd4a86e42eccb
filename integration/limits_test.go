package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// hugeArgs are get_current_time's arguments padded to 30 MiB, as in the
// report that took the daemon from 27 MB to 1.66 GB of RSS.
var hugeArgs = `{"timezone":"UTC","pad":"` + strings.Repeat("x", 30<<20-len(`{"timezone":"UTC","pad":""}`)) + `"}`

// Twelve calls with 30 MiB of arguments, from an app without any tool
// grant, fail with a message that names the sizes and the limit, and the
// daemon's memory stays low after them: over gRPC and from the editor they
// are refused before they are read (one message is at most 22 MiB by
// default); with the message limit raised above them, by the ToolManager
// before they are parsed, and nothing keeps them.
func TestHugeArgumentsAreRefused(t *testing.T) {
	const calls = 12
	const maxRSS = 200 << 10 // KiB; the report saw 1.66 GB
	checkRSS := func(t *testing.T, pid, idle int) {
		t.Helper()
		after := rssKiB(t, pid, "VmRSS")
		t.Logf("RSS idle %d KiB, after %d calls of 30 MiB %d KiB", idle, calls, after)
		if after > maxRSS {
			t.Errorf("RSS %d KiB after %d calls of 30 MiB (idle %d KiB), want < %d KiB", after, calls, idle, maxRSS)
		}
	}

	t.Run("gRPC", func(t *testing.T) {
		d := startDaemon(t, newWorkspace(t, "apps:\n  - id: alpha\n"))
		idle := rssKiB(t, d.cmd.Process.Pid, "VmRSS")
		alpha := as(d.appToken("alpha"))
		tm := nexusv1.NewToolManagerClient(d.conn)
		for i := range calls {
			req := &nexusv1.ExecuteToolRequest{ToolName: "get_current_time", ArgumentsJson: hugeArgs}
			var err error
			switch i % 3 {
			case 0:
				_, err = d.framework().ExecuteTool(alpha, req)
			case 1:
				_, err = tm.ExecuteTool(alpha, req)
			case 2:
				var stream nexusv1.CoreFramework_ExecuteToolStreamClient
				if stream, err = d.framework().ExecuteToolStream(alpha, req); err == nil {
					_, err = stream.Recv()
				}
			}
			// The limit: 2 × definitions.maxFileSize + 1 MiB for the
			// arguments, and 1 MiB more for the message.
			st, _ := status.FromError(err)
			if msg := st.Message(); st.Code() != codes.ResourceExhausted || !strings.Contains(msg, "larger than max (3145") || !strings.HasSuffix(msg, fmt.Sprintf("vs. %d)", 22<<20)) {
				t.Fatalf("call %d: %v, want resource_exhausted naming the size and the limit of %d", i, err, 22<<20)
			}
		}
		if r, err := d.framework().ExecuteTool(alpha, &nexusv1.ExecuteToolRequest{ToolName: "get_current_time"}); err != nil || !r.Success {
			t.Fatalf("a small call after them: %v %v", r, err)
		}
		checkRSS(t, d.cmd.Process.Pid, idle)
	})

	t.Run("gRPC with the message limit raised", func(t *testing.T) {
		ws := newWorkspace(t, "apps:\n  - id: alpha\ngrpc:\n  maxMessageSize: 64MiB\n")
		d := startDaemon(t, ws)
		alpha := as(d.appToken("alpha"))
		want := "arguments are 30.0 MiB, over the limit of 21.0 MiB (tools.maxArgumentsSize)"
		dozen := func() int {
			for i := range calls {
				r, err := d.framework().ExecuteTool(alpha, &nexusv1.ExecuteToolRequest{ToolName: "get_current_time", ArgumentsJson: hugeArgs})
				if err != nil || r.Success || r.ErrorCode != "invalid_arguments" || r.Message != want {
					t.Fatalf("call %d: %v %v, want invalid_arguments %q", i, r, err, want)
				}
			}
			return rssKiB(t, d.cmd.Process.Pid, "VmRSS")
		}
		// Each request is read whole now, and its copies are garbage
		// once it is refused; the runtime returns that memory to the
		// system lazily. Were the arguments kept, a second dozen would
		// add 360 MiB.
		first, second := dozen(), dozen()
		t.Logf("RSS after %d calls of 30 MiB: %d KiB, after %d more: %d KiB", calls, first, calls, second)
		if second-first > 180<<10 {
			t.Errorf("RSS grew by %d KiB over the second dozen of calls", second-first)
		}
		// What the daemon keeps of them is their head.
		list, err := nexusv1.NewToolManagerClient(d.conn).ListToolCalls(as(d.admin), &nexusv1.ListToolCallsRequest{})
		if err != nil || len(list.ToolCalls) != 2*calls {
			t.Fatalf("ListToolCalls: %d calls, %v", len(list.GetToolCalls()), err)
		}
		for _, c := range list.ToolCalls {
			if !c.ArgumentsTruncated || c.ArgumentsSize != int64(len(hugeArgs)) || len(c.ArgumentsJson) > 64<<10 || !json.Valid([]byte(c.ArgumentsJson)) {
				t.Errorf("kept call: truncated %v, size %d, %d bytes of arguments", c.ArgumentsTruncated, c.ArgumentsSize, len(c.ArgumentsJson))
			}
		}
		d.stop() // the audit log is written
		audit, err := os.ReadFile(filepath.Join(ws, ".nexus", "audit", "toolcalls.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Count(string(audit), "\n"); lines != 2*calls || len(audit) > 2*calls*(64<<10+1024) {
			t.Errorf("audit log: %d lines, %d bytes", lines, len(audit))
		}
	})

	t.Run("editor", func(t *testing.T) {
		e := startEditor(t, newWorkspace(t, ""))
		e.initialize(os.Getpid())
		idle := rssKiB(t, e.cmd.Process.Pid, "VmRSS")
		body := `{"jsonrpc":"2.0","id":"huge","method":"nexus/tools/execute","params":{"toolName":"get_current_time","arguments":` + hugeArgs + `}}`
		for i := range calls {
			e.mu.Lock()
			n := len(e.orphans)
			e.mu.Unlock()
			if err := e.writeRaw([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body))); err != nil {
				t.Fatal(err)
			}
			e.await("the refusal", 60*time.Second, func() bool { return len(e.orphans) > n })
			e.mu.Lock()
			got := e.orphans[n]
			e.mu.Unlock()
			// Refused by its header, so its id is unknown.
			if got.Error == nil || got.Error.Code != -32600 || !strings.Contains(got.Error.Message, fmt.Sprintf("over the limit of %d bytes", 22<<20)) {
				t.Fatalf("call %d: %+v", i, got.Error)
			}
		}
		checkRSS(t, e.cmd.Process.Pid, idle)
	})

	t.Run("editor with a lower arguments limit", func(t *testing.T) {
		e := startEditor(t, newWorkspace(t, "tools:\n  maxArgumentsSize: 4MiB\n"))
		e.initialize(os.Getpid())
		args := json.RawMessage(`{"timezone":"UTC","pad":"` + strings.Repeat("x", 8<<20) + `"}`)
		var res struct {
			Success   bool   `json:"success"`
			ErrorCode string `json:"errorCode"`
			Message   string `json:"message"`
		}
		err := e.call("nexus/tools/execute", map[string]any{"toolName": "get_current_time", "arguments": args}, &res)
		if want := "arguments are 8.0 MiB, over the limit of 4.0 MiB (tools.maxArgumentsSize)"; err != nil || res.Success || res.ErrorCode != "invalid_arguments" || res.Message != want {
			t.Errorf("%+v %v, want invalid_arguments %q", res, err, want)
		}
	})
}
