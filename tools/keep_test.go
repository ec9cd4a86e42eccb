package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nexuscocreate/nexus/events"
)

func TestKeepJSON(t *testing.T) {
	for _, c := range []struct {
		name, text string
		limit      int
		want       string // the kept head, decoded
	}{
		{"fits", `{"a":1}`, 7, `{"a":1}`},
		{"ascii", `{"text":"hello"}`, 10, `{"text`},
		{"quotes take two bytes", `""""""""""`, 6, `""`},
		{"a control character takes six", "\x01\x02\x03\x04\x05\x06\x07\x08\x0b", 8, "\x01"},
		{"no half rune", "éééé", 7, "éé"},
		{"bad UTF-8 is replaced", "a\xffbcccccccc", 10, "a\ufffdb"},
		{"line separators are escaped", "a\u2028bbbbbbbbb", 9, "a\u2028"},
		{"nothing fits but the quotes", `{"a":1}`, 2, ``},
	} {
		t.Run(c.name, func(t *testing.T) {
			kept, cut := keepJSON(json.RawMessage(c.text), c.limit)
			if len(kept) > c.limit || !json.Valid(kept) {
				t.Fatalf("kept %q: %d bytes for a limit of %d, valid %v", kept, len(kept), c.limit, json.Valid(kept))
			}
			if !cut {
				if string(kept) != c.want {
					t.Errorf("kept %q, want %q uncut", kept, c.want)
				}
				return
			}
			var head string
			if err := json.Unmarshal(kept, &head); err != nil || head != c.want {
				t.Errorf("head %q (%v), want %q", head, err, c.want)
			}
		})
	}
}

