package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// TestEditorApprovals: an app's call that asks is answered "always" in the
// editor; nexus/approvals/list shows the remembered answer with the path it
// covers, and nexus/approvals/revoke forgets it (by the tool's name: every
// answer about the tool), as gRPC's ListApprovals and RevokeApproval do.
func TestEditorApprovals(t *testing.T) {
	ws := newWorkspace(t, "apps:\n  - id: planner\n")
	e := startEditor(t, ws)
	e.permission = "allow_always"
	res := e.initialize(os.Getpid())
	conn, _ := grpcAdmin(t, res)
	tok, err := os.ReadFile(filepath.Join(ws, ".nexus", "run", "apps", "planner.token"))
	if err != nil {
		t.Fatal(err)
	}
	call, err := nexusv1.NewToolManagerClient(conn).ExecuteTool(as(strings.TrimSpace(string(tok))), &nexusv1.ExecuteToolRequest{
		ToolName: "write_file", ArgumentsJson: `{"path":"notes.txt","content":"hi"}`, RequestingAppId: "planner"})
	if err != nil || !call.GetSuccess() {
		t.Fatalf("ExecuteTool = %v, %v", call, err)
	}
	type approval struct {
		AppID    string `json:"appId"`
		ToolName string `json:"toolName"`
		Tool     string `json:"tool"`
		Scope    string `json:"scope"`
		Allow    bool   `json:"allow"`
		Decision string `json:"decision"`
		Hash     string `json:"definitionHash"`
	}
	var list struct {
		Approvals []approval `json:"approvals"`
	}
	e.mustCall("nexus/approvals/list", map[string]any{}, &list)
	if len(list.Approvals) != 1 {
		t.Fatalf("approvals = %+v", list)
	}
	if a := list.Approvals[0]; a.AppID != "planner" || a.ToolName != "write_file:notes.txt" || a.Tool != "write_file" || a.Scope != "path" || !a.Allow || a.Decision != "allow" || a.Hash == "" {
		t.Errorf("approval = %+v", a)
	}
	var rev struct {
		Revoked bool `json:"revoked"`
	}
	e.mustCall("nexus/approvals/revoke", map[string]any{"appId": "planner", "toolName": "write_file"}, &rev)
	if !rev.Revoked {
		t.Errorf("revoke = %+v", rev)
	}
	e.mustCall("nexus/approvals/list", map[string]any{}, &list)
	if len(list.Approvals) != 0 {
		t.Errorf("after revoke: %+v", list)
	}
	e.mustCall("nexus/approvals/revoke", map[string]any{"appId": "planner", "toolName": "write_file"}, &rev)
	if rev.Revoked {
		t.Errorf("a second revoke revoked something")
	}
	if err := e.call("nexus/approvals/revoke", map[string]any{"appId": "planner"}, nil); err == nil || !strings.Contains(err.Message, "toolName") {
		t.Errorf("revoke without toolName: %v", err)
	}
}
