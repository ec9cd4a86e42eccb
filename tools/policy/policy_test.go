package policy

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/tools"
)

// def returns the definition of a test tool by its rule name.
func def(t testing.TB, name string) tools.Definition {
	t.Helper()
	defs := map[string]tools.Definition{
		"read_file":           {Name: "read_file", Kind: tools.KindRead, Risk: tools.RiskLow, Description: "Read a file."},
		"write_file":          {Name: "write_file", Kind: tools.KindEdit, Risk: tools.RiskMedium, Description: "Write a file."},
		"edit_file":           {Name: "edit_file", Kind: tools.KindEdit, Risk: tools.RiskMedium},
		"list_directory":      {Name: "list_directory", Kind: tools.KindRead, Risk: tools.RiskLow},
		"search_files":        {Name: "search_files", Kind: tools.KindSearch, Risk: tools.RiskLow},
		"get_current_time":    {Name: "get_current_time", Kind: tools.KindOther, Risk: tools.RiskLow},
		"execute_command":     {Name: "execute_command", Kind: tools.KindExecute, Risk: tools.RiskHigh, Description: "Run a command."},
		"github/create_issue": {Name: "create_issue", ServerName: "github", Kind: tools.KindEdit, Risk: tools.RiskMedium, Description: "Create an issue."},
		"github/list_issues":  {Name: "list_issues", ServerName: "github", Kind: tools.KindRead, Risk: tools.RiskLow},
		"github/delete_repo":  {Name: "delete_repo", ServerName: "github", Kind: tools.KindDelete, Risk: tools.RiskHigh},
		"mystery":             {Name: "mystery", Kind: tools.KindOther},
	}
	d, ok := defs[name]
	if !ok {
		t.Fatalf("no test tool %q", name)
	}
	return d
}

func cmdArgs(line string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"command": line})
	return b
}

