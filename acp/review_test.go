package acp_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// TestPermissionDiffOfTheFile: the diff in the client's permission prompt
// is the change Nexus computed from the file as the client has it (its
// unsaved buffer), old text included, not the model's arguments alone.
func TestPermissionDiffOfTheFile(t *testing.T) {
	f := newFixture(t, map[string]policy.Decision{"write_file": policy.Ask})
	c := newClient(nil)
	conn := f.connect(t, c)
	c.buffers = map[string]string{filepath.Join(f.ws, "a.txt"): "alpha in the editor, unsaved\n"}
	id := f.newSession(t, conn)
	f.model.add(calls(llm.ToolCall{ID: "1", Name: "write_file", Arguments: json.RawMessage(`{"path":"a.txt","content":"beta\n"}`)}))
	if stop := prompt(t, conn, id, "write a.txt"); stop != acpsdk.StopReasonEndTurn {
		t.Errorf("stop reason %q", stop)
	}
	if len(c.asked) != 1 {
		t.Fatalf("asked %d times, want once", len(c.asked))
	}
	ask, _ := json.Marshal(c.asked[0])
	for _, want := range []string{`"type":"diff"`, `"oldText":"alpha in the editor, unsaved\n"`, `"newText":"beta\n"`} {
		if !strings.Contains(string(ask), want) {
			t.Errorf("the permission request lacks %s: %s", want, ask)
		}
	}
}
