package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/internal/inert"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// An MCP server's question to the person at the terminal (elicitation):
// a form asked field by field, each with its default in brackets (Enter
// takes it), or a URL to visit. The answer goes back with
// AnswerElicitation; the daemon fills in the defaults of the fields left
// out and checks the answer against the schema.

// How a CLI call's questions are answered (nexus tools run --elicit).
const (
	elicitAsk      = "ask"             // on this terminal
	elicitEditor   = "editor"          // in the editor, if one is attached; else declined
	elicitDefaults = "accept-defaults" // accept every form with its defaults
	elicitDecline  = "decline"         // decline every question
)

// question is one question being asked.
type question struct {
	id, server, call, mode, message, url string

	fields   []formField
	required map[string]bool
	// step is -1 while asking whether to answer at all, then the field
	// being asked; len(fields) once done.
	step    int
	content map[string]any
	action  string
}

// formField is a property of the requested schema.
type formField struct {
	name, title, description, typ, format string
	def                                   json.RawMessage
	options                               []enumOption // enums; several may be picked when multi
	multi                                 bool
	minimum, maximum                      *float64
	minLength, maxLength                  *int
}

type enumOption struct{ value, label string }

// newQuestion reads a question. callLabel names the call it belongs to.
func newQuestion(id, server, callLabel, mode, message string, schema json.RawMessage, url string) (*question, error) {
	q := &question{id: id, server: server, call: callLabel, mode: mode, message: message, url: url, step: -1,
		content: map[string]any{}, required: map[string]bool{}}
	if mode == "url" {
		return q, nil
	}
	if len(bytes.TrimSpace(schema)) == 0 || string(schema) == "null" {
		return q, nil
	}
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("the requested schema: %w", err)
	}
	for _, r := range s.Required {
		q.required[r] = true
	}
	names, props, err := orderedObject(s.Properties)
	if err != nil {
		return nil, fmt.Errorf("the requested schema's properties: %w", err)
	}
	for i, name := range names {
		var p struct {
			Type        string          `json:"type"`
			Title       string          `json:"title"`
			Description string          `json:"description"`
			Format      string          `json:"format"`
			Default     json.RawMessage `json:"default"`
			Enum        []string        `json:"enum"`
			EnumNames   []string        `json:"enumNames"`
			OneOf       []titled        `json:"oneOf"`
			AnyOf       []titled        `json:"anyOf"`
			Items       *struct {
				Enum  []string `json:"enum"`
				AnyOf []titled `json:"anyOf"`
			} `json:"items"`
			Minimum   *float64 `json:"minimum"`
			Maximum   *float64 `json:"maximum"`
			MinLength *int     `json:"minLength"`
			MaxLength *int     `json:"maxLength"`
		}
		if err := json.Unmarshal(props[i], &p); err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		f := formField{name: name, title: p.Title, description: p.Description, typ: p.Type, format: p.Format, def: p.Default,
			minimum: p.Minimum, maximum: p.Maximum, minLength: p.MinLength, maxLength: p.MaxLength}
		enum, names, choices := p.Enum, p.EnumNames, append(p.OneOf, p.AnyOf...)
		if p.Type == "array" && p.Items != nil {
			f.multi = true
			enum, names, choices = p.Items.Enum, nil, p.Items.AnyOf
		}
		for j, v := range enum {
			label := v
			if j < len(names) && names[j] != "" {
				label = names[j]
			}
			f.options = append(f.options, enumOption{v, label})
		}
		for _, c := range choices {
			f.options = append(f.options, enumOption{c.Const, cmpOr(c.Title, c.Const)})
		}
		q.fields = append(q.fields, f)
	}
	return q, nil
}

type titled struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// orderedObject returns the members of a JSON object in their order.
func orderedObject(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("not an object")
	}
	var names []string
	var values []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		names, values = append(names, t.(string)), append(values, v)
	}
	return names, values, nil
}

// done reports whether the question has its answer.
func (q *question) done() bool { return q.action != "" }