func TestDecide(t *testing.T) {
	gitStatus := []CommandRule{{Pattern: "git status", Decision: Allow}}
	denyRm := []CommandRule{{Pattern: "rm **", Decision: Deny}}
	tests := []struct {
		name   string
		rules  Rules
		app    string
		agent  bool // an agent session's call
		tool   string
		args   string // JSON; for execute_command a bare line is wrapped as {command}
		want   Decision
		reason string // a substring of the reason
	}{
		// 5: risk defaults.
		{name: "low risk allows", app: "a", tool: "read_file", want: Allow, reason: "default for low-risk tools: allow"},
		{name: "medium risk asks", app: "a", tool: "write_file", want: Ask, reason: "default for medium-risk tools: ask"},
		{name: "high risk asks", app: "a", tool: "execute_command", args: "ls", want: Ask, reason: "default for high-risk tools: ask"},
		{name: "unknown risk asks", app: "a", tool: "mystery", want: Ask, reason: `unknown risk ""`},
		{name: "mcp low risk allows", app: "a", tool: "github/list_issues", want: Allow, reason: "default for low-risk"},

		// 4: the admin default.
		{name: "person allowed high risk", tool: "execute_command", args: "ls", want: Allow, reason: "call by the person (admin token): allow"},
		{name: "person allowed medium mcp", tool: "github/create_issue", want: Allow, reason: "admin token"},
		{name: "admin ask beats risk default", rules: Rules{Admin: Ask}, tool: "read_file", want: Ask, reason: "admin token): ask"},
		{name: "admin invalid is deny", rules: Rules{Admin: "yes"}, tool: "read_file", want: Deny, reason: "treated as deny"},
		{name: "admin default not for apps", app: "a", tool: "write_file", want: Ask, reason: "default for medium"},
		{name: "admin default not for the person's agent", agent: true, tool: "write_file", want: Ask, reason: "default for medium"},
		{name: "person's agent high risk asks", agent: true, tool: "execute_command", args: "ls", want: Ask, reason: "default for high"},
		{name: "person's agent low risk allows", agent: true, tool: "read_file", want: Allow, reason: "default for low"},
		{name: "app's agent gets the app's lists", agent: true, rules: Rules{Apps: map[string]AppRules{"planner": {Deny: []string{"read_file"}}}}, app: "planner", tool: "read_file", want: Deny, reason: `app "planner" denies`},
		{name: "agent bound by tools deny", agent: true, rules: Rules{Tools: map[string]Decision{"write_file": Deny}}, tool: "write_file", want: Deny},

		// 2: tools.policy.
		{name: "tools allow beats risk", rules: Rules{Tools: map[string]Decision{"write_file": Allow}}, app: "a", tool: "write_file", want: Allow, reason: "config tools.policy: write_file = allow"},
		{name: "tools ask beats low risk", rules: Rules{Tools: map[string]Decision{"read_file": Ask}}, app: "a", tool: "read_file", want: Ask, reason: "config tools.policy: read_file = ask"},
		{name: "tools deny beats admin", rules: Rules{Tools: map[string]Decision{"write_file": Deny}}, tool: "write_file", want: Deny, reason: "config tools.policy: write_file = deny"},
		{name: "tools ask beats admin", rules: Rules{Tools: map[string]Decision{"execute_command": Ask}}, tool: "execute_command", args: "ls", want: Ask, reason: "config tools.policy: execute_command = ask"},
		{name: "tools server glob", rules: Rules{Tools: map[string]Decision{"github/*": Deny}}, app: "a", tool: "github/create_issue", want: Deny, reason: `config tools.policy: github/* = deny (for "github/create_issue")`},
		{name: "tools exact beats glob", rules: Rules{Tools: map[string]Decision{"github/*": Ask, "github/list_issues": Allow}}, app: "a", tool: "github/list_issues", want: Allow, reason: "github/list_issues = allow"},
		{name: "tools glob still asks the rest", rules: Rules{Tools: map[string]Decision{"github/*": Ask, "github/list_issues": Allow}}, app: "a", tool: "github/create_issue", want: Ask, reason: "github/* = ask"},
		{name: "tools deny beats more specific allow", rules: Rules{Tools: map[string]Decision{"github/*": Deny, "github/list_issues": Allow}}, app: "a", tool: "github/list_issues", want: Deny, reason: "github/* = deny"},
		{name: "tools star then exact", rules: Rules{Tools: map[string]Decision{"*": Ask, "read_file": Allow}}, app: "a", tool: "read_file", want: Allow, reason: "read_file = allow"},
		{name: "tools star covers core", rules: Rules{Tools: map[string]Decision{"*": Ask, "read_file": Allow}}, app: "a", tool: "list_directory", want: Ask, reason: "* = ask"},
		{name: "tools star covers mcp", rules: Rules{Tools: map[string]Decision{"*": Deny}}, app: "a", tool: "github/list_issues", want: Deny, reason: "* = deny"},
		{name: "tools any mcp spares core", rules: Rules{Tools: map[string]Decision{"*/*": Deny}}, app: "a", tool: "read_file", want: Allow, reason: "default for low-risk"},
		{name: "tools any mcp", rules: Rules{Tools: map[string]Decision{"*/*": Deny}}, app: "a", tool: "github/list_issues", want: Deny, reason: "*/* = deny"},
		{name: "tools tool of any server", rules: Rules{Tools: map[string]Decision{"*/list_issues": Allow, "*/*": Ask}}, app: "a", tool: "github/list_issues", want: Allow, reason: "*/list_issues = allow"},
		{name: "bare name is core only", rules: Rules{Tools: map[string]Decision{"create_issue": Deny}}, app: "a", tool: "github/create_issue", want: Ask, reason: "default for medium"},
		{name: "tie goes to ask", rules: Rules{Tools: map[string]Decision{"*": Ask, "*/*": Allow}}, app: "a", tool: "github/list_issues", want: Ask, reason: "* = ask"},
		{name: "tools invalid decision is deny", rules: Rules{Tools: map[string]Decision{"read_file": "alow"}}, app: "a", tool: "read_file", want: Deny, reason: `"alow" is not allow, ask or deny`},

		// 1: the app's lists.
		{name: "app allow beats tools deny", rules: Rules{Tools: map[string]Decision{"write_file": Deny}, Apps: map[string]AppRules{"planner": {Allow: []string{"write_file"}}}}, app: "planner", tool: "write_file", want: Allow, reason: `app "planner" allows "write_file"`},
		{name: "app deny beats tools allow", rules: Rules{Tools: map[string]Decision{"read_file": Allow}, Apps: map[string]AppRules{"planner": {Deny: []string{"read_file"}}}}, app: "planner", tool: "read_file", want: Deny, reason: `app "planner" denies "read_file"`},
		{name: "app ask beats low risk", rules: Rules{Apps: map[string]AppRules{"planner": {Ask: []string{"read_file"}}}}, app: "planner", tool: "read_file", want: Ask, reason: `app "planner" asks for "read_file"`},
		{name: "app rules of another app", rules: Rules{Apps: map[string]AppRules{"other": {Deny: []string{"read_file"}}}}, app: "planner", tool: "read_file", want: Allow, reason: "default for low-risk"},
		{name: "app rules not for the person", rules: Rules{Apps: map[string]AppRules{"planner": {Deny: []string{"read_file"}}}}, tool: "read_file", want: Allow, reason: "admin token"},
		{name: "app deny glob beats app allow", rules: Rules{Apps: map[string]AppRules{"planner": {Deny: []string{"github/*"}, Allow: []string{"github/list_issues"}}}}, app: "planner", tool: "github/list_issues", want: Deny, reason: `app "planner" denies "github/list_issues" (by "github/*")`},
		{name: "app allow all beats tools deny", rules: Rules{Tools: map[string]Decision{"write_file": Deny}, Apps: map[string]AppRules{"planner": {Allow: []string{"*"}}}}, app: "planner", tool: "write_file", want: Allow, reason: `(by "*")`},
		{name: "app ask exact beats app allow star", rules: Rules{Apps: map[string]AppRules{"planner": {Allow: []string{"*"}, Ask: []string{"execute_command"}}}}, app: "planner", tool: "execute_command", args: "ls", want: Ask, reason: `asks for "execute_command"`},
		{name: "app not listing the tool falls to tools", rules: Rules{Tools: map[string]Decision{"write_file": Allow}, Apps: map[string]AppRules{"planner": {Deny: []string{"read_file"}}}}, app: "planner", tool: "write_file", want: Allow, reason: "config tools.policy"},

		// 3 and 0: command rules.
		{name: "command allow", rules: Rules{Commands: gitStatus}, app: "a", tool: "execute_command", args: "git status", want: Allow, reason: `command rule "git status" = allow`},
		{name: "command allow argv", rules: Rules{Commands: gitStatus}, app: "a", tool: "execute_command", args: `{"argv":["git","status"]}`, want: Allow, reason: `command rule "git status"`},
		{name: "command allow argv is exact", rules: Rules{Commands: gitStatus}, app: "a", tool: "execute_command", args: `{"argv":["/usr/bin/git","status"]}`, want: Ask, reason: "default for high"},
		{name: "command allow with cwd", rules: Rules{Commands: gitStatus}, app: "a", tool: "execute_command", args: `{"command":"git status","cwd":"sub"}`, want: Allow},
		{name: "command allow not with env", rules: Rules{Commands: gitStatus}, app: "a", tool: "execute_command", args: `{"command":"git status","env":{"GIT_DIR":"/tmp"}}`, want: Ask, reason: "default for high"},
		{name: "command allow other command", rules: Rules{Commands: gitStatus}, app: "a", tool: "execute_command", args: "git push", want: Ask, reason: "default for high"},
		{name: "command allow extra word", rules: Rules{Commands: gitStatus}, app: "a", tool: "execute_command", args: "git status -s", want: Ask},
		{name: "command rest matches none", rules: Rules{Commands: []CommandRule{{"go test **", Allow}}}, app: "a", tool: "execute_command", args: "go test", want: Allow},
		{name: "command rest matches many", rules: Rules{Commands: []CommandRule{{"go test **", Allow}}}, app: "a", tool: "execute_command", args: "go test -race ./...", want: Allow},
		{name: "command rest needs prefix", rules: Rules{Commands: []CommandRule{{"go test **", Allow}}}, app: "a", tool: "execute_command", args: "go vet ./...", want: Ask},
		{name: "command star one word", rules: Rules{Commands: []CommandRule{{"npm run *", Allow}}}, app: "a", tool: "execute_command", args: "npm run build", want: Allow},
		{name: "command star not two words", rules: Rules{Commands: []CommandRule{{"npm run *", Allow}}}, app: "a", tool: "execute_command", args: "npm run build x", want: Ask},
		{name: "command star not zero words", rules: Rules{Commands: []CommandRule{{"npm run *", Allow}}}, app: "a", tool: "execute_command", args: "npm run", want: Ask},
		{name: "command specific ask beats general allow", rules: Rules{Commands: []CommandRule{{"git **", Allow}, {"git push **", Ask}}}, app: "a", tool: "execute_command", args: "git push origin main", want: Ask, reason: `"git push **" = ask`},
		{name: "command general allow", rules: Rules{Commands: []CommandRule{{"git **", Allow}, {"git push **", Ask}}}, app: "a", tool: "execute_command", args: "git log", want: Allow, reason: `"git **" = allow`},
		{name: "command specific allow beats general ask", rules: Rules{Commands: []CommandRule{{"git **", Ask}, {"git status", Allow}}}, app: "a", tool: "execute_command", args: "git status", want: Allow},
		{name: "command tie goes to ask", rules: Rules{Commands: []CommandRule{{"git status", Allow}, {"git  status", Ask}}}, app: "a", tool: "execute_command", args: "git status", want: Ask},
		{name: "command ask for the person", rules: Rules{Commands: []CommandRule{{"git push **", Ask}}}, tool: "execute_command", args: "git push", want: Ask, reason: `command rule "git push **" = ask`},
		{name: "command rules only for execute_command", rules: Rules{Commands: []CommandRule{{"**", Deny}}}, app: "a", tool: "read_file", args: `{"path":"x"}`, want: Allow},
		{name: "tools ask beats command allow", rules: Rules{Tools: map[string]Decision{"execute_command": Ask}, Commands: gitStatus}, app: "a", tool: "execute_command", args: "git status", want: Ask, reason: "config tools.policy: execute_command = ask"},
		{name: "tools deny beats command allow", rules: Rules{Tools: map[string]Decision{"execute_command": Deny}, Commands: gitStatus}, app: "a", tool: "execute_command", args: "git status", want: Deny},
		{name: "app deny beats command allow", rules: Rules{Apps: map[string]AppRules{"a": {Deny: []string{"execute_command"}}}, Commands: gitStatus}, app: "a", tool: "execute_command", args: "git status", want: Deny},
		{name: "command deny beats tools allow", rules: Rules{Tools: map[string]Decision{"execute_command": Allow}, Commands: denyRm}, app: "a", tool: "execute_command", args: "rm -rf /", want: Deny, reason: `command rule "rm **" = deny: matches "rm -rf /"`},
		{name: "command deny beats app allow", rules: Rules{Apps: map[string]AppRules{"a": {Allow: []string{"execute_command"}}}, Commands: denyRm}, app: "a", tool: "execute_command", args: "rm x", want: Deny},
		{name: "command deny beats admin", rules: Rules{Commands: denyRm}, tool: "execute_command", args: "rm x", want: Deny},
		{name: "command deny beats command allow", rules: Rules{Commands: []CommandRule{{"rm x", Allow}, {"rm **", Deny}}}, app: "a", tool: "execute_command", args: "rm x", want: Deny},
		{name: "command deny spares others", rules: Rules{Tools: map[string]Decision{"execute_command": Allow}, Commands: denyRm}, app: "a", tool: "execute_command", args: "ls -l", want: Allow, reason: "config tools.policy"},
		{name: "command deny of mcp tool not", rules: Rules{Commands: []CommandRule{{"**", Deny}}}, app: "a", tool: "github/create_issue", want: Ask},

		// After the levels: commands that cannot be checked.
		{name: "parse error turns allow into ask", tool: "execute_command", args: "git status 'oops", want: Ask, reason: "cannot parse the command"},
		{name: "parse error keeps the underlying reason", rules: Rules{Tools: map[string]Decision{"execute_command": Allow}}, app: "a", tool: "execute_command", args: "echo ${", want: Ask, reason: "(config tools.policy: execute_command = allow)"},
		{name: "parse error keeps deny", rules: Rules{Tools: map[string]Decision{"execute_command": Deny}}, app: "a", tool: "execute_command", args: "git status 'oops", want: Deny},
		{name: "parse error not allowed by rule", rules: Rules{Commands: gitStatus}, app: "a", tool: "execute_command", args: "git status 'oops", want: Ask},
		{name: "both command and argv", tool: "execute_command", args: `{"command":"ls","argv":["ls"]}`, want: Ask, reason: "both command and argv"},
		{name: "maybe deny turns allow into ask", rules: Rules{Commands: denyRm}, tool: "execute_command", args: `$X -rf /`, want: Ask, reason: `may match deny rule "rm **"`},
		{name: "unknown words without deny rules", tool: "execute_command", args: `$X -rf /`, want: Allow},
		{name: "unknown words that cannot match", rules: Rules{Commands: denyRm}, tool: "execute_command", args: `echo $HOME`, want: Allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.rules.Validate(); err != nil && !strings.Contains(tc.name, "invalid") {
				t.Fatalf("rules invalid: %v", err)
			}
			req := Request{AppID: tc.app, Agent: tc.agent, Tool: def(t, tc.tool)}
			switch {
			case tc.args == "":
				req.Args = json.RawMessage(`{}`)
			case strings.HasPrefix(tc.args, "{"):
				req.Args = json.RawMessage(tc.args)
			default:
				req.Args = cmdArgs(tc.args)
			}
			got := New(tc.rules, nil).Decide(req)
			if got.Decision != tc.want || !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("Decide = %s (%s), want %s (reason containing %q)", got.Decision, got.Reason, tc.want, tc.reason)
			}
			if got.Remembered {
				t.Errorf("Remembered without a store")
			}
		})
	}
}

