package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/core"
)

// The TEPS of the agent is the ToolManager and its policy: each tool call
// of the model is an ordinary Nexus tool call by "agent:<session>", acting
// for the session's owner, validated, permission-checked (the policy's
// default for the person's own calls does not apply), audited and
// published like any other.

// offer is the tools offered to the model in one step, and how their
// model-facing names map back to Nexus's.
type offer struct {
	list  []llm.Tool
	byKey map[string]tools.Definition // by model-facing name
	// plan is whether the agent's own plan tool is offered (agent.tools
	// may leave it out); its name is no workspace tool's then.
	plan bool
	// briefs are the subagents the agent's own task tool may start; none
	// when it is not offered (no brief, or agent.tools leaves it out).
	briefs []Brief
}

// parallel reports whether a call may run beside its neighbours of the
// step: a read-only tool's, or a subagent's (each of whose calls is
// gated on its own).
func (o *offer) parallel(c llm.ToolCall) bool {
	if len(o.briefs) > 0 && c.Name == TaskToolName {
		return true
	}
	d, ok := o.byKey[c.Name]
	return ok && readOnly(d)
}

// modelName is the name of a tool as the model sees it: a core tool's
// own name, an MCP tool's "server__tool"; names providers refuse (they
// take [a-zA-Z0-9_-]{1,64}) are made safe and kept unique with a hash.
func modelName(d tools.Definition) string {
	n := d.Name
	if d.ServerName != "" {
		n = d.ServerName + "__" + d.Name
	}
	if validToolName.MatchString(n) {
		return n
	}
	sum := sha256.Sum256([]byte(d.ServerName + "\x00" + d.Name))
	safe := unsafeChars.ReplaceAllString(n, "_")
	if len(safe) > 55 {
		safe = safe[:55]
	}
	return safe + "_" + hex.EncodeToString(sum[:4])
}

var (
	validToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	unsafeChars   = regexp.MustCompile(`[^a-zA-Z0-9_-]`)
)

// displayName is a tool's name in the policy's words ("read_file",
// "server/tool"), which agent.tools patterns match.
func displayName(d tools.Definition) string {
	if d.ServerName != "" {
		return d.ServerName + "/" + d.Name
	}
	return d.Name
}

// offer lists the tools the session's agent may use now: those of the
// manager that agent.tools allows (when set) and that the policy does not
// deny its owner, and the agent's own plan tool when agent.tools allows
// it (last, so that the workspace's tools keep their places).
func (ss *Session) offer() (*offer, error) {
	if ss.task != nil {
		return ss.task.offer()
	}
	allow := ss.svc.opts.Config.Agent.Tools
	ss.mu.Lock()
	only := ss.turnTools
	ss.mu.Unlock()
	named := func(patterns []string, name string) bool {
		return slices.ContainsFunc(patterns, func(p string) bool { return namePatternMatch(p, name) })
	}
	// The plan tool follows agent.tools and a command's allowed-tools too.
	o := &offer{byKey: map[string]tools.Definition{},
		plan: (len(allow) == 0 || named(allow, PlanToolName)) && (only == nil || named(only, PlanToolName))}
	if (len(allow) == 0 || named(allow, TaskToolName)) && (only == nil || named(only, TaskToolName)) {
		o.briefs = usableBriefs(ss.currentBriefs())
	}
	for _, d := range ss.svc.opts.Tools.List("") {
		if len(allow) > 0 && !slices.ContainsFunc(allow, func(p string) bool { return namePatternMatch(p, displayName(d)) }) {
			continue
		}
		if only != nil && !slices.ContainsFunc(only, func(p string) bool { return namePatternMatch(p, displayName(d)) }) {
			continue // the running command's allowed-tools
		}
		if ss.svc.opts.MayUse != nil && !ss.svc.opts.MayUse(ss.party, d) {
			continue
		}
		schema, err := ss.svc.schemas.offered(d)
		if err != nil {
			return nil, &TEPSInitError{Err: fmt.Errorf("tool %s: %w", displayName(d), err)}
		}
		name := modelName(d)
		if (o.plan && name == PlanToolName) || (len(o.briefs) > 0 && name == TaskToolName) {
			continue // the agent's own tool of that name is the one offered
		}
		desc := d.Description
		if desc == "" {
			desc = d.Title
		}
		o.list = append(o.list, llm.Tool{Name: name, Description: desc, Schema: schema})
		o.byKey[name] = d
	}
	if o.plan {
		o.list = append(o.list, planTool)
	}
	if len(o.briefs) > 0 {
		o.list = append(o.list, taskTool(o.briefs))
	}
	return o, nil
}

