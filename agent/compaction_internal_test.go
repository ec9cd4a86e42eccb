package agent

import (
	"encoding/json"
	"testing"

	"github.com/nexuscocreate/nexus/llm"
)

func TestCompactLimit(t *testing.T) {
	for _, c := range []struct {
		share  float64
		window int
		want   int
	}{
		{0.8, 200000, 160000},
		{0.5, 16384, 8192},
		{1, 1000, 1000},
		{0.001, 100, 1}, // never 0: a tiny share still compacts
		{0, 200000, 0},  // off
		{0.8, 0, 0},     // no contextWindow: nothing to measure against
		{-1, 1000, 0},
	} {
		if got := compactLimit(c.share, c.window); got != c.want {
			t.Errorf("compactLimit(%v, %d) = %d, want %d", c.share, c.window, got, c.want)
		}
	}
}

// TestRequestTokens: the system prompt, the tools and the messages, each
// as the history counts them (a provider's count where it gave one).
func TestRequestTokens(t *testing.T) {
	req := &llm.Request{
		System:   string(make([]byte, 400)),                                                                        // 100 + 4
		Tools:    []llm.Tool{{Name: "read", Description: string(make([]byte, 96)), Schema: json.RawMessage(`{}`)}}, // (4+96+2+3)/4 = 26
		Messages: []Message{{Role: RoleUser, Text: string(make([]byte, 40))}, {Role: RoleAssistant, Text: "x", Tokens: 7}},
	}
	if got, want := RequestTokens(req), 104+26+(10+4)+7; got != want {
		t.Errorf("RequestTokens = %d, want %d", got, want)
	}
}

// TestHistoryOlderAndPromptTurns: what a compaction that keeps the newest
// turns would replace, and the turns of the person's last prompt.
func TestHistoryOlderAndPromptTurns(t *testing.T) {
	h, err := NewHistory(HistoryOptions{KeepSystem: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Message{
		{Role: RoleSystem, Text: "be brief"},
		user("one"), {Role: RoleAssistant, Text: "a"},
		user("two"), calls("c1"), result("c1", "x"), {Role: RoleAssistant, Text: "b"},
	} {
		if _, err := h.Add(m); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.PromptTurns(); got != 3 { // "two", the call with its result, "b"
		t.Errorf("PromptTurns = %d, want 3", got)
	}
	msgs, tokens := h.Older(3)
	if want := Tokens(user("one")) + Tokens(Message{Role: RoleAssistant, Text: "a"}); msgs != 2 || tokens != want {
		t.Errorf("Older(3) = %d messages, %d tokens; want 2, %d (the system message is kept, not counted)", msgs, tokens, want)
	}
	if msgs, _ := h.Older(5); msgs != 0 {
		t.Errorf("Older(5) = %d messages, want 0", msgs)
	}
	if n := h.DropTo(0, h.PromptTurns()); n != 2 || h.Len() != 5 {
		t.Errorf("DropTo(0, 3) dropped %d messages, left %d; want 2, and the system message and the prompt's turns left", n, h.Len())
	}
	if n := h.DropTo(0, 1); n != 3 || h.Len() != 2 {
		t.Errorf("DropTo(0, 1) dropped %d messages, left %d; want 3, and the system message and the newest turn left", n, h.Len())
	}
}

func TestCompactionString(t *testing.T) {
	for _, c := range []struct {
		c    Compaction
		want string
	}{
		{Compaction{Trigger: CompactManual, Messages: 14, TokensBefore: 38000, TokensAfter: 6150},
			"Compacted 14 messages: 38k → 6.2k tokens."},
		{Compaction{Trigger: CompactAuto, Messages: 1, TokensBefore: 900, TokensAfter: 300, Limit: 800},
			"Compacted 1 message: 900 → 300 tokens (the request passed the limit of 800 tokens, context.autoCompact of the window)."},
		{Compaction{Trigger: CompactAuto, Messages: 4, Dropped: 2, TokensBefore: 900, TokensAfter: 300, Limit: 800},
			"Compacted 4 messages, then dropped the 2 oldest messages: 900 → 300 tokens (the request passed the limit of 800 tokens, context.autoCompact of the window)."},
		{Compaction{Trigger: CompactAuto, Dropped: 3, Error: "boom", TokensBefore: 900, TokensAfter: 300, Limit: 800},
			"The summary failed (boom); dropped the 3 oldest messages instead: 900 → 300 tokens (the request passed the limit of 800 tokens, context.autoCompact of the window)."},
	} {
		if got := c.c.String(); got != c.want {
			t.Errorf("String() =\n%s\nwant\n%s", got, c.want)
		}
	}
}