// TestDecideOrderIndependent checks that the order of rules does not change
// a decision.
func TestDecideOrderIndependent(t *testing.T) {
	rules := []CommandRule{{"git **", Allow}, {"git push **", Ask}, {"git push --force **", Deny}, {"git status", Allow}}
	for _, line := range []string{"git push origin", "git status", "git push --force x", "git log"} {
		var first Verdict
		for i := range rules {
			rotated := append(append([]CommandRule(nil), rules[i:]...), rules[:i]...)
			v := New(Rules{Commands: rotated}, nil).Decide(Request{AppID: "a", Tool: def(t, "execute_command"), Args: cmdArgs(line)})
			if i == 0 {
				first = v
			} else if v != first {
				t.Errorf("%q: order %d gives %+v, order 0 gave %+v", line, i, v, first)
			}
		}
	}
}

// TestAllowRuleAdversarial: an allow rule for "git status" allows nothing
// but that one plain command.
func TestAllowRuleAdversarial(t *testing.T) {
	p := New(Rules{Commands: []CommandRule{{"git status", Allow}}}, nil)
	decide := func(line string) Verdict {
		return p.Decide(Request{AppID: "a", Tool: def(t, "execute_command"), Args: cmdArgs(line)})
	}
	// Controls: these are the one plain command and must be allowed, or the
	// test below proves nothing.
	for _, line := range []string{"git status", "  git   status  ", `'git' "status"`, `git stat\us`, "git status;", "git status # look", "git \\\nstatus"} {
		if v := decide(line); v.Decision != Allow {
			t.Errorf("%q: %s (%s), want allow", line, v.Decision, v.Reason)
		}
	}
	for _, line := range []string{
		"git status; rm -rf ~",
		"git status > ~/.ssh/x",
		"git status >> x",
		"git status 2>&1",
		"git status < /etc/passwd",
		"git status <<EOF\nx\nEOF",
		"git status $(rm -rf ~)",
		"git status `rm -rf ~`",
		"git status \"$(rm -rf ~)\"",
		"git status <(rm -rf ~)",
		"git status && x",
		"git status || x",
		"git status | sh",
		"git status |& sh",
		"git status\nrm -rf ~",
		"git status &",
		"git status & rm -rf ~",
		"FOO=1 git status",
		"GIT_DIR=/tmp git status",
		"(git status)",
		"{ git status; }",
		"! git status",
		"time git status",
		"git status $HOME",
		"git status ${HOME}",
		`git status "$HOME"`,
		"git status $((1+1))",
		"git status *",
		"git status ?",
		"git status [ab]",
		"git status ~",
		"git status {a,b}",
		"git status $'x'",
		`git status $"x"`,
		"$GIT status",
		"git $(echo status)",
		"if true; then git status; fi",
		"for i in 1; do git status; done",
		"f() { git status; }; f",
		"git status; git status",
		"git status 'oops",
		"coproc git status",
		"git status | tee x",
	} {
		if v := decide(line); v.Decision == Allow {
			t.Errorf("%q: allowed (%s)", line, v.Reason)
		}
	}
}

