package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/workspace"
)

// Decision is what the policy says about a call.
type Decision string

const (
	Allow Decision = "allow"
	Ask   Decision = "ask"
	Deny  Decision = "deny"
)

// Valid reports whether d is allow, ask or deny.
func (d Decision) Valid() bool { return d == Allow || d == Ask || d == Deny }

// Rules are the configured rules. Build them from the config with
// [FromConfig], or by hand; check hand-made rules with [Rules.Validate]: a
// decision that is not allow, ask or deny is treated as deny, and a command
// pattern with "**" anywhere but last never matches.
type Rules struct {
	// Tools maps a tool name pattern (see the package doc: "read_file",
	// "server/tool", "server/*", "*/*", "*") to a decision; from config
	// tools.policy.
	Tools map[string]Decision
	// Apps maps an app id to its allow/ask/deny tool lists (config
	// apps[].grants.tools), with the same name patterns as Tools.
	Apps map[string]AppRules
	// Commands are rules on execute_command: each a pattern and a decision,
	// matched against whole parsed commands (see the package doc).
	Commands []CommandRule
	// Admin is the decision for calls made with the admin token (the person
	// at the terminal) when nothing more specific says otherwise; empty
	// means Allow.
	Admin Decision
	// Workspace is the workspace root, absolute. When set, the path of a
	// write is also checked for protected files as it resolves through the
	// symlinks in the workspace (see the package doc).
	Workspace string
	// Web are the hosts web_fetch and web_search reach without asking.
	Web WebRules
}

// AppRules are one app's tool lists.
type AppRules struct {
	Allow, Ask, Deny []string
}

// CommandRule is a rule on the commands execute_command runs.
type CommandRule struct {
	// Pattern is words separated by spaces: a literal, "*" for exactly one
	// word, or a final "**" for any remaining words.
	Pattern  string
	Decision Decision
}

// Request is a call to decide on.
type Request struct {
	// AppID is the calling app; "" for the person (admin token, editor).
	AppID string
	// Agent is set for an agent session's call: acting for the person
	// (AppID "") it still gets the risk default, not the admin default.
	Agent bool
	// Author is who made the call, as tools.Call has it ("cli", "editor",
	// "app:<id>", "agent:<session>", "mcp:<server>"): it names the asker
	// in the ICERC record, and decides nothing.
	Author string
	Tool   tools.Definition
	// Args are the call's arguments, already valid against the input schema.
	Args json.RawMessage
	// DefinitionHash pins the tool definition a remembered answer was given
	// for (MCP tools change under us); "" means [DefinitionHash] of Tool.
	DefinitionHash string
}

// Verdict is a decision with the reason for it.
type Verdict struct {
	Decision Decision
	// Reason is for people: it names the rule that decided.
	Reason string
	// Remembered is true when the decision came from an "always" answer.
	Remembered bool
	// Protected is the protected path the call writes (.git/hooks/x,
	// .vscode/tasks.json, an MCP file), when that made the decision ask:
	// then an "always" answer counts once and is not remembered.
	Protected string
}

// Answer is the person's answer to a permission request.
type Answer string

const (
	AllowOnce    Answer = "allow_once"
	AllowAlways  Answer = "allow_always"
	RejectOnce   Answer = "reject_once"
	RejectAlways Answer = "reject_always"
)

// Valid reports whether a is one of the four answers.
func (a Answer) Valid() bool {
	return a == AllowOnce || a == AllowAlways || a == RejectOnce || a == RejectAlways
}

// Allows reports whether the answer lets the call run.
func (a Answer) Allows() bool { return a == AllowOnce || a == AllowAlways }

// Always reports whether the answer is to be remembered.
func (a Answer) Always() bool { return a == AllowAlways || a == RejectAlways }

// ErrInvalidAnswer is returned by [Policy.Record] for an unknown answer.
var ErrInvalidAnswer = errors.New("invalid permission answer")

// ErrNoStore is returned by [Policy.Record] for an "always" answer when the
// policy has no [Approvals] to remember it in.
var ErrNoStore = errors.New("no approvals store to remember the answer in")

// Policy decides on tool calls. It is safe for concurrent use; its rules do
// not change after [New].
type Policy struct {
	tools    []nameRule
	apps     map[string][]nameRule
	denyCmds []commandRule // deny rules: level 0
	cmds     []commandRule // allow and ask rules: level 3
	admin    Decision
	adminRaw Decision // as configured, for the reason when invalid
	store    *Approvals
	// workspace is Rules.Workspace: where protected paths resolve.
	workspace string
	web       WebRules
}