// namePatternMatch matches a tools.policy-style pattern: "*" any tool,
// "server/*", "*/tool", or a name.
func namePatternMatch(pattern, name string) bool {
	if pattern == "*" {
		return true
	}
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}

// icercSchema is the property added to the schema of the tools that may
// ask the person, for the model to say why it calls them.
var icercSchema = json.RawMessage(`{"type":"object","description":"Why you make this call, shown to the person who approves it.","properties":{"intent":{"type":"string","description":"What you want to achieve with this call."},"expected_outcome":{"type":"string","description":"What you expect the call to do."}}}`)

// schemaCache keeps the offered schema of each tool, made again only when
// the tool's own schema or risk changed: a step offers every tool.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]cachedSchema // by displayName
}

type cachedSchema struct {
	raw     json.RawMessage
	risk    tools.Risk
	offered json.RawMessage
}

func (c *schemaCache) offered(d tools.Definition) (json.RawMessage, error) {
	key := displayName(d)
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && e.risk == d.Risk && bytes.Equal(e.raw, d.InputSchema) {
		return e.offered, nil
	}
	s, err := offeredSchema(d)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedSchema{}
	}
	c.m[key] = cachedSchema{raw: d.InputSchema, risk: d.Risk, offered: s}
	c.mu.Unlock()
	return s, nil
}