// TestDenyRuleBroad: a deny rule "rm **" finds rm wherever it hides.
func TestDenyRuleBroad(t *testing.T) {
	rules := Rules{
		Tools:    map[string]Decision{"execute_command": Allow},
		Commands: []CommandRule{{"rm **", Deny}},
	}
	p := New(rules, nil)
	decide := func(args json.RawMessage) Verdict {
		return p.Decide(Request{AppID: "a", Tool: def(t, "execute_command"), Args: args})
	}
	for _, line := range []string{
		"rm",
		"rm -rf /",
		"echo hi; rm -rf /",
		"echo hi\nrm -rf /",
		"echo hi && rm -rf /",
		"false || rm -rf /",
		"echo | rm -rf /",
		"rm -rf / &",
		"echo $(rm -rf /)",
		"echo `rm -rf /`",
		`echo "$(rm -rf /)"`,
		"x=$(rm -rf /)",
		"cat <(rm -rf /)",
		"(rm -rf /)",
		"{ rm -rf /; }",
		"! rm x",
		"time rm x",
		"coproc rm x",
		"if true; then rm -rf /; fi",
		"for i in 1; do rm -rf /; done",
		"while true; do rm -rf /; done",
		"case x in x) rm -rf /;; esac",
		"f() { rm -rf /; }; f",
		"FOO=1 rm -rf /",
		"rm -rf / > /dev/null 2>&1",
		"/bin/rm -rf /",
		"./rm x",
		`"rm" -rf /`,
		`'r'm -rf /`,
		`r\m -rf /`,
		"sudo rm -rf /",
		"sudo -u root rm -rf /",
		"env FOO=1 rm -rf /",
		"nohup rm x &",
		"timeout 5 rm x",
		"xargs rm < list",
		"xargs -0 -n 1 rm",
		`find . -name x -exec rm {} \;`,
		"sh -c 'rm -rf /'",
		`bash -lc "rm -rf /"`,
		"sudo sh -c 'rm x'",
		`sh -c "sh -c 'rm -rf /'"`,
		"eval rm -rf /",
		`eval "rm -rf /"`,
		`echo x | sh -c "cat; rm x"`,
	} {
		if v := decide(cmdArgs(line)); v.Decision != Deny {
			t.Errorf("%q: %s (%s), want deny", line, v.Decision, v.Reason)
		}
	}
	for _, argv := range []string{`["rm","-rf","/"]`, `["/bin/rm","x"]`, `["sh","-c","rm -rf /"]`, `["sudo","rm","x"]`} {
		if v := decide(json.RawMessage(`{"argv":` + argv + `}`)); v.Decision != Deny {
			t.Errorf("argv %s: %s (%s), want deny", argv, v.Decision, v.Reason)
		}
	}
	// Words known only at run time may hide rm: ask, never allow.
	for _, line := range []string{"$X -rf /", `"$CMD" x`, "$SUDO rm -rf /", "sudo $X", `sh -c "$X"`, `eval "$X"`, "r* -rf /", "$(echo rm) -rf /"} {
		if v := decide(cmdArgs(line)); v.Decision != Ask {
			t.Errorf("%q: %s (%s), want ask", line, v.Decision, v.Reason)
		}
	}
	// Controls: rm as a mere argument is not rm running.
	for _, line := range []string{"echo rm", "echo rm -rf /", "grep -r rm .", "git rm x", "ls -l", "rmdir x", "echo $HOME", "find . -name rm"} {
		if v := decide(cmdArgs(line)); v.Decision != Allow {
			t.Errorf("%q: %s (%s), want allow", line, v.Decision, v.Reason)
		}
	}
}