// New returns a policy with the rules; store, when not nil, remembers and
// supplies the person's "always" answers. New copies what it needs from
// rules.
func New(rules Rules, store *Approvals) *Policy {
	p := &Policy{
		apps:     make(map[string][]nameRule, len(rules.Apps)),
		admin:    Allow,
		adminRaw: rules.Admin,
		store:    store,
		// A relative root would make every resolution wrong.
		workspace: absOrEmpty(rules.Workspace),
		web: WebRules{AllowedDomains: slices.Clone(rules.Web.AllowedDomains),
			SearchHost: strings.TrimSuffix(strings.ToLower(rules.Web.SearchHost), ".")},
	}
	if rules.Admin != "" {
		p.admin = normalize(rules.Admin)
	}
	for pat, d := range rules.Tools {
		p.tools = append(p.tools, newNameRule(pat, d))
	}
	for id, app := range rules.Apps {
		var rs []nameRule
		for _, l := range []struct {
			names []string
			d     Decision
		}{{app.Deny, Deny}, {app.Ask, Ask}, {app.Allow, Allow}} {
			for _, n := range l.names {
				rs = append(rs, newNameRule(n, l.d))
			}
		}
		p.apps[id] = rs
	}
	for _, c := range rules.Commands {
		r := compileCommandRule(c)
		if r.decision == Deny {
			p.denyCmds = append(p.denyCmds, r)
		} else {
			p.cmds = append(p.cmds, r)
		}
	}
	return p
}

// Validate reports every problem in the rules, joined: decisions that are
// not allow, ask or deny, malformed tool name patterns and command patterns.
func (r Rules) Validate() error {
	var errs []error
	for _, pat := range sortedKeys(r.Tools) {
		if err := checkNamePattern(pat); err != nil {
			errs = append(errs, fmt.Errorf("tools.policy %q: %w", pat, err))
		}
		if strings.HasPrefix(pat, executeCommand+":") {
			errs = append(errs, fmt.Errorf("tools.policy %q: a command rule goes in Rules.Commands", pat))
		}
		if d := r.Tools[pat]; !d.Valid() {
			errs = append(errs, fmt.Errorf("tools.policy %q: decision %q is not allow, ask or deny", pat, d))
		}
	}
	for _, id := range sortedKeys(r.Apps) {
		app := r.Apps[id]
		for _, l := range []struct {
			name  string
			names []string
		}{{"allow", app.Allow}, {"ask", app.Ask}, {"deny", app.Deny}} {
			for _, n := range l.names {
				if err := checkNamePattern(n); err != nil {
					errs = append(errs, fmt.Errorf("app %q grants.tools.%s %q: %w", id, l.name, n, err))
				}
				if strings.HasPrefix(n, executeCommand+":") {
					errs = append(errs, fmt.Errorf("app %q grants.tools.%s %q: command rules are only read from tools.policy", id, l.name, n))
				}
			}
		}
	}
	for i, c := range r.Commands {
		if err := checkCommandPattern(c.Pattern); err != nil {
			errs = append(errs, fmt.Errorf("command rule %d %q: %w", i, c.Pattern, err))
		}
		if !c.Decision.Valid() {
			errs = append(errs, fmt.Errorf("command rule %d %q: decision %q is not allow, ask or deny", i, c.Pattern, c.Decision))
		}
	}
	for i, d := range r.Web.AllowedDomains {
		if err := workspace.CheckDomainPattern(d); err != nil {
			errs = append(errs, fmt.Errorf("web.allowedDomains[%d]: %w", i, err))
		}
	}
	if r.Admin != "" && !r.Admin.Valid() {
		errs = append(errs, fmt.Errorf("admin decision %q is not allow, ask or deny", r.Admin))
	}
	return errors.Join(errs...)
}

// Decide decides on a call; see the package doc for the rules.
func (p *Policy) Decide(req Request) Verdict {
	return p.decideRef(&req)
}

// decideRef is Decide without copying the request: the gate calls it for
// every tool call, and its frames add to the caller's stack.
func (p *Policy) decideRef(req *Request) Verdict {
	var cmd *command
	if isExecuteCommand(req.Tool) {
		cmd = parseArgs(req.Args)
	}
	return p.decide(req, cmd)
}

