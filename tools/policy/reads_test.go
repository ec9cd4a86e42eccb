package policy

import (
	"context"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools"
)

// TestReadsNamedLikeTools: a server's resource reads and prompt gets are
// named SERVER/mcp_resource and SERVER/mcp_prompt: "SERVER/*", "*/*" and
// "*" cover them, "SERVER/mcp_resource" names resource reads alone, and
// with nothing said they are allowed (low risk), to apps and the person.
func TestReadsNamedLikeTools(t *testing.T) {
	p := New(Rules{Apps: map[string]AppRules{
		"server":   {Deny: []string{"files/*"}},
		"every":    {Deny: []string{"*/*"}},
		"all":      {Deny: []string{"*"}},
		"resource": {Deny: []string{"files/mcp_resource"}},
		"asks":     {Ask: []string{"files/*"}},
	}}, nil)
	resource := tools.Definition{Name: ResourceTool, ServerName: "files", Kind: tools.KindRead, Risk: tools.RiskLow}
	prompt := tools.Definition{Name: PromptTool, ServerName: "files", Kind: tools.KindRead, Risk: tools.RiskLow}
	for _, c := range []struct {
		app  string
		tool tools.Definition
		want Decision
	}{
		{"server", resource, Deny}, {"server", prompt, Deny},
		{"every", resource, Deny}, {"all", prompt, Deny},
		{"resource", resource, Deny}, {"resource", prompt, Allow},
		{"asks", prompt, Ask},
		{"nogrants", resource, Allow}, {"", prompt, Allow},
	} {
		if v := p.Decide(Request{AppID: c.app, Tool: c.tool}); v.Decision != c.want {
			t.Errorf("app %q, %s: %s (%s), want %s", c.app, displayName(c.tool), v.Decision, v.Reason, c.want)
		}
	}
}

// TestCheckReads: CheckPermission knows reads by their names, as the
// policy decides them, though no server lists them as tools.
func TestCheckReads(t *testing.T) {
	p := New(Rules{Apps: map[string]AppRules{"denied": {Deny: []string{"files/*"}}, "asks": {Ask: []string{"files/mcp_prompt"}}}}, nil)
	m, err := tools.NewManager(tools.Options{Gate: p.Gate(&Approvers{}, time.Minute, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	check := p.CheckWith(m)
	for _, c := range []struct {
		app, action string
		want        Decision
	}{
		{"denied", "files/mcp_resource", Deny}, {"denied", "files/mcp_prompt", Deny},
		{"asks", "files/mcp_prompt", Ask}, {"asks", "files/mcp_resource", Allow},
		{"nogrants", "files/mcp_resource", Allow}, {"", "files/mcp_prompt", Allow},
		{"nogrants", "files/unknown", Deny}, {"nogrants", "/mcp_resource", Deny},
	} {
		if d, reason := check(c.app, c.action, ""); Decision(d) != c.want {
			t.Errorf("check(%q, %q) = %s (%s), want %s", c.app, c.action, d, reason, c.want)
		}
	}
}

// TestProbeAsksNoOne: a probe (Manager.Permitted) is refused by a deny
// only; a call the policy would ask about is permitted, and no one is
// asked.
func TestProbeAsksNoOne(t *testing.T) {
	p := New(Rules{Apps: map[string]AppRules{"denied": {Deny: []string{"files/*"}}, "asks": {Ask: []string{"files/*"}}}}, nil)
	var approvers Approvers
	approvers.Set(editor(func(context.Context, tools.Call, ICERC) (Answer, error) {
		t.Error("a probe asked the approver")
		return RejectOnce, nil
	}))
	m, err := tools.NewManager(tools.Options{Gate: p.Gate(&approvers, time.Minute, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	d := tools.Definition{Name: ResourceTool, ServerName: "files", Kind: tools.KindRead, Risk: tools.RiskLow}
	if err := m.Permitted(t.Context(), access.ForApp(&access.App{ID: "denied"}), d); err == nil {
		t.Error("a denied read is permitted")
	}
	if err := m.Permitted(t.Context(), access.ForApp(&access.App{ID: "asks"}), d); err != nil {
		t.Errorf("a read that asks: %v", err)
	}
	if calls := m.Calls(tools.CallFilter{}); len(calls) != 0 {
		t.Errorf("a probe made calls: %+v", calls)
	}
}