// contentJSON is the answer's content, for accept in form mode.
func (q *question) contentJSON() string {
	if q.action != "accept" || q.mode == "url" {
		return ""
	}
	b, _ := json.Marshal(q.content)
	return string(b)
}

// show writes the question and its first prompt. Everything the server
// wrote is inert, and each line of its message is marked as its words, so
// that it can neither erase nor pose as the line that names who asks.
func (q *question) show(w io.Writer) {
	fmt.Fprintf(w, "MCP server %s asks", inert.Line(q.server))
	if q.call != "" {
		fmt.Fprintf(w, " (during %s)", inert.Line(q.call))
	}
	fmt.Fprintln(w, ":")
	for l := range strings.Lines(inert.Text(strings.TrimSpace(q.message))) {
		fmt.Fprintf(w, "  | %s\n", strings.TrimRight(l, "\n"))
	}
	if q.mode == "url" {
		fmt.Fprintf(w, "  address: %s\n", inert.Line(q.url))
	}
	q.prompt(w)
}

// prompt writes the prompt of the current step.
func (q *question) prompt(w io.Writer) {
	switch {
	case q.step < 0 && q.mode == "url":
		fmt.Fprint(w, "Go to this address (open it yourself)? [y]es / [n]o, decline / [c]ancel: ")
	case q.step < 0 && len(q.fields) == 0:
		fmt.Fprint(w, "Accept? [y]es / [n]o, decline / [c]ancel: ")
	case q.step < 0:
		fmt.Fprint(w, "Answer? [y]es, fill in the form / [n]o, decline / [c]ancel: ")
	case q.step < len(q.fields):
		fmt.Fprint(w, q.fields[q.step].prompt(q.required[q.fields[q.step].name]))
	}
}

// feed takes one line of the person's answer (eof: there are no more);
// it writes what comes next: an error and the same prompt again, or the
// next prompt.
func (q *question) feed(line string, eof bool, w io.Writer) {
	if eof {
		q.action = "decline" // no one is left to answer
		return
	}
	line = strings.TrimSpace(line)
	if q.step < 0 {
		switch strings.ToLower(line) {
		case "y", "yes", "":
			if q.mode == "url" || len(q.fields) == 0 {
				q.action = "accept"
				return
			}
			q.step = 0
		case "n", "no":
			q.action = "decline"
			return
		case "c", "cancel":
			q.action = "cancel"
			return
		default:
			fmt.Fprint(w, "Answer y, n or c: ")
			return
		}
		q.prompt(w)
		return
	}
	f := q.fields[q.step]
	v, set, err := f.parse(line, q.required[f.name])
	if err != nil {
		fmt.Fprintf(w, "  %v\n", err)
		q.prompt(w)
		return
	}
	if set {
		q.content[f.name] = v
	}
	q.step++
	if q.step == len(q.fields) {
		q.action = "accept"
		return
	}
	q.prompt(w)
}

// prompt is the line that asks for the field; what the server wrote in
// it is inert.
func (f formField) prompt(required bool) string {
	var b strings.Builder
	b.WriteString("  " + inert.Line(cmpOr(f.title, f.name)))
	var notes []string
	if f.description != "" {
		notes = append(notes, inert.Line(f.description))
	}
	switch {
	case len(f.options) > 0 && f.multi:
		notes = append(notes, "one or more, by number or value, separated by commas")
	case f.typ == "boolean":
		notes = append(notes, "y/n")
	case f.typ == "integer" || f.typ == "number":
		r := f.typ
		if f.minimum != nil || f.maximum != nil {
			r += " " + bound(f.minimum) + "–" + bound(f.maximum)
		}
		notes = append(notes, r)
	case f.format != "":
		notes = append(notes, inert.Line(f.format))
	}
	if required {
		notes = append(notes, "required")
	}
	if len(notes) > 0 {
		b.WriteString(" (" + strings.Join(notes, "; ") + ")")
	}
	if len(f.options) > 0 {
		var opts []string
		for i, o := range f.options {
			opts = append(opts, fmt.Sprintf("%d) %s", i+1, inert.Line(o.label)))
		}
		b.WriteString(": " + strings.Join(opts, "  "))
	}
	if d := f.defaultText(); d != "" {
		b.WriteString(" [" + inert.Line(d) + "]")
	}
	b.WriteString(": ")
	return b.String()
}

