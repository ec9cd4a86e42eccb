package configschema

import (
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// rule is what the loader (workspace.ParseConfig's check) allows of a key
// beyond its type. TestRulesAgree holds each against the loader.
type rule struct {
	enum     []string
	emptyOK  bool     // an enum's "" is the default (llm's api)
	min, max *float64 // ints and floats; sizes in bytes
	positive bool     // sizes and durations: more than 0
	maxDur   time.Duration
	nonEmpty bool
	// pattern is a regular expression a string matches (RE2 and
	// ECMA-262 alike), and patternDoc says it in words.
	pattern, patternDoc string
	// unique: no two list items have the same value (apps' ids).
	unique bool
	// key names a map's keys in paths: "tools.policy.TOOL".
	key string
	// required are the keys a mapping must have; object adds the rules
	// between its keys, which note says in words.
	required []string
	object   func(s *jsonschema.Schema)
	note     string
}

func (r rule) placeholder() string {
	if r.key != "" {
		return r.key
	}
	return "NAME"
}

func num(f float64) *float64 { return &f }

const gib = 1 << 30

// rules are keyed by Go type and field, as "ToolsConfig.Sandbox"; "[]"
// after it is an element of the list or map.
var rules = map[string]rule{
	"DefinitionsConfig.Root":     {nonEmpty: true},
	"DefinitionsConfig.Debounce": {positive: true, maxDur: 10 * time.Second},

	"RuntimeConfig.Backend":   {enum: []string{"bbolt", "redis"}},
	"RuntimeConfig.Path":      {nonEmpty: true},
	"RuntimeConfig.Prefix":    {nonEmpty: true},
	"RuntimeConfig.CacheSize": {positive: true},
	"Config.Runtime": {
		note: "With backend redis, url is required; cache applies to backend redis only.",
		object: func(s *jsonschema.Schema) {
			s.AllOf = append(s.AllOf,
				&jsonschema.Schema{
					If:   &jsonschema.Schema{Properties: map[string]*jsonschema.Schema{"backend": {Const: constant("redis")}}, Required: []string{"backend"}},
					Then: need("url"),
				},
				&jsonschema.Schema{
					If:   &jsonschema.Schema{Properties: map[string]*jsonschema.Schema{"cache": {Const: constant(true)}}, Required: []string{"cache"}},
					Then: &jsonschema.Schema{Properties: map[string]*jsonschema.Schema{"backend": {Const: constant("redis")}}, Required: []string{"backend"}},
				})
		},
	},

	"Config.Apps[]": {
		required: []string{"id"},
		note:     "id is required; token and tokenFile exclude each other.",
		object: func(s *jsonschema.Schema) {
			s.Not = &jsonschema.Schema{Required: []string{"token", "tokenFile"}}
		},
	},
	"AppConfig.ID": {
		pattern:    "^[a-z0-9][a-z0-9_-]{0,62}$",
		patternDoc: "1 to 63 of a-z, 0-9, _ and -, starting with a letter or digit",
		unique:     true,
	},
	"AppConfig.Certificate": {
		pattern:    `^$|^\s*([sS][hH][aA]256[^=]*=)?:*([0-9A-Fa-f]:*){64}\s*$`,
		patternDoc: "64 hex digits, colons allowed, as openssl prints it",
		unique:     true,
	},

	"ToolsConfig.MaxArgumentsSize": {positive: true},
	"ToolsConfig.Sandbox":          {enum: []string{"read-only", "workspace-write", "off"}},
	"ToolsConfig.Policy":           {key: "TOOL"},
	"ToolsConfig.Policy[]":         {enum: []string{"allow", "ask", "deny"}},

	"MCPConfig.Restart":                 {enum: []string{"always", "on-failure", "never"}},
	"MCPConfig.MaxRestarts":             {min: num(0)},
	"MCPConfig.Separator":               {nonEmpty: true},
	"MCPHTTPConfig.SessionIdleTimeout":  {positive: true, maxDur: 24 * time.Hour},
	"MCPHTTPConfig.MaxSessionsPerToken": {min: num(1), max: num(10000)},
	"MCPSamplingConfig.MaxTokens":       {min: num(0)},
	"MCPConfig.Sampling": {
		note: "profile and every name in profiles are llm profiles; profiles needs profile.",
		object: func(s *jsonschema.Schema) {
			listed := &jsonschema.Schema{Type: "array", MinItems: &one}
			s.AllOf = append(s.AllOf, &jsonschema.Schema{
				If:   &jsonschema.Schema{Properties: map[string]*jsonschema.Schema{"profiles": listed}, Required: []string{"profiles"}},
				Then: need("profile"),
			})
		},
	},

	"Config.LLM": {
		note: "A profile written directly under llm has both provider and model.",
		object: func(s *jsonschema.Schema) {
			// Any key of the profile set directly under llm makes it
			// the profile "default", which needs both.
			set := &jsonschema.Schema{}
			for _, k := range s.PropertyOrder {
				if k != "default" && k != "profiles" {
					set.AnyOf = append(set.AnyOf, &jsonschema.Schema{
						Properties: map[string]*jsonschema.Schema{k: {Not: &jsonschema.Schema{Type: "null"}}},
						Required:   []string{k},
					})
				}
			}
			s.AllOf = append(s.AllOf,
				&jsonschema.Schema{If: set, Then: &jsonschema.Schema{AllOf: []*jsonschema.Schema{need("provider"), need("model")}}},
				compatibleNeedsBaseURL())
		},
	},
	"LLMConfig.Profiles": {
		key: "NAME",
	},
	"LLMConfig.Profiles[]": {
		required: []string{"provider", "model"},
		note:     "provider and model are required; provider openai-compatible needs baseURL.",
		object: func(s *jsonschema.Schema) {
			s.AllOf = append(s.AllOf, compatibleNeedsBaseURL())
		},
	},
	"LLMProfile.Provider":        {enum: []string{"openai", "anthropic", "gemini", "openai-compatible"}},
	"LLMProfile.API":             {enum: []string{"responses", "chat", "messages", "generateContent"}, emptyOK: true},
	"LLMProfile.Model":           {nonEmpty: true},
	"LLMProfile.Temperature":     {min: num(0), max: num(2)},
	"LLMProfile.MaxOutputTokens": {min: num(0)},
	"LLMProfile.ContextWindow":   {min: num(0)},
	"LLMPrices.Input":            {min: num(0)},
	"LLMPrices.Output":           {min: num(0)},
	"LLMPrices.Cached":           {min: num(0)},

	"AgentConfig.MaxSteps":        {min: num(1)},
	"AgentConfig.MaxSubagents":    {min: num(1), max: num(64)},
	"AgentConfig.MaxAnswerSize":   {positive: true, max: num(gib)},
	"AgentConfig.MaxToolCallSize": {positive: true, max: num(gib)},

	"MessagesConfig.MaxLength": {min: num(1)},
	"MessagesConfig.Pruning":   {enum: []string{"oldest-first", "remove_oldest", "token_budget", "none"}},

	"ContextConfig.MaxInstructionsSize": {positive: true, max: num(gib)},
	"ContextConfig.AutoCompact":         {min: num(0), max: num(1)},

	"LogConfig.Level": {enum: []string{"debug", "info", "warn", "error"}},

	"GRPCConfig.TLS": {
		note: "cert and key go together.",
		object: func(s *jsonschema.Schema) {
			s.AllOf = append(s.AllOf,
				&jsonschema.Schema{If: need("cert"), Then: need("key")},
				&jsonschema.Schema{If: need("key"), Then: need("cert")})
		},
	},

	"ACPConfig.Mode":     {enum: []string{"default", "ask", "auto-edit", "read-only"}},
	"ACPConfig.Terminal": {enum: []string{"nexus", "client"}},

	"CheckpointsConfig.MaxFileSize":  {positive: true, max: num(gib)},
	"CheckpointsConfig.MaxStoreSize": {positive: true, max: num(1 << 40)},
	"CheckpointsConfig.MaxFiles":     {min: num(1)},

	"WebConfig.AllowedDomains[]": {
		pattern:    `^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$|^[0-9a-fA-F:.]+$`,
		patternDoc: "a lower-case host name (go.dev), *. and a host name for every host under it (*.python.org), or an IP address",
	},
	"WebConfig.MaxFetchSize":     {positive: true, max: num(gib)},
	"WebConfig.MaxTextSize":      {positive: true, max: num(gib)},
	"WebConfig.Timeout":          {positive: true, maxDur: 10 * time.Minute},
	"WebSearchConfig.Provider":   {enum: []string{"searxng"}, emptyOK: true},
	"WebSearchConfig.MaxResults": {min: num(1), max: num(50)},
	"WebConfig.Search": {
		note: "With a provider, url is required.",
		object: func(s *jsonschema.Schema) {
			s.AllOf = append(s.AllOf, &jsonschema.Schema{If: need("provider"), Then: need("url")})
		},
	},
	"HooksConfig.PreToolUse[]":       {required: []string{"command"}, note: "command is required."},
	"HooksConfig.PostToolUse[]":      {required: []string{"command"}, note: "command is required."},
	"HooksConfig.UserPromptSubmit[]": {required: []string{"command"}, note: "command is required."},
	"HookConfig.Command":             {nonEmpty: true},
	"HookConfig.Timeout":             {positive: true, maxDur: 10 * time.Minute},
	"PromptHookConfig.Command":       {nonEmpty: true},
	"PromptHookConfig.Timeout":       {positive: true, maxDur: 10 * time.Minute},
}

// compatibleNeedsBaseURL says that provider openai-compatible needs a baseURL.
func compatibleNeedsBaseURL() *jsonschema.Schema {
	return &jsonschema.Schema{
		If:   &jsonschema.Schema{Properties: map[string]*jsonschema.Schema{"provider": {Const: constant("openai-compatible")}}, Required: []string{"provider"}},
		Then: &jsonschema.Schema{Required: []string{"baseURL"}},
	}
}

// constant is a JSON Schema const value.
// need says that key is set, not null nor empty; as an if, it asks
// whether it is.
func need(key string) *jsonschema.Schema {
	return &jsonschema.Schema{
		Required:   []string{key},
		Properties: map[string]*jsonschema.Schema{key: {Not: &jsonschema.Schema{Enum: []any{nil, ""}}}},
	}
}

var one = 1

func constant(v any) *any { return &v }