// decide is Decide with the execute_command arguments already read; cmd is
// nil for other tools, and for execute_command when no command is known.
func (p *Policy) decide(req *Request, cmd *command) Verdict {
	v := p.configured(req, cmd)
	if target, ok := p.protectedWrite(req); ok {
		return p.protectedVerdict(req, target, v)
	}
	if v.Decision == Ask && p.store != nil {
		v = p.remembered(req, v)
	}
	if cmd != nil && v.Decision == Allow {
		return p.checkDenyRules(cmd, v)
	}
	return v
}

// remembered applies a remembered "always" answer to an ask: one for the
// same app, tool and definition hash whose scope covers the call.
func (p *Policy) remembered(req *Request, v Verdict) Verdict {
	hash := req.DefinitionHash
	if hash == "" {
		hash = DefinitionHash(req.Tool)
	}
	s, ok := callScope(req, nil)
	a, found := p.store.Lookup(req.AppID, req.Tool.Name, req.Tool.ServerName, hash, s, ok)
	if !found {
		return v
	}
	ans, d := AllowAlways, Allow
	if !a.Allow {
		ans, d = RejectAlways, Deny
	}
	return Verdict{
		Decision:   d,
		Reason:     fmt.Sprintf("remembered: %s to %s for %s on %s", ans, a.Name(), caller(req.AppID), a.Time.UTC().Format(time.DateOnly)),
		Remembered: true,
	}
}

// checkDenyRules turns an allowed command into an ask when the deny rules
// cannot rule it out.
func (p *Policy) checkDenyRules(cmd *command, v Verdict) Verdict {
	if cmd.err != nil {
		return Verdict{Decision: Ask, Reason: fmt.Sprintf("%v, so the deny rules cannot be checked: ask instead of allow (%s)", cmd.err, v.Reason)}
	}
	for _, r := range p.denyCmds {
		if m, text := cmd.deny(r); m == maybeMatch {
			return Verdict{Decision: Ask, Reason: fmt.Sprintf("command %q may match deny rule %q (through words or a script known only when it runs): ask instead of allow (%s)", text, r.pattern, v.Reason)}
		}
	}
	return v
}

// configured is the decision of the configured levels 0–5. The reasons are
// built in helpers, so that its own frame stays small.
func (p *Policy) configured(req *Request, cmd *command) Verdict {
	// 0: command deny rules.
	if cmd != nil {
		if v, ok := p.commandDeny(cmd); ok {
			return v
		}
	}
	// 1: the app's lists.
	if req.AppID != "" {
		if i := pickName(p.apps[req.AppID], &req.Tool); i >= 0 {
			return appVerdict(req, &p.apps[req.AppID][i])
		}
	}
	// 2: tools.policy.
	if i := pickName(p.tools, &req.Tool); i >= 0 {
		return toolsVerdict(req, &p.tools[i])
	}
	// 3: command allow and ask rules.
	if cmd != nil {
		if r, ok := cmd.pickAllow(p.cmds); ok {
			reason := fmt.Sprintf("command rule %q = %s", r.pattern, r.raw)
			if !r.raw.Valid() {
				reason += invalidNote(r.raw)
			}
			return Verdict{Decision: r.decision, Reason: reason}
		}
	}
	// 3: web.allowedDomains.
	if isWeb(req.Tool) {
		if v, ok := p.webVerdict(req); ok {
			return v
		}
	}
	// 4: the admin default.
	if req.AppID == "" && !req.Agent {
		return p.adminVerdict()
	}
	// 5: the risk default.
	return riskVerdict(req.Tool.Risk)
}

func (p *Policy) commandDeny(cmd *command) (Verdict, bool) {
	for _, r := range p.denyCmds {
		if m, text := cmd.deny(r); m == fullMatch {
			return Verdict{Decision: Deny, Reason: fmt.Sprintf("command rule %q = deny: matches %q", r.pattern, text)}, true
		}
	}
	return Verdict{}, false
}

func appVerdict(req *Request, r *nameRule) Verdict {
	name := displayName(req.Tool)
	verb := map[Decision]string{Allow: "allows", Ask: "asks for", Deny: "denies"}[r.decision]
	reason := fmt.Sprintf("app %q %s %q", req.AppID, verb, name)
	if r.pattern != name {
		reason += fmt.Sprintf(" (by %q)", r.pattern)
	}
	if !r.raw.Valid() {
		reason += invalidNote(r.raw)
	}
	return Verdict{Decision: r.decision, Reason: reason}
}