func TestKeepText(t *testing.T) {
	if got := keepText("short", 10); got != "short" {
		t.Errorf("short text changed: %q", got)
	}
	long := strings.Repeat("é", 1000) // 2,000 bytes
	got := keepText(long, 100)
	if len(got) > 100 || !utf8.ValidString(got) || !strings.HasSuffix(got, "… (cut: 2.0 KiB in all)") || !strings.HasPrefix(got, "éé") {
		t.Errorf("cut text %q (%d bytes)", got, len(got))
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int]string{512: "512 bytes", 64 << 10: "64.0 KiB", 30 << 20: "30.0 MiB", 3 << 29: "1.5 GiB"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// bigEcho echoes its text and returns it twice, so that both the arguments
// and the result of a call can be made large.
var bigEcho = Tool{
	Definition: Definition{Name: "big_echo", Risk: RiskLow,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
	Handler: func(_ context.Context, _ *Invocation, args json.RawMessage) (json.RawMessage, error) {
		var a struct{ Text string }
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		return json.Marshal(a.Text + a.Text)
	},
}

func TestCallsKeptAreCut(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	bus := events.New()
	m, err := NewManager(Options{Bus: bus, Gate: allowAll, AuditFile: audit})
	if err != nil {
		t.Fatal(err)
	}
	m.Register(bigEcho)
	sub := bus.Subscribe(nil, 100)
	defer sub.Close()

	text := strings.Repeat("ab\"c", 100<<10) // 400 KiB, with quotes to escape
	args, _ := json.Marshal(map[string]string{"text": text})
	c := m.Execute(context.Background(), ExecuteRequest{ToolName: "big_echo", Arguments: args})
	if c.Status != StatusCompleted {
		t.Fatalf("call: %+v", c.Error)
	}
	// The caller gets the whole result.
	var res string
	if err := json.Unmarshal(c.ResultJSON, &res); err != nil || res != text+text || c.ResultTruncated {
		t.Fatalf("returned result: %d bytes, truncated %v, %v", len(res), c.ResultTruncated, err)
	}

	check := func(where string, k Call) {
		t.Helper()
		if !k.ArgumentsTruncated || k.ArgumentsSize != len(args) || len(k.ArgumentsJSON) > KeptSize {
			t.Errorf("%s: arguments truncated %v, size %d (want %d), %d bytes kept", where, k.ArgumentsTruncated, k.ArgumentsSize, len(args), len(k.ArgumentsJSON))
		}
		var head string
		if err := json.Unmarshal(k.ArgumentsJSON, &head); err != nil || !strings.HasPrefix(string(args), head) || len(head) < KeptSize/2 {
			t.Errorf("%s: kept arguments are not a JSON string of their head: %.40q… %v", where, k.ArgumentsJSON, err)
		}
		if k.Status == StatusCompleted && where != "audit" { // the audit keeps the result's size only
			if !k.ResultTruncated || k.ResultSize != len(c.ResultJSON) || len(k.ResultJSON) > KeptSize || !json.Valid(k.ResultJSON) {
				t.Errorf("%s: result truncated %v, size %d (want %d), %d bytes kept", where, k.ResultTruncated, k.ResultSize, len(c.ResultJSON), len(k.ResultJSON))
			}
		}
	}
	got, ok := m.Get(c.ID)
	if !ok {
		t.Fatal("the call is not kept")
	}
	check("ring", got)
	check("Calls", m.Calls(CallFilter{})[0])
	for n := 0; n < 3; n++ { // initiated, running, completed
		check("event", (<-sub.C).(Call))
	}

	m.Close()
	f, err := os.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() {
		t.Fatal("no audit line")
	}
	if len(sc.Bytes()) > KeptSize+1024 {
		t.Errorf("audit line of %d bytes", len(sc.Bytes()))
	}
	var line struct {
		Call
		ResultBytes int `json:"resultBytes"`
	}
	if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line.ResultBytes != len(c.ResultJSON) || line.ResultJSON != nil {
		t.Errorf("audit line: result %d bytes (want %d), result kept %d bytes, %v", line.ResultBytes, len(c.ResultJSON), len(line.ResultJSON), err)
	}
	check("audit", line.Call)
}

func TestArgumentsOverTheLimitAreRefused(t *testing.T) {
	ran := false
	tool := bigEcho
	tool.Handler = func(context.Context, *Invocation, json.RawMessage) (json.RawMessage, error) {
		ran = true
		return json.RawMessage(`{}`), nil
	}
	m, err := NewManager(Options{Gate: allowAll, MaxArguments: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Register(tool)
	args := json.RawMessage(`{"text":"` + strings.Repeat("x", 6<<20) + `"}`)
	c := m.Execute(context.Background(), ExecuteRequest{ToolName: "big_echo", Arguments: args})
	want := "arguments are 6.0 MiB, over the limit of 4.0 MiB (tools.maxArgumentsSize)"
	if c.Status != StatusError || c.Error.Code != CodeInvalidArguments || c.Error.Message != want || ran {
		t.Errorf("call: %+v, ran %v; want %s", c.Error, ran, want)
	}
	if !c.ArgumentsTruncated || c.ArgumentsSize != len(args) || len(c.ArgumentsJSON) > KeptSize {
		t.Errorf("refused call keeps %d bytes of arguments (truncated %v, size %d)", len(c.ArgumentsJSON), c.ArgumentsTruncated, c.ArgumentsSize)
	}
	// Not valid JSON either, but the size decides first.
	c = m.Execute(context.Background(), ExecuteRequest{ToolName: "big_echo", Arguments: json.RawMessage(strings.Repeat("{", 5<<20))})
	if c.Error == nil || !strings.HasPrefix(c.Error.Message, "arguments are 5.0 MiB") {
		t.Errorf("invalid JSON over the limit: %+v", c.Error)
	}
	// A name or an id over 1 KiB is refused, and kept cut.
	long := strings.Repeat("t", 5000)
	for _, req := range []ExecuteRequest{{ToolName: long}, {ToolName: "big_echo", ServerName: long},
		{ToolName: "big_echo", TaskID: long}, {ToolName: "big_echo", RequestID: long}} {
		c := m.Execute(context.Background(), req)
		if c.Error == nil || c.Error.Code != CodeInvalidArguments || !strings.Contains(c.Error.Message, "4.9 KiB, over the limit of 1.0 KiB") {
			t.Errorf("%+v", c.Error)
		}
		if len(c.ToolName)+len(c.ServerName)+len(c.TaskID)+len(c.RequestID) > 2<<10 {
			t.Errorf("refused call keeps its long name or id")
		}
	}
}

func TestRingIsBoundedInBytes(t *testing.T) {
	m, err := NewManager(Options{Gate: allowAll, Recent: 100, RecentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Register(bigEcho)
	args, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 100<<10)})
	var last string
	for range 50 {
		last = m.Execute(context.Background(), ExecuteRequest{ToolName: "big_echo", Arguments: args}).ID
	}
	calls := m.Calls(CallFilter{})
	kept := 0
	for _, c := range calls {
		kept += keptBytes(&c)
	}
	// Each call keeps 64 KiB of arguments and 64 KiB of result.
	if kept > 1<<20 || len(calls) < 6 || len(calls) > 8 || calls[0].ID != last {
		t.Errorf("ring keeps %d calls, %d bytes; newest %s (want %s)", len(calls), kept, calls[0].ID, last)
	}
	// Small calls fill it to its count.
	for range 150 {
		m.Execute(context.Background(), ExecuteRequest{ToolName: "big_echo", Arguments: json.RawMessage(`{"text":"x"}`)})
	}
	if n := len(m.Calls(CallFilter{})); n != 100 {
		t.Errorf("ring keeps %d small calls, want 100", n)
	}
	if _, ok := m.Get(""); ok {
		t.Error("Get of an empty id found a call")
	}
}

func TestStripped(t *testing.T) {
	c := Call{ArgumentsJSON: json.RawMessage(`{"a":1}`), ResultJSON: json.RawMessage(`"x"`), ResultTruncated: true, ResultSize: 1 << 20}
	s := c.Stripped()
	if string(s.ArgumentsJSON) != `""` || !s.ArgumentsTruncated || s.ArgumentsSize != 7 ||
		string(s.ResultJSON) != `""` || !s.ResultTruncated || s.ResultSize != 1<<20 {
		t.Errorf("stripped: %+v", s)
	}
	if e := (Call{}).Stripped(); e.ArgumentsTruncated || e.ResultTruncated {
		t.Errorf("an empty call stripped: %+v", e)
	}
}

func TestICERCKept(t *testing.T) {
	details := make([]string, 100)
	for i := range details {
		details[i] = strings.Repeat("d", 2<<10)
	}
	r := keepICERC(ICERC{Command: strings.Repeat("c", 1<<20), Risk: RiskAssessment{Details: details}})
	n := len(r.Command)
	for _, d := range r.Risk.Details {
		n += len(d)
	}
	if len(r.Command) > KeptSize || n > 2*KeptSize+100 || !strings.HasSuffix(r.Risk.Details[len(r.Risk.Details)-1], "more details cut)") {
		t.Errorf("kept ICERC: command %d bytes, %d details, %d bytes in all", len(r.Command), len(r.Risk.Details), n)
	}
}