func TestDecideRemembered(t *testing.T) {
	store, err := OpenApprovals(filepath.Join(t.TempDir(), "approvals.json"))
	if err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	rules := Rules{
		Tools:    map[string]Decision{"github/delete_repo": Deny, "read_file": Allow},
		Apps:     map[string]AppRules{"x": {Deny: []string{"edit_file"}}},
		Commands: []CommandRule{{"rm **", Deny}},
	}
	p := New(rules, store)
	remember := func(tool string, args json.RawMessage, ans Answer) {
		t.Helper()
		if err := p.Record(Request{AppID: "x", Tool: def(t, tool), Args: args}, ans, when); err != nil {
			t.Fatal(err)
		}
	}
	notes := pathArgs("notes.md")
	remember("write_file", notes, AllowAlways)
	remember("github/create_issue", nil, RejectAlways)
	remember("github/delete_repo", nil, AllowAlways)
	remember("edit_file", notes, AllowAlways)
	remember("read_file", notes, RejectAlways)
	remember("execute_command", cmdArgs("ls"), AllowAlways)
	remember("execute_command", cmdArgs("ls | wc -l"), AllowAlways) // counts once

	changed := def(t, "write_file")
	changed.Description = "Write a file, and also mail it somewhere."

	tests := []struct {
		name       string
		app        string
		agent      bool
		tool       tools.Definition
		args       json.RawMessage
		hash       string
		want       Decision
		remembered bool
		reason     string
	}{
		{name: "allow always turns ask into allow", app: "x", tool: def(t, "write_file"), args: notes, want: Allow, remembered: true, reason: `remembered: allow_always to write_file:notes.md for app "x" on 2026-03-04`},
		{name: "only the path shown", app: "x", tool: def(t, "write_file"), args: pathArgs("src/main.go"), want: Ask},
		{name: "the path as written, cleaned", app: "x", tool: def(t, "write_file"), args: pathArgs("./notes.md"), want: Allow, remembered: true},
		{name: "reject always turns ask into deny", app: "x", tool: def(t, "github/create_issue"), want: Deny, remembered: true, reason: "remembered: reject_always"},
		{name: "other app", app: "y", tool: def(t, "write_file"), args: notes, want: Ask},
		{name: "the person does not share an app's answer", tool: def(t, "execute_command"), args: cmdArgs("ls"), want: Allow, reason: "admin token"},
		{name: "an agent for the person does not share an app's answer", agent: true, tool: def(t, "execute_command"), args: cmdArgs("ls"), want: Ask},
		{name: "an agent for the app shares its answer", app: "x", agent: true, tool: def(t, "execute_command"), args: cmdArgs("ls"), want: Allow, remembered: true},
		{name: "changed definition", app: "x", tool: changed, args: notes, want: Ask, reason: "default for medium"},
		{name: "explicit hash that differs", app: "x", tool: def(t, "write_file"), args: notes, hash: "feed", want: Ask},
		{name: "explicit hash that matches", app: "x", tool: changed, args: notes, hash: DefinitionHash(def(t, "write_file")), want: Allow, remembered: true},
		{name: "never over config tools deny", app: "x", tool: def(t, "github/delete_repo"), want: Deny, reason: "config tools.policy"},
		{name: "never over app deny", app: "x", tool: def(t, "edit_file"), args: notes, want: Deny, reason: `app "x" denies`},
		{name: "reject does not touch a config allow", app: "x", tool: def(t, "read_file"), args: notes, want: Allow, reason: "config tools.policy"},
		{name: "execute allowed always", app: "x", tool: def(t, "execute_command"), args: cmdArgs("ls"), want: Allow, remembered: true, reason: "execute_command:ls"},
		{name: "the same argv", app: "x", tool: def(t, "execute_command"), args: json.RawMessage(`{"argv":["ls"]}`), want: Allow, remembered: true},
		{name: "the same words quoted", app: "x", tool: def(t, "execute_command"), args: cmdArgs("'ls'"), want: Allow, remembered: true},
		{name: "another command asks", app: "x", tool: def(t, "execute_command"), args: cmdArgs("touch src"), want: Ask},
		{name: "more words ask", app: "x", tool: def(t, "execute_command"), args: cmdArgs("ls -la"), want: Ask},
		{name: "the command in a list asks", app: "x", tool: def(t, "execute_command"), args: cmdArgs("ls && touch x"), want: Ask},
		{name: "a command remembered as a list counted once", app: "x", tool: def(t, "execute_command"), args: cmdArgs("ls | wc -l"), want: Ask},
		{name: "with env asks", app: "x", tool: def(t, "execute_command"), args: json.RawMessage(`{"command":"ls","env":{"LD_PRELOAD":"x.so"}}`), want: Ask},
		{name: "never over command deny", app: "x", tool: def(t, "execute_command"), args: cmdArgs("ls; rm x"), want: Deny, reason: "command rule"},
		{name: "parse error still asks", app: "x", tool: def(t, "execute_command"), args: cmdArgs("ls 'oops"), want: Ask},
		{name: "maybe deny still asks", app: "x", tool: def(t, "execute_command"), args: cmdArgs("$X -rf /"), want: Ask},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := p.Decide(Request{AppID: tc.app, Agent: tc.agent, Tool: tc.tool, Args: tc.args, DefinitionHash: tc.hash})
			if got.Decision != tc.want || got.Remembered != tc.remembered || !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("Decide = %+v, want %s remembered=%v reason containing %q", got, tc.want, tc.remembered, tc.reason)
			}
		})
	}

	// The person's answers are theirs.
	ask := Rules{Admin: Ask}
	pp := New(ask, store)
	req := Request{Tool: def(t, "get_current_time")}
	if v := pp.Decide(req); v.Decision != Ask {
		t.Fatalf("before: %+v", v)
	}
	if err := pp.Record(req, AllowAlways, when); err != nil {
		t.Fatal(err)
	}
	if v := pp.Decide(req); v.Decision != Allow || !strings.Contains(v.Reason, "for the person") {
		t.Errorf("after: %+v", v)
	}
}

