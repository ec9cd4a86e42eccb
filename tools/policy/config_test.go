package policy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/workspace"
)

func TestFromConfig(t *testing.T) {
	cfg := workspace.DefaultConfig()
	cfg.Tools.Policy = map[string]string{
		"write_file":                 "ask",
		"github/*":                   "deny",
		"execute_command:git status": "allow",
		"execute_command: rm  **":    "deny",
	}
	cfg.Apps = []workspace.AppConfig{{
		ID: "planner",
		Grants: workspace.GrantsConfig{Tools: workspace.ToolGrants{
			Allow: []string{"write_file"}, Ask: []string{"read_file"}, Deny: []string{"execute_command"},
		}},
	}}
	got, err := FromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := Rules{
		Tools: map[string]Decision{"write_file": Ask, "github/*": Deny},
		Apps: map[string]AppRules{"planner": {
			Allow: []string{"write_file"}, Ask: []string{"read_file"}, Deny: []string{"execute_command"},
		}},
		Commands: []CommandRule{{"rm  **", Deny}, {"git status", Allow}}, // sorted by key
		Admin:    Allow,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FromConfig =\n%+v\nwant\n%+v", got, want)
	}

	p := New(got, nil)
	if v := p.Decide(Request{AppID: "x", Tool: def(t, "execute_command"), Args: cmdArgs("git status")}); v.Decision != Allow {
		t.Errorf("git status: %+v", v)
	}
	if v := p.Decide(Request{Tool: def(t, "execute_command"), Args: cmdArgs("rm -rf x")}); v.Decision != Deny || !strings.Contains(v.Reason, `"rm **"`) {
		t.Errorf("rm: %+v", v)
	}

	cfg.Tools.Policy = map[string]string{"execute_command:git ** x": "allow"}
	if _, err := FromConfig(cfg); err == nil || !strings.Contains(err.Error(), "git ** x") {
		t.Errorf("bad command pattern: %v", err)
	}
	cfg.Tools.Policy = nil
	cfg.Apps[0].Grants.Tools.Allow = []string{"execute_command:ls"}
	if _, err := FromConfig(cfg); err == nil {
		t.Error("command rule in app grants: no error")
	}
}
