package llm

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
)

// adapter makes a Provider of one provider and API; each adapter's file
// registers its own in init.
type adapter func(p Profile, key string, opts Options) (Provider, error)

var adapters = map[string]adapter{} // by "provider/api"

func register(provider, api string, a adapter) { adapters[provider+"/"+api] = a }

// defaultAPI is the API of a provider when the profile names none.
func defaultAPI(provider string) string {
	switch provider {
	case ProviderOpenAI:
		return APIResponses
	case ProviderOpenAICompatible:
		return APIChat
	case ProviderAnthropic:
		return APIMessages
	case ProviderGemini:
		return "generateContent"
	}
	return ""
}

// DefaultKeyEnv is the variable a provider's key is read from when the
// profile names none; "" when the provider needs no key.
func DefaultKeyEnv(provider string) string {
	switch provider {
	case ProviderOpenAI:
		return "OPENAI_API_KEY"
	case ProviderAnthropic:
		return "ANTHROPIC_API_KEY"
	case ProviderGemini:
		return "GEMINI_API_KEY"
	}
	return ""
}

// New returns the provider of a profile. A key the profile needs and the
// environment lacks is an *Error of kind KindMissingKey naming the
// variable to set.
func New(p Profile, opts Options) (Provider, error) {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	opts.HTTPClient = replayable(opts.HTTPClient)
	if opts.Getenv == nil {
		opts.Getenv = os.LookupEnv
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if p.Model == "" {
		return nil, &Error{Kind: KindConfig, Provider: p.Provider, Message: fmt.Sprintf("profile %q names no model", p.Name)}
	}
	api := p.API
	if api == "" {
		api = defaultAPI(p.Provider)
	}
	a, ok := adapters[p.Provider+"/"+api]
	if !ok {
		var known []string
		for k := range adapters {
			known = append(known, k)
		}
		sort.Strings(known)
		return nil, &Error{Kind: KindConfig, Provider: p.Provider, Message: fmt.Sprintf("profile %q: no adapter for provider %q with api %q (known: %s)", p.Name, p.Provider, api, strings.Join(known, ", "))}
	}
	if p.Provider == ProviderOpenAICompatible && p.BaseURL == "" {
		return nil, &Error{Kind: KindConfig, Provider: p.Provider, Message: fmt.Sprintf("profile %q: an openai-compatible provider needs a baseURL (for example http://127.0.0.1:11434/v1 for Ollama)", p.Name)}
	}
	p.API = api
	key, err := apiKey(p, opts)
	if err != nil {
		return nil, err
	}
	return a(p, key, opts)
}

// apiKey reads the profile's key from its variable.
func apiKey(p Profile, opts Options) (string, error) {
	env := p.APIKeyEnv
	if env == "" {
		env = DefaultKeyEnv(p.Provider)
	}
	if env == "" {
		return "", nil // an openai-compatible server without a key
	}
	if v, ok := opts.Getenv(env); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), nil
	}
	return "", &Error{Kind: KindMissingKey, Provider: p.Provider,
		Message: fmt.Sprintf("no API key: set %s in the environment nexusd runs in (profile %q; %s.apiKeyEnv names another variable)", env, p.Name, p.Key())}
}

// replayable is c sending each POST with an Idempotency-Key, so that
// net/http sends it again at once, on a new connection, when the
// kept-alive one it went out on was closed by the server before any
// answer. net/http does that only for a request it may repeat, and
// llama-server closes connections after some streams: without the key
// that race was a failed attempt and a backoff. A prompt sent twice costs
// no more than a retry; each request of ours gets its own key.
func replayable(c *http.Client) *http.Client {
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cc := *c
	cc.Transport = idempotencyKey{next}
	return &cc
}

type idempotencyKey struct{ next http.RoundTripper }

func (t idempotencyKey) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.Header.Get("Idempotency-Key") == "" {
		r = r.Clone(r.Context()) // a RoundTripper must not change the request
		r.Header.Set("Idempotency-Key", "nexus-"+rand.Text())
	}
	return t.next.RoundTrip(r)
}
