package llm_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/llm"
)

// TestImagesAndStop: an image beside a user message's text and the stop
// sequences reach each wire API in its own form (an MCP server's sampling
// request carries them).
func TestImagesAndStop(t *testing.T) {
	png := []byte("\x89PNG fake")
	const b64 = "iVBORyBmYWtl"
	req := &llm.Request{
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "What is this?", Images: []llm.Image{{MIMEType: "image/png", Data: png}}}},
		Stop:     []string{"END"},
	}
	body := func(raw []byte) string {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	for _, c := range []struct {
		name string
		run  func() string
		want []string
	}{
		{"chat", func() string {
			f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				writeSSE(w, sseEvents(recording(t, "llama-chat-text.sse"))...)
			})
			collect(t, f.provider(t, compatible(llm.APIChat), nil), req)
			b, _ := json.Marshal(f.request(0).body)
			return string(b)
		}, []string{`"image_url":{"url":"data:image/png;base64,` + b64 + `"}`, `{"text":"What is this?","type":"text"}`, `"stop":["END"]`}},
		{"responses", func() string {
			f := newFake(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				writeSSE(w, sseEvents(recording(t, "llama-responses-text.sse"))...)
			})
			collect(t, f.provider(t, compatible(llm.APIResponses), nil), req)
			b, _ := json.Marshal(f.request(0).body)
			return string(b)
		}, []string{`"image_url":"data:image/png;base64,` + b64 + `"`, `"type":"input_image"`, `{"text":"What is this?","type":"input_text"}`}},
		{"anthropic", func() string {
			r := newReplay(t, answer{file: "anthropic/llama-max-tokens.sse"})
			collect(t, anthropicOn(t, r, nil, llm.Profile{}), req)
			return body(r.requests()[0].body)
		}, []string{`{"source":{"data":"` + b64 + `","media_type":"image/png","type":"base64"},"type":"image"}`, `"stop_sequences":["END"]`}},
		{"gemini", func() string {
			r := newReplay(t, answer{file: "gemini/stream-max-tokens.sse"})
			collect(t, geminiOn(t, r, nil, llm.Profile{}), req)
			return body(r.requests()[0].body)
		}, []string{`{"inlineData":{"data":"` + b64 + `","mimeType":"image/png"}}`, `"stopSequences":["END"]`}},
	} {
		got := c.run()
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: body %s\nlacks %s", c.name, got, w)
			}
		}
	}
}

// TestTakesImages: a profile says whether its model takes images; unset,
// the hosted providers' models do and a server at a baseURL is assumed
// not to.
func TestTakesImages(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		p    llm.Profile
		want bool
	}{
		{llm.Profile{Provider: llm.ProviderAnthropic}, true},
		{llm.Profile{Provider: llm.ProviderGemini}, true},
		{llm.Profile{Provider: llm.ProviderOpenAI}, true},
		{llm.Profile{Provider: llm.ProviderOpenAI, BaseURL: "http://proxy/v1"}, false},
		{llm.Profile{Provider: llm.ProviderOpenAICompatible, BaseURL: "http://127.0.0.1:8080/v1"}, false},
		{llm.Profile{Provider: llm.ProviderOpenAICompatible, BaseURL: "http://127.0.0.1:8080/v1", Images: &yes}, true},
		{llm.Profile{Provider: llm.ProviderAnthropic, Images: &no}, false},
	} {
		if got := c.p.TakesImages(); got != c.want {
			t.Errorf("%s at %q (images %v): TakesImages = %v, want %v", c.p.Provider, c.p.BaseURL, c.p.Images, got, c.want)
		}
	}
}