// offeredSchema is the schema the model sees: the tool's own, with an
// optional "icerc" property for tools above low risk (unless the tool has
// a property of that name).
func offeredSchema(d tools.Definition) (json.RawMessage, error) {
	raw := d.InputSchema
	if len(raw) == 0 {
		raw = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if d.Risk == tools.RiskLow {
		return raw, nil
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	var props map[string]json.RawMessage
	if p, ok := s["properties"]; ok {
		if err := json.Unmarshal(p, &props); err != nil {
			return raw, nil // not a plain object schema: leave it alone
		}
	}
	if props == nil {
		props = map[string]json.RawMessage{}
	}
	if _, taken := props["icerc"]; taken {
		return raw, nil
	}
	props["icerc"] = icercSchema
	p, err := json.Marshal(props)
	if err != nil {
		return nil, err
	}
	s["properties"] = p
	return json.Marshal(s)
}

// splitICERC takes the model's "icerc" object (or the origin's
// "icerc_full_text" string) out of a call's arguments, when the tool's
// own schema has no such property, and returns the intent and expected
// outcome it gives.
func splitICERC(d tools.Definition, args json.RawMessage) (rest json.RawMessage, intent, outcome string) {
	if !bytes.Contains(args, []byte(`"icerc`)) {
		return args, "", ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args, "", ""
	}
	var props struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(d.InputSchema, &props)
	found := false
	if raw, ok := m["icerc"]; ok && props.Properties["icerc"] == nil {
		found = true
		delete(m, "icerc")
		var obj struct {
			Intent          string `json:"intent"`
			ExpectedOutcome string `json:"expected_outcome"`
			ExpectedCamel   string `json:"expectedOutcome"`
			FullText        string `json:"icerc_full_text"`
		}
		var text string
		switch {
		case json.Unmarshal(raw, &obj) == nil:
			intent, outcome = obj.Intent, cmpOr(obj.ExpectedOutcome, obj.ExpectedCamel)
			if intent == "" && outcome == "" && obj.FullText != "" {
				intent, outcome = parseICERCText(obj.FullText)
			}
		case json.Unmarshal(raw, &text) == nil:
			intent, outcome = parseICERCText(text)
		}
	}
	if raw, ok := m["icerc_full_text"]; ok && props.Properties["icerc_full_text"] == nil {
		found = true
		delete(m, "icerc_full_text")
		var text string
		if json.Unmarshal(raw, &text) == nil && intent == "" && outcome == "" {
			intent, outcome = parseICERCText(text)
		}
	}
	if !found {
		return args, "", ""
	}
	out, err := json.Marshal(m)
	if err != nil {
		return args, "", ""
	}
	return out, intent, outcome
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// parseICERCText reads the origin's ICERC text ("Intent: …", "Command: …",
// "Expected Outcome: …", "Risk: …", a field a line or several); text with
// no such labels is all intent.
func parseICERCText(text string) (intent, outcome string) {
	var cur *string
	var other string
	found := false
	for _, line := range strings.Split(text, "\n") {
		label, rest, ok := strings.Cut(line, ":")
		key := strings.ToLower(strings.Trim(strings.TrimSpace(label), "*-# "))
		if ok {
			switch key {
			case "intent":
				cur, found = &intent, true
				*cur = strings.TrimSpace(rest)
				continue
			case "expected outcome", "expected_outcome", "outcome":
				cur, found = &outcome, true
				*cur = strings.TrimSpace(rest)
				continue
			case "command", "risk", "risk assessment", "risk_assessment":
				cur = &other
				continue
			}
		}
		if cur != nil && cur != &other {
			*cur = strings.TrimSpace(*cur + "\n" + line)
		}
	}
	if !found {
		return strings.TrimSpace(text), ""
	}
	return intent, outcome
}

// readOnly reports whether a tool only reads: its calls of one step run
// side by side.
func readOnly(d tools.Definition) bool {
	return (d.Kind == tools.KindRead || d.Kind == tools.KindSearch) && d.Risk == tools.RiskLow
}

// runTools runs the model's calls of one step and adds their results to
// the history, in the model's order: read-only calls and subagents (task)
// side by side, the others one at a time. It returns how many calls were malformed or named
// no tool.
func (ss *Session) runTools(ctx context.Context, o *offer, calls []llm.ToolCall, emit func(Update)) (int, error) {
	results := make([]ToolResult, len(calls))
	bad := make([]bool, len(calls))
	for i := 0; i < len(calls); {
		j := i + 1
		if o.parallel(calls[i]) {
			for j < len(calls) && o.parallel(calls[j]) {
				j++
			}
		}
		var wg sync.WaitGroup
		for k := i; k < j; k++ {
			wg.Go(func() { results[k], bad[k] = ss.runTool(ctx, o, calls[k], emit) })
		}
		wg.Wait()
		i = j
	}
	n := 0
	for i, r := range results {
		if bad[i] {
			n++
		}
		if _, err := ss.add(Message{Role: RoleToolResult, Result: &r}); err != nil {
			return n, err
		}
	}
	return n, nil
}

// runTool runs one call of the model as a Nexus tool call and returns
// what goes back to the model, and whether the call was malformed or
// named no tool. Only a tool offered in this step runs (see notOffered).
func (ss *Session) runTool(ctx context.Context, o *offer, c llm.ToolCall, emit func(Update)) (ToolResult, bool) {
	if o.plan && c.Name == PlanToolName {
		return ss.runPlan(c, emit)
	}
	if len(o.briefs) > 0 && c.Name == TaskToolName {
		return ss.runTask(ctx, o, c, emit)
	}
	d, known := o.byKey[c.Name]
	if !known {
		return ss.notOffered(o, c, emit), true
	}
	res := ToolResult{CallID: c.ID, Name: c.Name}
	req := tools.ExecuteRequest{ToolName: d.Name, ServerName: d.ServerName, Party: ss.party, TaskID: ss.id, RequestID: c.ID,
		Session: ss.id, Turn: ss.currentTurn(), Elicit: ss.elicitor()}
	req.Arguments, req.Intent, req.ExpectedOutcome = splitICERC(d, c.Arguments)
	first := true
	// A call that may have changed files ends once Execute returns, with
	// what its checkpoint says it changed.
	hold := ss.mayChange(d)
	var completed *tools.Call
	req.OnUpdate = func(call tools.Call) {
		if hold && call.Status == tools.StatusCompleted {
			completed = &call
			return
		}
		emit(toolCallUpdate(first, call))
		first = false
	}
	call := ss.svc.opts.Tools.Execute(ctx, req)
	res.ToolCallID, res.Title, res.Kind = call.ID, core.Summary(call), acpKind(call.Kind)
	if completed != nil {
		u := toolCallUpdate(first, *completed)
		u.Changes, u.MoreChanges, u.Edits = ss.changesOf(call.ID)
		res.Changes, res.MoreChanges = u.Changes, u.MoreChanges
		emit(u)
	}
	res, bad := ss.resultOf(o, c, d, req, call, res)
	for _, n := range call.Notes {
		res.Content += "\n\n[a postToolUse hook says] " + n
	}
	return res, bad
}

// resultOf is what goes back to the model of a call that went to the
// ToolManager, and whether it was malformed or named no tool.
func (ss *Session) resultOf(o *offer, c llm.ToolCall, d tools.Definition, req tools.ExecuteRequest, call tools.Call, res ToolResult) (ToolResult, bool) {
	switch {
	case call.Error == nil:
		if d.ServerName == "" {
			ss.workedIn(c.Name, req.Arguments)
		}
		res.Content = string(call.ResultJSON)
		if call.ResultTruncated {
			res.Content += fmt.Sprintf("\n[the result was %d bytes; only its head is shown]", call.ResultSize)
		}
		return res, false
	case call.Error.Code == tools.CodePermissionDenied:
		res.IsError = true
		res.Content = "Declined: " + call.Error.Message + ". The call did not run. Do not repeat it as is: say what you wanted to do and why, or find another way."
		return res, false
	case call.Error.Code == tools.CodeUnknownTool: // offered, and gone since
		res.IsError = true
		res.Content = o.unknown(c.Name)
		return res, true
	case call.Error.Code == tools.CodeInvalidArguments:
		res.IsError = true
		res.Content = "Invalid arguments: " + call.Error.Message + ". Call the tool again with arguments that match its schema."
		return res, true
	}
	res.IsError = true
	res.Content = call.Error.Code + ": " + call.Error.Message
	return res, false
}

// notOffered answers a call of a tool that was not offered in this step:
// a name of no tool, or of one that agent.tools or the caller's grants
// leave out, or an offered name in another case or without its server's
// prefix. The call never reaches the ToolManager, so nothing runs and no
// one is asked; the model is told which tools it has, and the doors see a
// failed call of that name.
func (ss *Session) notOffered(o *offer, c llm.ToolCall, emit func(Update)) ToolResult {
	msg := o.unknown(c.Name)
	id, err := uuid.NewV7()
	if err != nil {
		id = uuid.New()
	}
	res := ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Content: msg,
		ToolCallID: id.String(), Title: shownName(c.Name) + " (not offered)", Kind: acpKind(tools.KindOther)}
	// No ToolName: the call is of no tool (a door that shows a write's
	// diff must not show one for it).
	u := Update{SessionUpdate: "tool_call", ToolCallID: res.ToolCallID, Title: res.Title, Kind: res.Kind, Status: acpStatus(tools.StatusError),
		Content: []ToolCallContent{{Type: "content", Content: textBlock(tools.CodeUnknownTool + ": " + msg)}}}
	if len(c.Arguments) <= tools.KeptSize {
		u.RawInput = c.Arguments
	}
	emit(u)
	return res
}

// unknown is what the model is told of a call of a tool it was not
// offered.
func (o *offer) unknown(name string) string {
	if len(o.list) == 0 {
		return fmt.Sprintf("The tool %s was not offered to you: you were given no tools. The call did not run.", shownName(name))
	}
	names := make([]string, 0, len(o.list))
	for _, t := range o.list {
		names = append(names, t.Name)
	}
	return fmt.Sprintf("The tool %s was not offered to you; the call did not run. The tools you may call are: %s.",
		shownName(name), strings.Join(names, ", "))
}

// shownName is a tool name of the model as it is shown: as is when it is
// a name providers take, else quoted with Go's escapes and cut, since the
// model chose it.
func shownName(name string) string {
	if validToolName.MatchString(name) {
		return name
	}
	const most = 128
	if len(name) > most {
		n := most
		for n > 0 && !startsRune(name[n]) {
			n--
		}
		return strconv.Quote(name[:n]) + "…"
	}
	return strconv.Quote(name)
}
