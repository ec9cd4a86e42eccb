package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/tools"
)

// TestGatePreviewsWhatItAsks: the question about a call whose tool has a
// Preview carries the change it computed; the preview is not computed
// when no one is asked (an allowed call); a failed preview asks all the
// same, saying why there is no diff; the handler is given what was shown.
func TestGatePreviewsWhatItAsks(t *testing.T) {
	after := "new\n"
	change := tools.ProposedChange{Path: "a.md", Action: tools.ChangeModified, Diff: "-old\n+new\n", After: &after, BeforeSHA256: "abc"}
	var previews int
	var previewErr error
	var handed []tools.ProposedChange
	tool := writeTool
	tool.Preview = func(_ context.Context, inv *tools.Invocation, args json.RawMessage) ([]tools.ProposedChange, error) {
		previews++
		if inv.Acting().AppID() != "planner" || !strings.Contains(string(args), "a.md") {
			t.Errorf("preview of %s for %+v", args, inv.Acting())
		}
		return []tools.ProposedChange{change}, previewErr
	}
	tool.Handler = func(_ context.Context, inv *tools.Invocation, _ json.RawMessage) (json.RawMessage, error) {
		handed = inv.Shown
		return json.RawMessage(`{}`), nil
	}
	var approvers Approvers
	var asked ICERC
	approvers.Set(editor(func(_ context.Context, _ tools.Call, rec ICERC) (Answer, error) {
		asked = rec
		return AllowOnce, nil
	}))
	p := New(Rules{Apps: map[string]AppRules{"planner": {Ask: []string{"write_file"}}}}, nil)
	m, err := tools.NewManager(tools.Options{Gate: p.Gate(&approvers, time.Minute, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.Register(tool); err != nil {
		t.Fatal(err)
	}

	if c := run(m); c.Status != tools.StatusCompleted || previews != 1 || len(asked.Changes) != 1 || *asked.Changes[0].After != after {
		t.Fatalf("asked: %+v, previews %d, record %+v", c.Error, previews, asked.Changes)
	}
	if len(handed) != 1 || handed[0].BeforeSHA256 != "abc" {
		t.Errorf("the handler was given %+v, not what was shown", handed)
	}

	previewErr = errors.New("a.md is unreadable")
	asked, handed = ICERC{}, nil
	if c := run(m); c.Status != tools.StatusCompleted || len(asked.Changes) != 0 ||
		!strings.Contains(strings.Join(asked.Risk.Details, "\n"), "no diff of the change can be shown: a.md is unreadable") {
		t.Errorf("failed preview: %+v, record %+v", c.Error, asked)
	}
	if handed != nil {
		t.Errorf("the handler was given %+v after a failed preview", handed)
	}

	p = New(Rules{Apps: map[string]AppRules{"planner": {Allow: []string{"write_file"}}}}, nil)
	m2, err := tools.NewManager(tools.Options{Gate: p.Gate(&approvers, time.Minute, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m2.Close() })
	if err := m2.Register(tool); err != nil {
		t.Fatal(err)
	}
	previews = 0
	if c := run(m2); c.Status != tools.StatusCompleted || previews != 0 || handed != nil {
		t.Errorf("an allowed call was previewed (%d) or handed a change (%+v): %+v", previews, handed, c.Error)
	}
}
