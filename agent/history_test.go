package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/llm"
)

func user(text string) Message { return Message{Role: RoleUser, Text: text} }

func calls(ids ...string) Message {
	m := Message{Role: RoleAssistant}
	for _, id := range ids {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id, Name: "read_file", Arguments: json.RawMessage(`{"path":"a"}`)})
	}
	return m
}

func result(id, content string) Message {
	return Message{Role: RoleToolResult, Result: &ToolResult{CallID: id, Name: "read_file", Content: content}}
}

func mustHistory(t *testing.T, opts HistoryOptions, msgs ...Message) *History {
	t.Helper()
	h, err := NewHistory(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := h.Add(m); err != nil {
			t.Fatalf("Add(%+v): %v", m, err)
		}
	}
	return h
}

func texts(h *History) string {
	var out []string
	for _, m := range h.Messages() {
		switch {
		case m.Role == RoleToolResult:
			out = append(out, "r:"+m.Result.CallID)
		case len(m.ToolCalls) > 0:
			var ids []string
			for _, c := range m.ToolCalls {
				ids = append(ids, c.ID)
			}
			out = append(out, "a:"+strings.Join(ids, "+"))
		default:
			out = append(out, string(m.Role[0])+":"+m.Text)
		}
	}
	return strings.Join(out, " ")
}

func TestPruning(t *testing.T) {
	sys := Message{Role: RoleSystem, Text: "S"}
	tests := []struct {
		name string
		opts HistoryOptions
		msgs []Message
		want string
	}{
		{"oldest first", HistoryOptions{MaxLength: 3},
			[]Message{user("1"), user("2"), user("3"), user("4"), user("5")}, "u:3 u:4 u:5"},
		{"system kept", HistoryOptions{MaxLength: 3, KeepSystem: true},
			[]Message{sys, user("1"), user("2"), user("3"), user("4")}, "s:S u:3 u:4"},
		{"system not kept", HistoryOptions{MaxLength: 3},
			[]Message{sys, user("1"), user("2"), user("3")}, "u:1 u:2 u:3"},
		{"a call goes with its results", HistoryOptions{MaxLength: 3},
			[]Message{user("1"), calls("c1", "c2"), result("c1", "x"), result("c2", "y"), user("2")}, "u:2"},
		{"the newest turn stays whole", HistoryOptions{MaxLength: 2},
			[]Message{user("1"), calls("c1", "c2", "c3"), result("c1", "x"), result("c2", "y"), result("c3", "z")}, "a:c1+c2+c3 r:c1 r:c2 r:c3"},
		{"system messages in the middle stay", HistoryOptions{MaxLength: 3, KeepSystem: true},
			[]Message{user("1"), sys, user("2"), user("3"), user("4")}, "s:S u:3 u:4"},
		{"token budget", HistoryOptions{Strategy: PruneTokenBudget, TokenBudget: 25},
			[]Message{{Role: RoleUser, Text: "1", Tokens: 10}, {Role: RoleUser, Text: "2", Tokens: 10}, {Role: RoleUser, Text: "3", Tokens: 10}}, "u:2 u:3"},
		{"token budget, newest turn over it alone", HistoryOptions{Strategy: PruneTokenBudget, TokenBudget: 5},
			[]Message{{Role: RoleUser, Text: "1", Tokens: 10}, {Role: RoleUser, Text: "2", Tokens: 10}}, "u:2"},
		{"none", HistoryOptions{MaxLength: 1, Strategy: PruneNone},
			[]Message{user("1"), user("2")}, "u:1 u:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := mustHistory(t, tt.opts, tt.msgs...)
			if got := texts(h); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			sum := 0
			for _, m := range h.Messages() {
				sum += Tokens(m)
			}
			if sum != h.Tokens() {
				t.Errorf("Tokens() = %d, the messages add up to %d", h.Tokens(), sum)
			}
		})
	}
}

// TestPruningNeverOrphans: whatever the sequence and the limits, every
// tool result in the history follows the assistant message that made its
// call, and the token count is the messages'.
func TestPruningNeverOrphans(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		opts := HistoryOptions{MaxLength: 1 + rng.IntN(8), KeepSystem: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			opts.Strategy, opts.TokenBudget = PruneTokenBudget, 10+rng.IntN(60)
		}
		h := mustHistory(t, opts)
		for i := range 300 {
			switch r := rng.IntN(10); {
			case r == 0:
				h.Add(Message{Role: RoleSystem, Text: "s"})
			case r < 5:
				h.Add(user(strings.Repeat("u", rng.IntN(40))))
			default:
				n := 1 + rng.IntN(3)
				var ids []string
				for k := range n {
					ids = append(ids, fmt.Sprintf("c%d-%d", i, k))
				}
				h.Add(calls(ids...))
				for _, id := range ids {
					if _, err := h.Add(result(id, strings.Repeat("r", rng.IntN(80)))); err != nil {
						t.Fatal(err)
					}
				}
			}
			called := map[string]bool{}
			sum := 0
			for _, m := range h.Messages() {
				sum += Tokens(m)
				for _, c := range m.ToolCalls {
					called[c.ID] = true
				}
				if m.Role == RoleToolResult && !called[m.Result.CallID] {
					t.Fatalf("round %d (%+v): result %s without its call: %s", round, opts, m.Result.CallID, texts(h))
				}
			}
			if sum != h.Tokens() {
				t.Fatalf("round %d: Tokens() = %d, messages %d", round, h.Tokens(), sum)
			}
			if opts.MaxLength > 0 && h.Len() > opts.MaxLength {
				last := turnStart(h.Messages(), h.Len()-1)
				systems := 0
				for _, m := range h.Messages()[:last] {
					if m.Role == RoleSystem {
						systems++
					}
				}
				// Only the newest turn, and kept system messages, may be left.
				if last > 0 && !(opts.KeepSystem && systems == last) {
					t.Fatalf("round %d: %d messages over maxLength %d: %s", round, h.Len(), opts.MaxLength, texts(h))
				}
			}
		}
	}
}

