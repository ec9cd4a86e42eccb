package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"

	"github.com/nexuscocreate/nexus/internal/inert"
	"github.com/nexuscocreate/nexus/tools"
)

// ICERC is the record shown to the person when the policy asks: intent,
// command, expected outcome, risk. It is the tools package's type, so the
// manager puts it on the call as is.
type ICERC = tools.ICERC

// RiskAssessment is the R of ICERC: level, scope and the reasons for them.
type RiskAssessment = tools.RiskAssessment

// maxArgString is how many characters of one string argument the generic
// rendering of a call shows.
const maxArgString = 200

// BuildICERC builds the record for a call.
//
// Intent is the caller's, or "(no intent given)". Command is Nexus's own
// rendering of the call, never the caller's words: the command line for
// execute_command (an argv joined with shell quoting); "write_file PATH (N
// bytes)", "edit_file PATH (replace N bytes with M bytes)", "read_file
// PATH lines A-B" and "list_directory PATH (recursive)" for those core
// tools; otherwise the tool name ("server/tool" for MCP tools) and its
// arguments as compact JSON with strings longer than 200 characters cut.
// Command is inert (package inert): a word with a control, bidi or format
// character or invalid UTF-8 is quoted as bash's $'…' would write it, a
// command line keeps its line breaks (each a line of the program: a second
// command cannot hide behind a carriage return or an escape sequence) and
// shows any other such character escaped. ExpectedOutcome is the caller's,
// or a default from the tool's kind; Intent and ExpectedOutcome are kept
// as the caller wrote them, for each surface to show inert.
//
// The risk level is the tool's own (a risk the registry did not set is
// high). For execute_command it is raised to high by any of: a command
// line that does not parse, several commands, pipes, redirections,
// background jobs, subshells, command or process substitution, expansions,
// globs, control flow, variable assignments, an env argument, sudo and the
// like, rm and the like, nested shells or eval, network programs, and
// curl or wget together with a shell. Details lists each factor found.
//
// Asker names the party whose call it is ([Asker]); Always says what an
// "always" answer would remember ([AlwaysText]).
func BuildICERC(req Request, intent, expectedOutcome string) ICERC {
	if strings.TrimSpace(intent) == "" {
		intent = "(no intent given)"
	}
	if strings.TrimSpace(expectedOutcome) == "" {
		expectedOutcome = defaultOutcome(req.Tool)
	}
	risk := assessRisk(req)
	if isSampling(req.Tool) {
		risk = samplingRisk(req, RiskAssessment{Level: risk.Level})
	}
	return ICERC{
		Intent:          intent,
		Command:         renderCall(req),
		ExpectedOutcome: expectedOutcome,
		Risk:            risk,
		Asker:           Asker(req),
		Always:          AlwaysText(req),
	}
}

// renderCall is Nexus's rendering of a call for the person, inert.
func renderCall(req Request) string {
	return inert.Text(renderArgs(req))
}

func renderArgs(req Request) string {
	d := req.Tool
	if isSampling(d) {
		if s, ok := renderSampling(req); ok {
			return s
		}
	}
	if isWeb(d) {
		if s, ok := renderWeb(req); ok {
			return s
		}
	}
	if d.ServerName == "" {
		switch d.Name {
		case executeCommand:
			if s, ok := renderCommand(req.Args); ok {
				return s
			}
		case "write_file":
			var a struct{ Path, Content string }
			if json.Unmarshal(req.Args, &a) == nil && a.Path != "" {
				return fmt.Sprintf("write_file %s (%d bytes)", ShellWord(a.Path), len(a.Content))
			}
		case "edit_file":
			var a struct{ Path, OldText, NewText string }
			if json.Unmarshal(req.Args, &a) == nil && a.Path != "" {
				return fmt.Sprintf("edit_file %s (replace %d bytes with %d bytes)", ShellWord(a.Path), len(a.OldText), len(a.NewText))
			}
		case "read_file":
			var a struct {
				Path               string
				StartLine, EndLine *int
			}
			if json.Unmarshal(req.Args, &a) == nil && a.Path != "" {
				s := "read_file " + ShellWord(a.Path)
				switch {
				case a.StartLine != nil && a.EndLine != nil:
					s += fmt.Sprintf(" lines %d-%d", *a.StartLine, *a.EndLine)
				case a.StartLine != nil:
					s += fmt.Sprintf(" from line %d", *a.StartLine)
				case a.EndLine != nil:
					s += fmt.Sprintf(" to line %d", *a.EndLine)
				}
				return s
			}
		case "list_directory":
			var a struct {
				Path      string
				Recursive bool
			}
			if json.Unmarshal(req.Args, &a) == nil && a.Path != "" {
				s := "list_directory " + ShellWord(a.Path)
				if a.Recursive {
					s += " (recursive)"
				}
				return s
			}
		}
	}
	return inert.Line(displayName(d)) + " " + inert.Line(compactArgs(req.Args))
}