func toolsVerdict(req *Request, r *nameRule) Verdict {
	name := displayName(req.Tool)
	reason := fmt.Sprintf("config tools.policy: %s = %s", r.pattern, r.raw)
	if r.pattern != name {
		reason += fmt.Sprintf(" (for %q)", name)
	}
	if !r.raw.Valid() {
		reason += invalidNote(r.raw)
	}
	return Verdict{Decision: r.decision, Reason: reason}
}

func (p *Policy) adminVerdict() Verdict {
	reason := "call by the person (admin token): " + string(p.admin)
	if p.adminRaw != "" && !p.adminRaw.Valid() {
		reason += invalidNote(p.adminRaw)
	}
	return Verdict{Decision: p.admin, Reason: reason}
}

func riskVerdict(risk tools.Risk) Verdict {
	switch risk {
	case tools.RiskLow:
		return Verdict{Decision: Allow, Reason: "default for low-risk tools: allow"}
	case tools.RiskMedium:
		return Verdict{Decision: Ask, Reason: "default for medium-risk tools: ask"}
	case tools.RiskHigh:
		return Verdict{Decision: Ask, Reason: "default for high-risk tools: ask"}
	}
	return Verdict{Decision: Ask, Reason: fmt.Sprintf("default for tools of unknown risk %q (treated as high): ask", risk)}
}

// Record stores an "always" answer for the call, with its definition hash
// and what the call's prompt showed (see the package doc, "Asking and
// remembering"); "once" answers are not stored, and neither is an "always"
// answer to a call that has nothing to remember (a command that is not one
// plain command): that answer counts once. It is an error to record an
// "always" answer on a policy without [Approvals].
func (p *Policy) Record(req Request, ans Answer, when time.Time) error {
	return p.record(&req, ans, "", when)
}

// record is Record; dir, when set, widens the answer to a file tool's call
// to every path under that directory, which must hold the call's path.
func (p *Policy) record(req *Request, ans Answer, dir string, when time.Time) error {
	if !ans.Valid() {
		return fmt.Errorf("%w: %q", ErrInvalidAnswer, ans)
	}
	if !ans.Always() {
		return nil
	}
	if p.store == nil {
		return ErrNoStore
	}
	s, ok := callScope(req, nil)
	if !ok {
		return nil
	}
	if dir != "" {
		d, err := underDirectory(s, dir)
		if err != nil {
			return err
		}
		s = Scope{Directory: d}
	}
	hash := req.DefinitionHash
	if hash == "" {
		hash = DefinitionHash(req.Tool)
	}
	return p.store.Remember(Approval{AppID: req.AppID, Tool: req.Tool.Name, Server: req.Tool.ServerName, Scope: s,
		DefinitionHash: hash, Allow: ans.Allows(), Time: when})
}

// ErrNotUnder is returned when the directory picked for an "always" answer
// does not hold the call's path, or the call is not a file tool's.
var ErrNotUnder = errors.New("the directory does not hold the call's path")

// underDirectory checks that dir, a directory the person picked, holds the
// path of the call whose scope is s, and returns it in clean form.
func underDirectory(s Scope, dir string) (string, error) {
	if s.Path == "" {
		return "", fmt.Errorf("%w: only a file tool's answer can cover a directory", ErrNotUnder)
	}
	if dir == "" {
		return "", fmt.Errorf("%w: no directory given", ErrNotUnder)
	}
	d, ok := cleanScopePath(strings.TrimSuffix(dir, "/"))
	if !ok || !(d == "." || s.Path == d || strings.HasPrefix(s.Path, d+"/")) {
		return "", fmt.Errorf("%w: %q does not hold %q", ErrNotUnder, dir, s.Path)
	}
	return d, nil
}