func TestAddErrors(t *testing.T) {
	h := mustHistory(t, HistoryOptions{}, user("1"), calls("c1"))
	if _, err := h.Add(result("c9", "x")); !errors.Is(err, ErrOrphanResult) {
		t.Errorf("a result for no call: %v", err)
	}
	if _, err := h.Add(result("c1", "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Add(result("c1", "x")); !errors.Is(err, ErrOrphanResult) {
		t.Errorf("a second result for one call: %v", err)
	}
	if _, err := h.Add(calls("c2", "c2")); err == nil {
		t.Error("duplicate call ids accepted")
	}
	if _, err := h.Add(Message{Role: "robot"}); err == nil || !strings.Contains(err.Error(), "robot") {
		t.Errorf("unknown role: %v", err)
	}
	for _, opts := range []HistoryOptions{{Strategy: "newest"}, {Strategy: PruneTokenBudget}, {MaxLength: -1}} {
		if _, err := NewHistory(opts); err == nil {
			t.Errorf("NewHistory(%+v) accepted", opts)
		}
	}
}

func TestToolResultCut(t *testing.T) {
	content := "HEAD" + strings.Repeat("é", 2000) + "TAIL"
	h := mustHistory(t, HistoryOptions{MaxToolResult: 200}, calls("c1"))
	m, err := h.Add(result("c1", content))
	if err != nil {
		t.Fatal(err)
	}
	r := m.Result
	if !r.Cut || r.FullSize != len(content) || len(r.Content) > 200 || !strings.HasPrefix(r.Content, "HEAD") ||
		!strings.HasSuffix(r.Content, "TAIL") || !strings.Contains(r.Content, "bytes cut") || !json.Valid([]byte(fmt.Sprintf("%q", r.Content))) {
		t.Errorf("cut result: cut %v, full %d, %d bytes: %q", r.Cut, r.FullSize, len(r.Content), r.Content)
	}
	for _, c := range r.Content {
		if c == '\uFFFD' {
			t.Fatal("the cut split a character")
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	opts := HistoryOptions{MaxLength: 10, KeepSystem: true}
	h := mustHistory(t, opts, Message{Role: RoleSystem, Text: "S"}, user("1"), calls("c1"), result("c1", "x"), Message{Role: RoleAssistant, Text: "done", Tokens: 7})
	data, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := LoadHistory(data, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(h.Messages(), h2.Messages(), func(a, b Message) bool {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		return string(ja) == string(jb)
	}) || h.Tokens() != h2.Tokens() {
		t.Errorf("round trip:\n%s\n%s", texts(h), texts(h2))
	}
	for _, bad := range []string{
		`{"version": 2, "messages": []}`,
		`{"version": 1, "messages": [{"role": "tool_result", "result": {"callId": "x", "name": "n", "content": ""}}]}`,
		`{"version": 1, "messages": [], "extra": 1}`,
	} {
		if _, err := LoadHistory([]byte(bad), opts); err == nil {
			t.Errorf("LoadHistory(%s) accepted", bad)
		}
	}
	if _, err := LoadHistory([]byte(`{"version": 1, "messages": [{"role": "user", "text": "a"}, {"role": "tool_result", "result": {"callId": "x", "name": "n", "content": ""}}]}`), opts); err == nil || !strings.Contains(err.Error(), "message 1") {
		t.Errorf("the error names the message: %v", err)
	}
}

func TestReplaceAndClear(t *testing.T) {
	opts := HistoryOptions{KeepSystem: true}
	h := mustHistory(t, opts, Message{Role: RoleSystem, Text: "S"}, user("1"), calls("c1"), result("c1", "x"), user("2"), Message{Role: RoleAssistant, Text: "3"})
	h.Replace(Message{Role: RoleUser, Text: "summary"}, 2)
	if got := texts(h); got != "s:S u:summary u:2 a:3" {
		t.Errorf("after Replace: %q", got)
	}
	h.Clear()
	if got := texts(h); got != "s:S" {
		t.Errorf("after Clear: %q", got)
	}
}

// TestLongHistory: 100,000 messages through a history of 1,000 keep the
// newest 1,000, system message first.
func TestLongHistory(t *testing.T) {
	h := mustHistory(t, HistoryOptions{MaxLength: 1000, KeepSystem: true}, Message{Role: RoleSystem, Text: "S"})
	for i := range 100_000 {
		h.Add(user(fmt.Sprint(i)))
	}
	msgs := h.Messages()
	if h.Len() != 1000 || msgs[0].Text != "S" || msgs[1].Text != "99001" || msgs[999].Text != "99999" {
		t.Errorf("%d messages: %q %q … %q", h.Len(), msgs[0].Text, msgs[1].Text, msgs[len(msgs)-1].Text)
	}
}

// TestTokensImages: until the provider counts a message, each of its
// images is estimated at imageTokens, beside its text.
func TestTokensImages(t *testing.T) {
	text := Message{Role: RoleUser, Text: "look at this"}
	m := text
	m.Images = []llm.Image{{MIMEType: "image/png", Data: []byte("a")}, {MIMEType: "image/png", Data: []byte("b")}}
	if got, want := Tokens(m), Tokens(text)+2*imageTokens; got != want {
		t.Errorf("Tokens of a message with two images = %d, want %d", got, want)
	}
	if m.Tokens = 7; Tokens(m) != 7 {
		t.Errorf("Tokens of a counted message = %d, want the count 7", Tokens(m))
	}
}