func bound(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// defaultText is the default as the person would type it.
func (f formField) defaultText() string {
	if len(f.def) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(f.def, &v) != nil {
		return ""
	}
	switch v := v.(type) {
	case bool:
		if v {
			return "y"
		}
		return "n"
	case []any:
		var parts []string
		for _, x := range v {
			parts = append(parts, fmt.Sprint(x))
		}
		return strings.Join(parts, ",")
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// parse reads a typed line: set is false when the field is left out (the
// daemon then fills in its default).
func (f formField) parse(line string, required bool) (any, bool, error) {
	if line == "" {
		if len(f.def) > 0 {
			var v any
			json.Unmarshal(f.def, &v)
			return v, true, nil
		}
		if required {
			return nil, false, fmt.Errorf("%s is required", cmpOr(f.title, f.name))
		}
		return nil, false, nil
	}
	pick := func(s string) (string, error) {
		s = strings.TrimSpace(s)
		if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(f.options) {
			return f.options[n-1].value, nil
		}
		for _, o := range f.options {
			if strings.EqualFold(s, o.value) || strings.EqualFold(s, o.label) {
				return o.value, nil
			}
		}
		return "", fmt.Errorf("%q is not one of the choices", s)
	}
	switch {
	case len(f.options) > 0 && f.multi:
		var out []any
		for _, part := range strings.Split(line, ",") {
			v, err := pick(part)
			if err != nil {
				return nil, false, err
			}
			if !slices.Contains(out, any(v)) {
				out = append(out, v)
			}
		}
		return out, true, nil
	case len(f.options) > 0:
		v, err := pick(line)
		return v, err == nil, err
	case f.typ == "boolean":
		switch strings.ToLower(line) {
		case "y", "yes", "true":
			return true, true, nil
		case "n", "no", "false":
			return false, true, nil
		}
		return nil, false, fmt.Errorf("answer y or n")
	case f.typ == "integer" || f.typ == "number":
		n, err := strconv.ParseFloat(line, 64)
		if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
			return nil, false, fmt.Errorf("%q is not a number", line)
		}
		if f.typ == "integer" && n != math.Trunc(n) {
			return nil, false, fmt.Errorf("%q is not a whole number", line)
		}
		if (f.minimum != nil && n < *f.minimum) || (f.maximum != nil && n > *f.maximum) {
			return nil, false, fmt.Errorf("%s is not between %s and %s", line, bound(f.minimum), bound(f.maximum))
		}
		return n, true, nil
	}
	if n := len([]rune(line)); (f.minLength != nil && n < *f.minLength) || (f.maxLength != nil && n > *f.maxLength) {
		return nil, false, fmt.Errorf("%d characters: want %s to %s", n, intBound(f.minLength), intBound(f.maxLength))
	}
	return line, true, nil
}

func intBound(v *int) string {
	if v == nil {
		return "any"
	}
	return strconv.Itoa(*v)
}

// streamCall is one message of ExecuteToolStream, or its end.
type streamCall struct {
	call *nexusv1.ToolCall
	err  error
}

// callQuestions are the questions of one nexus tools run call.
type callQuestions struct {
	e     *env
	c     nexusv1.CoreFrameworkClient
	ctx   context.Context
	mode  string
	lines <-chan string // stdin, read once there is a question to ask
	asks  []*question   // the first is being asked
}

// answers is where the answers to the question being asked come from;
// nil when none is asked.
func (q *callQuestions) answers() <-chan string {
	if len(q.asks) == 0 {
		return nil
	}
	return q.lines
}

// handle takes a question of the call, or its withdrawal.
func (q *callQuestions) handle(call *nexusv1.ToolCall, el *nexusv1.Elicitation) {
	w := q.e.stderr
	if el.GetWithdrawn() {
		for i, a := range q.asks {
			if a.id == el.GetRequestId() {
				q.asks = slices.Delete(q.asks, i, i+1)
				if i == 0 {
					fmt.Fprintf(w, "\n(MCP server %s's question was withdrawn)\n", inert.Line(el.GetServer()))
					if len(q.asks) > 0 {
						q.asks[0].show(w)
					}
				}
				break
			}
		}
		return
	}
	label := fmt.Sprintf("the call %s of %s", call.GetToolCallId(), toolLabel(call))
	server, asked := inert.Line(el.GetServer()), inert.Line(firstLineOf(el.GetMessage()))
	switch q.mode {
	case elicitDecline:
		fmt.Fprintf(w, "MCP server %s asked \"%s\": declined (--elicit decline)\n", server, asked)
		q.answer(el.GetRequestId(), "decline", "")
		return
	case elicitDefaults:
		if el.GetMode() == "url" {
			fmt.Fprintf(w, "MCP server %s asked to go to %s: declined (--elicit accept-defaults)\n", server, inert.Line(el.GetUrl()))
			q.answer(el.GetRequestId(), "decline", "")
			return
		}
		if content, err := q.answer(el.GetRequestId(), "accept", "{}"); err != nil {
			fmt.Fprintf(w, "MCP server %s asked \"%s\": its form cannot be accepted with the defaults (%s): declined\n",
				server, asked, errorMessage(q.ctx, err))
			q.answer(el.GetRequestId(), "decline", "")
		} else {
			fmt.Fprintf(w, "MCP server %s asked \"%s\": accepted with the defaults %s\n", server, asked, inert.Line(content))
		}
		return
	}
	a, err := newQuestion(el.GetRequestId(), el.GetServer(), label, el.GetMode(), el.GetMessage(), json.RawMessage(el.GetRequestedSchemaJson()), el.GetUrl())
	if err != nil {
		fmt.Fprintf(w, "MCP server %s asked a question that cannot be shown (%s): declined\n", server, inert.Line(err.Error()))
		q.answer(el.GetRequestId(), "decline", "")
		return
	}
	if q.lines == nil {
		q.lines = readLines(q.e.stdin)
	}
	q.asks = append(q.asks, a)
	if len(q.asks) == 1 {
		a.show(w)
	}
}

// feed takes a line for the question being asked, and sends its answer
// once it has one.
func (q *callQuestions) feed(line string, eof bool) {
	w := q.e.stderr
	a := q.asks[0]
	a.feed(line, eof, w)
	if eof {
		q.lines = nil // nothing more to read: the other questions are declined too
	}
	if !a.done() {
		return
	}
	if _, err := q.answer(a.id, a.action, a.contentJSON()); err != nil && status.Code(err) == codes.InvalidArgument && !eof {
		fmt.Fprintf(w, "  the answer was refused: %s\n", errorMessage(q.ctx, err))
		a.step, a.action, a.content = -1, "", map[string]any{}
		a.prompt(w)
		return
	} else if err != nil {
		fmt.Fprintf(w, "  the answer was not taken: %s\n", errorMessage(q.ctx, err))
	}
	q.asks = q.asks[1:]
	if eof {
		for _, b := range q.asks {
			q.answer(b.id, "decline", "")
		}
		q.asks = nil
	}
	if len(q.asks) > 0 {
		q.asks[0].show(w)
	}
}

// answer sends an answer and returns the content the server gets.
func (q *callQuestions) answer(id, action, content string) (string, error) {
	resp, err := q.c.AnswerElicitation(q.ctx, &nexusv1.AnswerElicitationRequest{RequestId: id, Action: action, ContentJson: content})
	return resp.GetContentJson(), err
}