// callScope is what an "always" answer to the call remembers; ok is false
// when there is nothing to remember and the answer counts once. cmd is the
// parsed execute_command, or nil to parse it here.
//
//   - execute_command: the argv of the program when it is exactly one plain
//     simple command and the call sets no env, as a command rule matches
//     it; any other program (pipes, lists, redirections, expansions, ...)
//     counts once.
//   - the file tools: the path argument, cleaned; a call without one (a
//     search_files of the whole workspace: give "." to have it remembered)
//     or with a path the tools would refuse counts once. So a decision on
//     a tool's arguments {} (which tools to offer an agent) meets only
//     broad answers.
//   - web_fetch: the host of its URL, in lower case; a URL whose host is
//     not a plain host name or address counts once.
//   - every other tool: the whole tool.
func callScope(req *Request, cmd *command) (Scope, bool) {
	d := req.Tool
	switch {
	case d.ServerName == "" && d.Name == webFetch:
		if host := fetchHost(req.Args); host != "" && checkDomainScope(host) == nil {
			return Scope{Domain: host}, true
		}
		return Scope{}, false
	case isExecuteCommand(d):
		if cmd == nil {
			cmd = parseArgs(req.Args)
		}
		if cmd.err != nil || cmd.plain == nil || len(cmd.env) > 0 {
			return Scope{}, false
		}
		return Scope{Command: cmd.plain}, true
	case scoped(d.Name, d.ServerName):
		var a struct {
			Path *string `json:"path"`
		}
		if json.Unmarshal(req.Args, &a) != nil || a.Path == nil {
			return Scope{}, false
		}
		if p, ok := cleanScopePath(*a.Path); ok {
			return Scope{Path: p}, true
		}
		return Scope{}, false
	}
	return Scope{}, true
}

// Check answers the CoreFramework.CheckPermission RPC with the same rules
// as [Policy.Decide], without running or recording anything:
//
//   - action "execute_command:<command line>" is execute_command with
//     arguments {"command": "<command line>"};
//   - any other action is a tool name as the caller knows it ("read_file",
//     "server/tool", ...), resolved by lookup, which gets it unchanged;
//   - resource, when set, is the command line for action "execute_command"
//     (when the action does not carry one), and for a core tool that
//     writes (kind edit, delete or move) the path it would write, so that a
//     protected path is answered ask as the call would be; it is otherwise
//     not used: the policy decides by tool, not by path.
//
// An action that lookup does not know (or a nil lookup) is denied. For
// execute_command without a command line the command rules are not
// consulted: the answer is the tool's.
func (p *Policy) Check(appID, action, resource string, lookup func(name string) (tools.Definition, bool)) Verdict {
	name, line := action, ""
	if rest, ok := strings.CutPrefix(action, executeCommand+":"); ok {
		name, line = executeCommand, strings.TrimSpace(rest)
	}
	if strings.TrimSpace(name) == "" {
		return Verdict{Decision: Deny, Reason: "no action given"}
	}
	if lookup == nil {
		return Verdict{Decision: Deny, Reason: fmt.Sprintf("unknown tool %q", name)}
	}
	def, ok := lookup(name)
	if !ok {
		return Verdict{Decision: Deny, Reason: fmt.Sprintf("unknown tool %q", name)}
	}
	req := Request{AppID: appID, Tool: def}
	if isExecuteCommand(def) {
		if line == "" {
			line = strings.TrimSpace(resource)
		}
		if line == "" {
			v := p.decide(&req, nil)
			v.Reason += " (no command line given: command rules not consulted)"
			return v
		}
		req.Args, _ = json.Marshal(map[string]string{"command": line})
	} else if r := strings.TrimSpace(resource); r != "" && def.ServerName == "" {
		req.Args, _ = json.Marshal(map[string]string{"path": r})
	}
	return p.Decide(req)
}

// DefinitionHash is the SHA-256, in hex, of a tool's name, server,
// description and input and output schemas (compacted JSON): what a
// remembered answer was given for.
func DefinitionHash(d tools.Definition) string {
	h := sha256.New()
	for _, f := range [][]byte{[]byte(d.Name), []byte(d.ServerName), []byte(d.Description), compactJSON(d.InputSchema), compactJSON(d.OutputSchema)} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write(f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func compactJSON(b json.RawMessage) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}

func normalize(d Decision) Decision {
	if d.Valid() {
		return d
	}
	return Deny
}

func invalidNote(raw Decision) string {
	return fmt.Sprintf(" (%q is not allow, ask or deny: treated as deny)", raw)
}

func caller(appID string) string {
	if appID == "" {
		return "the person"
	}
	return fmt.Sprintf("app %q", appID)
}

func isExecuteCommand(d tools.Definition) bool {
	return d.ServerName == "" && d.Name == executeCommand
}

// displayName is a tool's name as rules write it: "name" or "server/name".
func displayName(d tools.Definition) string {
	if d.ServerName == "" {
		return d.Name
	}
	return d.ServerName + "/" + d.Name
}