func TestRecord(t *testing.T) {
	store, err := OpenApprovals(filepath.Join(t.TempDir(), "approvals.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := New(Rules{}, store)
	req := Request{AppID: "a", Tool: def(t, "write_file"), Args: pathArgs("a.txt")}
	for _, ans := range []Answer{AllowOnce, RejectOnce} {
		if err := p.Record(req, ans, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if l := store.List(); len(l) != 0 {
		t.Errorf("once answers stored: %+v", l)
	}
	if err := p.Record(req, "sometimes", time.Now()); !errors.Is(err, ErrInvalidAnswer) {
		t.Errorf("invalid answer: %v", err)
	}
	if err := New(Rules{}, nil).Record(req, AllowAlways, time.Now()); !errors.Is(err, ErrNoStore) {
		t.Errorf("no store: %v", err)
	}
	if err := New(Rules{}, nil).Record(req, AllowOnce, time.Now()); err != nil {
		t.Errorf("once without store: %v", err)
	}
	if err := p.Record(req, RejectAlways, time.Now()); err != nil {
		t.Fatal(err)
	}
	ap, found := store.Lookup("a", "write_file", "", DefinitionHash(def(t, "write_file")), Scope{Path: "a.txt"}, true)
	if !found || ap.Allow {
		t.Errorf("Lookup = %+v, %v; want a stored reject", ap, found)
	}
}

func TestCheck(t *testing.T) {
	lookup := func(name string) (tools.Definition, bool) {
		switch name {
		case "execute_command", "write_file", "read_file", "github/create_issue":
			return def(t, name), true
		}
		return tools.Definition{}, false
	}
	rules := Rules{
		Commands: []CommandRule{{"git status", Allow}, {"rm **", Deny}},
		Apps:     map[string]AppRules{"a": {Deny: []string{"github/*"}}},
	}
	p := New(rules, nil)
	tests := []struct {
		app, action, resource string
		want                  Decision
		reason                string
	}{
		{"a", "execute_command:git status", "", Allow, `command rule "git status" = allow`},
		{"a", "execute_command: git status ", "", Allow, "command rule"},
		{"a", "execute_command", "git status", Allow, "command rule"},
		{"a", "execute_command:git status", "rm -rf /", Allow, "command rule"},
		{"a", "execute_command", "echo; rm -rf /", Deny, `command rule "rm **" = deny`},
		{"", "execute_command:rm x", "", Deny, "command rule"},
		{"a", "execute_command:git push", "", Ask, "default for high"},
		{"a", "execute_command", "", Ask, "command rules not consulted"},
		{"", "execute_command", "", Allow, "command rules not consulted"},
		{"a", "read_file", "secret.txt", Allow, "default for low"},
		{"a", "write_file", "", Ask, "default for medium"},
		{"", "write_file", "x", Allow, "admin token"},
		{"a", "github/create_issue", "", Deny, `app "a" denies "github/create_issue" (by "github/*")`},
		{"a", "nope", "", Deny, `unknown tool "nope"`},
		{"a", "", "", Deny, "no action"},
		{"a", "execute_command:", "", Ask, "not consulted"},
	}
	for _, tc := range tests {
		got := p.Check(tc.app, tc.action, tc.resource, lookup)
		if got.Decision != tc.want || !strings.Contains(got.Reason, tc.reason) {
			t.Errorf("Check(%q, %q, %q) = %s (%s), want %s (reason containing %q)", tc.app, tc.action, tc.resource, got.Decision, got.Reason, tc.want, tc.reason)
		}
	}
	if got := p.Check("a", "read_file", "", nil); got.Decision != Deny {
		t.Errorf("nil lookup: %+v", got)
	}
}

func TestDefinitionHash(t *testing.T) {
	base := tools.Definition{
		Name: "create_issue", ServerName: "github", Description: "Create an issue.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object"}`),
		Kind:         tools.KindEdit, Risk: tools.RiskMedium,
	}
	h := DefinitionHash(base)
	if len(h) != 64 {
		t.Fatalf("hash %q is not hex sha256", h)
	}
	same := base
	same.InputSchema = json.RawMessage("{ \"type\": \"object\",\n \"properties\": {\"title\": {\"type\": \"string\"}} }")
	same.Risk = tools.RiskLow
	same.Title = "New issue"
	if DefinitionHash(same) != h {
		t.Errorf("whitespace in a schema, risk or title changed the hash")
	}
	for name, mod := range map[string]func(*tools.Definition){
		"name":          func(d *tools.Definition) { d.Name = "create_issues" },
		"server":        func(d *tools.Definition) { d.ServerName = "gitlab" },
		"description":   func(d *tools.Definition) { d.Description += " And more." },
		"input schema":  func(d *tools.Definition) { d.InputSchema = json.RawMessage(`{"type":"object"}`) },
		"output schema": func(d *tools.Definition) { d.OutputSchema = nil },
		"shifted":       func(d *tools.Definition) { d.Name, d.ServerName = "create_issuegithub", "" },
	} {
		d := base
		mod(&d)
		if DefinitionHash(d) == h {
			t.Errorf("changing the %s kept the hash", name)
		}
	}
}

func TestValidate(t *testing.T) {
	good := Rules{
		Tools:    map[string]Decision{"read_file": Allow, "github/*": Ask, "*": Ask, "*/*": Deny},
		Apps:     map[string]AppRules{"a": {Allow: []string{"write_file"}, Deny: []string{"*/list_prs"}}},
		Commands: []CommandRule{{"git status", Allow}, {"go test **", Allow}, {"npm run *", Ask}, {"**", Deny}},
		Admin:    Ask,
	}
	if err := good.Validate(); err != nil {
		t.Errorf("good rules: %v", err)
	}
	for name, r := range map[string]Rules{
		"decision":         {Tools: map[string]Decision{"read_file": "maybe"}},
		"empty name":       {Tools: map[string]Decision{"": Allow}},
		"partial star":     {Tools: map[string]Decision{"git*": Allow}},
		"empty server":     {Tools: map[string]Decision{"/x": Allow}},
		"command in tools": {Tools: map[string]Decision{"execute_command:ls": Allow}},
		"app name":         {Apps: map[string]AppRules{"a": {Ask: []string{"github/"}}}},
		"app command":      {Apps: map[string]AppRules{"a": {Allow: []string{"execute_command:ls"}}}},
		"rest not last":    {Commands: []CommandRule{{"git ** x", Allow}}},
		"empty pattern":    {Commands: []CommandRule{{"  ", Deny}}},
		"partial wildcard": {Commands: []CommandRule{{"git st*", Allow}}},
		"command decision": {Commands: []CommandRule{{"ls", "yes"}}},
		"admin":            {Admin: "always"},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// A malformed pattern never matches.
	p := New(Rules{Commands: []CommandRule{{"git ** status", Allow}}}, nil)
	if v := p.Decide(Request{AppID: "a", Tool: def(t, "execute_command"), Args: cmdArgs("git x status")}); v.Decision != Ask {
		t.Errorf("malformed pattern: %+v", v)
	}
}
