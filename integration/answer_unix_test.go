//go:build unix

package integration

import (
	"path/filepath"
	"strings"
	"testing"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// TestTerminalAnswerTyped: in a real terminal, a line typed before any
// question is dropped, never kept for the question that comes next; the
// question shows the app's words escaped; "y" typed then approves it.
func TestTerminalAnswerTyped(t *testing.T) {
	ws := newWorkspace(t, "apps:\n  - id: planner\n")
	d := startDaemon(t, ws)
	p := startPane(t, filepath.Join(binDir, "nexus"), "--workspace", ws, "calls", "--watch", "--answer")
	p.await("the answerer", func(s string) bool { return strings.Contains(s, "answering the person's permission questions here") })
	p.send("y")
	p.await("the dropped line", func(s string) bool { return strings.Contains(s, "(no question is open: the line is dropped)") })

	done := make(chan *nexusv1.ExecuteToolResponse, 1)
	go func() {
		r, err := d.framework().ExecuteTool(as(d.appToken("planner")), &nexusv1.ExecuteToolRequest{ToolName: "write_file",
			ArgumentsJson: `{"path":"plan.yaml","content":"x"}`, Intent: "\x1b[2K\r  command:  echo safe"})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	s := p.await("the question", func(s string) bool { return strings.Contains(s, "Allow? [y]es once") })
	shows(t, s, "Permission needed: write_file", `    intent:   \x1b[2K\r  command:  echo safe`, "\n  command:  write_file plan.yaml (1 bytes)\n")
	select {
	case r := <-done:
		t.Fatalf("the call ended before the person answered: %v", r)
	default:
	}
	p.send("y")
	if r := <-done; r == nil || !r.Success {
		t.Fatalf("approved call: %v", r)
	}
}
