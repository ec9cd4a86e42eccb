package llm

import (
	"log/slog"
	"net/http"
	"time"
)

// The providers of [Profile.Provider].
const (
	ProviderOpenAI           = "openai"
	ProviderAnthropic        = "anthropic"
	ProviderGemini           = "gemini"
	ProviderOpenAICompatible = "openai-compatible"
)

// The wire APIs of [Profile.API].
const (
	// APIResponses is OpenAI's Responses API, the default of "openai".
	APIResponses = "responses"
	// APIChat is Chat Completions, the default of "openai-compatible".
	APIChat = "chat"
	// APIMessages is Anthropic's Messages API: the only one of
	// "anthropic", and one llama-server speaks too.
	APIMessages = "messages"
)

// Profile is one configured model (config llm.profiles.NAME).
type Profile struct {
	Name string
	// ConfigKey is where the profile is written in config.yaml, for
	// messages that name one of its keys; empty is llm.profiles.NAME.
	ConfigKey string
	Provider  string
	// API picks the wire API where a provider has several: "responses" or
	// "chat" for openai and openai-compatible, "messages" for an
	// openai-compatible server that speaks Anthropic's API. Empty is the
	// provider's default.
	API   string
	Model string
	// APIKeyEnv names the environment variable with the key; empty is the
	// provider's usual one (OPENAI_API_KEY, ANTHROPIC_API_KEY,
	// GEMINI_API_KEY); an openai-compatible server needs none.
	APIKeyEnv string
	// BaseURL replaces the provider's endpoint.
	BaseURL         string
	Temperature     *float64
	MaxOutputTokens int
	// ContextWindow is the model's window in tokens; 0 is unknown.
	ContextWindow int
	// Prices are per million tokens, in the currency the config uses.
	Prices Prices
	// ExtraBody is merged into the JSON body of every request (vendor
	// parameters: tool_choice, logit_bias, provider routing).
	ExtraBody map[string]any
	// Images says whether the model takes images with a prompt; nil is
	// the provider's usual answer (see TakesImages).
	Images *bool
}

// Key is where the profile is written in config.yaml: ConfigKey, or
// llm.profiles.NAME.
func (p Profile) Key() string {
	if p.ConfigKey != "" {
		return p.ConfigKey
	}
	return "llm.profiles." + p.Name
}

// TakesImages reports whether the profile's model takes images. Set
// explicitly (llm.profiles.NAME.images) it is that; otherwise the hosted
// providers' current models do (Anthropic, Gemini, OpenAI at its own
// endpoint), and a server of unknown models (openai-compatible, or any
// baseURL) is assumed not to, since a text-only model given an image
// fails the whole request.
func (p Profile) TakesImages() bool {
	if p.Images != nil {
		return *p.Images
	}
	switch p.Provider {
	case ProviderAnthropic, ProviderGemini, ProviderOpenAI:
		return p.BaseURL == ""
	}
	return false
}

// Prices are the price of a million tokens of each kind; zero is unknown.
type Prices struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	Cached float64 `json:"cached,omitempty"`
}

// Cost is what usage cost at these prices, and whether the prices were
// known (false when they are all zero).
func (p Prices) Cost(u Usage) (float64, bool) {
	if p.Input == 0 && p.Output == 0 && p.Cached == 0 {
		return 0, false
	}
	cached := p.Cached
	if cached == 0 {
		cached = p.Input
	}
	in := float64(u.InputTokens-u.CachedTokens)*p.Input + float64(u.CachedTokens)*cached
	return (in + float64(u.OutputTokens)*p.Output) / 1e6, true
}

// RetryPolicy bounds the retries of 429, 529 and 5xx answers.
type RetryPolicy struct {
	// Max is the most retries of one request; default 4, -1 for none.
	Max int
	// Base is the first backoff, doubled each time with jitter; default 500ms.
	Base time.Duration
	// Cap bounds one wait, Retry-After included; default 60s.
	Cap time.Duration
}

// Options are what [New] needs beside the profile. Zero values get defaults.
type Options struct {
	// HTTPClient sends the requests; default a client without timeout
	// (the context bounds a request).
	HTTPClient *http.Client
	// Getenv reads the key's variable; default os.LookupEnv.
	Getenv func(string) (string, bool)
	Retry  RetryPolicy
	Logger *slog.Logger
	// Sleep waits between retries, returning early with ctx's error when
	// it is done; default a timer. Tests replace it.
	Sleep func(ctxDone <-chan struct{}, d time.Duration) error
}