// renderCommand renders the execute_command arguments: a command line as
// written, trimmed (its line breaks kept: they separate commands), or an
// argv as one line of quoted words. ok is false when the arguments are
// not exactly one of the two, or it is empty.
func renderCommand(raw json.RawMessage) (s string, ok bool) {
	var a struct {
		Command *string  `json:"command"`
		Argv    []string `json:"argv"`
	}
	if json.Unmarshal(raw, &a) != nil || (a.Command != nil) == (a.Argv != nil) {
		return "", false
	}
	if a.Command != nil {
		lines := strings.Split(strings.TrimSpace(*a.Command), "\n")
		for i, l := range lines {
			lines[i] = inert.Line(l) // a carriage return or tab too
		}
		s = strings.Join(lines, "\n")
		return s, s != ""
	}
	q := make([]string, len(a.Argv))
	for i, w := range a.Argv {
		q[i] = ShellWord(w)
	}
	return strings.Join(q, " "), len(q) > 0
}

// ShellWord quotes a word for the shell as the person should read it: a
// word with a character that package inert escapes (a line break
// included) is quoted as bash's $'…', which names each such character.
func ShellWord(w string) string {
	if inert.Clean(w, false) {
		return shellQuote(w)
	}
	if q, err := syntax.Quote(w, syntax.LangBash); err == nil {
		return q
	}
	return "'" + inert.Line(w) + "'" // a NUL: no shell word holds it
}

// compactArgs renders arguments as compact JSON with sorted keys and long
// strings cut.
func compactArgs(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return cut(string(raw))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(cutStrings(v)); err != nil {
		return cut(string(raw))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func cutStrings(v any) any {
	switch v := v.(type) {
	case string:
		return cut(v)
	case []any:
		for i := range v {
			v[i] = cutStrings(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = cutStrings(v[k])
		}
	}
	return v
}

func cut(s string) string {
	if utf8.RuneCountInString(s) <= maxArgString {
		return s
	}
	n := 0
	for i := range s {
		if n == maxArgString {
			return s[:i] + fmt.Sprintf("…(%d bytes)", len(s))
		}
		n++
	}
	return s
}

func defaultOutcome(d tools.Definition) string {
	if d.ServerName != "" {
		what := map[tools.Kind]string{
			tools.KindRead:    "reads data; changes nothing",
			tools.KindEdit:    "modifies data",
			tools.KindDelete:  "deletes data",
			tools.KindMove:    "moves or renames data",
			tools.KindSearch:  "searches; changes nothing",
			tools.KindExecute: "runs a command or program",
			tools.KindFetch:   "fetches data from the network",
		}[d.Kind]
		if what == "" {
			what = "runs the tool"
		}
		return fmt.Sprintf("MCP server %q: %s", d.ServerName, what)
	}
	switch d.Kind {
	case tools.KindRead:
		return "reads files in the workspace; changes nothing"
	case tools.KindEdit:
		return "modifies files in the workspace"
	case tools.KindDelete:
		return "deletes files in the workspace"
	case tools.KindMove:
		return "moves or renames files in the workspace"
	case tools.KindSearch:
		return "searches the workspace; changes nothing"
	case tools.KindExecute:
		return "runs a command; it can change anything the command can reach"
	case tools.KindFetch:
		return "fetches data from the network"
	}
	return "runs the tool"
}

func assessRisk(req Request) RiskAssessment {
	d := req.Tool
	r := RiskAssessment{Level: d.Risk, Scope: "workspace"}
	switch d.Risk {
	case tools.RiskLow, tools.RiskMedium, tools.RiskHigh:
	default:
		r.Level = tools.RiskHigh
		r.Details = append(r.Details, fmt.Sprintf("risk %q is not low, medium or high: treated as high", d.Risk))
	}

	switch {
	case isExecuteCommand(d):
		c := parseArgs(req.Args)
		r.Scope = "shell command in the workspace root"
		if c.cwd != "" {
			r.Scope = "shell command in " + c.cwd
		}
		var raise []string
		if c.err != nil {
			raise = append(raise, c.err.Error())
		}
		raise = append(raise, c.factors...)
		if len(raise) > 0 {
			r.Level = tools.RiskHigh
		}
		r.Details = append(r.Details, raise...)
		if len(r.Details) == 0 {
			r.Details = append(r.Details, "runs one program with its arguments")
		}
	case isWeb(d):
		webRisk(req, &r)
	case d.ServerName != "":
		r.Scope = "MCP server " + d.ServerName
		r.Details = append(r.Details, fmt.Sprintf("runs in MCP server %q, outside Nexus's workspace confinement", d.ServerName))
	default:
		var a struct{ Path string }
		_ = json.Unmarshal(req.Args, &a)
		if a.Path != "" {
			switch d.Kind {
			case tools.KindEdit, tools.KindDelete, tools.KindMove:
				r.Scope = "workspace files: " + a.Path
			default:
				r.Scope = "workspace: " + a.Path
			}
		}
	}

	if d.ServerName != "" {
		if d.Kind != "" {
			r.Details = append(r.Details, fmt.Sprintf("the registry classes it as %s", d.Kind))
		}
		return r
	}
	switch d.Kind {
	case tools.KindEdit:
		r.Details = append(r.Details, "writes files")
	case tools.KindDelete:
		r.Details = append(r.Details, "deletes files")
	case tools.KindMove:
		r.Details = append(r.Details, "moves or renames files")
	case tools.KindFetch:
		r.Details = append(r.Details, "reaches the network")
	}
	return r
}
