package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// env returns a getenv over a fixed set of variables.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// yamlText joins lines, so tests can count them.
func yamlText(lines ...string) []byte {
	return []byte(strings.Join(lines, "\n") + "\n")
}

func TestDefaultConfig(t *testing.T) {
	want := &Config{
		Definitions: DefinitionsConfig{
			Root:        ".nexus/definitions",
			MaxFileSize: 10 << 20,
			Watch:       true,
			Debounce:    Duration(100 * time.Millisecond),
		},
		Runtime: RuntimeConfig{
			Backend:       "bbolt",
			Path:          ".nexus/runtime.db",
			Prefix:        "nexus:",
			MaxValueSize:  1 << 20,
			PurgeInterval: Duration(time.Second),
			CacheSize:     64 << 20,
		},
		Tools: ToolsConfig{
			Timeout:          Duration(time.Minute),
			OutputLimit:      1 << 20,
			MaxArgumentsSize: 21 << 20,
			Sandbox:          "workspace-write",
			Network:          false,
			EnvAllowlist:     []string{"PATH", "HOME", "LANG", "TERM"},
		},
		MCP: MCPConfig{
			CallTimeout:    Duration(time.Minute),
			StartupTimeout: Duration(30 * time.Second),
			Restart:        "on-failure",
			MaxRestarts:    5,
			Separator:      "__",
			HTTP:           MCPHTTPConfig{SessionIdleTimeout: Duration(30 * time.Minute), MaxSessionsPerToken: 16},
		},
		Agent: AgentConfig{MaxSteps: 25, MaxToolResult: 32 << 10, MaxAnswerSize: 1 << 20, MaxToolCallSize: 1 << 20,
			CommandDirs: []string{".claude/commands"}, MaxSubagents: 4},
		Messages: MessagesConfig{MaxLength: 100, Pruning: "oldest-first", KeepSystem: true},
		Context: ContextConfig{File: "FRAMEWORK_CONTEXT.md", Instructions: []string{"AGENTS.md", "CLAUDE.md", "GEMINI.md"},
			MaxInstructionsSize: 32 * kib, AutoCompact: 0.8},
		Log:         LogConfig{Level: "info"},
		ACP:         ACPConfig{Mode: "default", Terminal: "nexus"},
		Checkpoints: CheckpointsConfig{Enabled: true, MaxFileSize: 2 << 20, MaxStoreSize: 1 << 30, MaxFiles: 100000},
		Web: WebConfig{MaxFetchSize: 5 << 20, MaxTextSize: 24 << 10, Timeout: Duration(30 * time.Second),
			Search: WebSearchConfig{MaxResults: 10}},
	}
	if got := DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultConfig() = %+v\nwant %+v", got, want)
	}
	// Each call is a fresh value.
	DefaultConfig().Tools.EnvAllowlist[0] = "CHANGED"
	if got := DefaultConfig().Tools.EnvAllowlist[0]; got != "PATH" {
		t.Errorf("DefaultConfig shares its slices: EnvAllowlist[0] = %q", got)
	}
}

func TestParseConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"comments", "# nothing here\n\n# yet\n"},
		{"document marker", "---\n"},
		{"null document", "~\n"},
		{"null sections", "definitions:\nruntime: ~\napps:\ntools: {}\n"},
		{"null values", "tools:\n  network:\n  sandbox: ~\nmessages:\n  maxLength:\n"},
		{"null definitions values", "definitions:\n  watch:\n  debounce: ~\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig("config.yaml", []byte(tc.in), env(nil))
			if err != nil {
				t.Fatal(err)
			}
			if want := DefaultConfig(); !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()

	got, err := LoadConfig(filepath.Join(dir, "missing.yaml"), nil)
	if err != nil {
		t.Fatalf("missing file: %v", err)
	}
	if !reflect.DeepEqual(got, DefaultConfig()) {
		t.Errorf("missing file: got %+v, want defaults", got)
	}

	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte("log:\n  level: debug\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = LoadConfig(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Log.Level != "debug" {
		t.Errorf("Log.Level = %q, want debug", got.Log.Level)
	}

	if err := os.WriteFile(path, []byte("log:\n  level: loud\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadConfig(path, nil)
	want := path + `:2:10: log.level: "loud" is not one of: debug, info, warn, error`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}

	if _, err := LoadConfig(dir, nil); err == nil || !strings.HasPrefix(err.Error(), "load config: ") {
		t.Errorf("reading a directory: err = %v, want a load config error", err)
	}
}

func TestParseConfigAllSections(t *testing.T) {
	in := yamlText(
		"definitions:",
		"  root: defs",
		"  maxFileSize: 512KiB",
		"  watch: false",
		"  debounce: 250ms",
		"runtime:",
		"  backend: bbolt",
		"  path: data/rt.db",
		"  url: redis://localhost:6379",
		`  prefix: "team-a:"`,
		"  maxValueSize: 100KB",
		"  purgeInterval: 250ms",
		"  cache: false",
		"  cacheSize: 8MiB",
		"apps:",
		"  - id: writer",
		"    token: s3cret",
		"    grants:",
		"      definitions:",
		"        read: [shared/, reader/]",
		"        write: [shared/]",
		"      runtime: [reader]",
		"      tools:",
		"        allow: [read_file]",
		"        ask: [write_file]",
		"        deny: [execute_command]",
		"  - id: reader_2",
		"    tokenFile: /run/secrets/reader",
		"    certificate: d5:2c:e5:5e:47:4d:57:bf:09:7c:41:7e:75:16:7e:19:26:09:31:65:29:31:c8:0a:7a:d1:3b:e0:09:f1:09:70",
		"tools:",
		"  timeout: 1m30s",
		"  outputLimit: 2MB",
		"  sandbox: read-only",
		"  network: false",
		"  envAllowlist: [PATH, GOPATH]",
		"  policy:",
		"    execute_command: ask",
		"    fs__read: allow",
		"mcp:",
		"  callTimeout: 10s",
		"  startupTimeout: 5s",
		"  restart: never",
		"  maxRestarts: 0",
		"  separator: .",
		"  http:",
		"    sessionIdleTimeout: 5m",
		"    maxSessionsPerToken: 4",
		"llm:",
		"  default: claude",
		"  profiles:",
		"    claude:",
		"      provider: anthropic",
		"      model: claude",
		"      apiKeyEnv: ANTHROPIC_API_KEY",
		"      baseURL: https://api.example.com",
		"      temperature: 0.5",
		"      maxOutputTokens: 1024",
		"      contextWindow: 200000",
		"      prices: {input: 3, output: 15, cached: 0.3}",
		"      extraBody:",
		"        stop: [END]",
		"        extra: {nested: true}",
		"messages:",
		"  maxLength: 20",
		"  pruning: none",
		"  keepSystem: false",
		"context:",
		"  file: docs/CONTEXT.md",
		"log:",
		"  level: warn",
		"  file: /tmp/nexus.log",
		"grpc:",
		"  address: 127.0.0.1:7777",
		"  maxMessageSize: 1GiB",
		"  tls: {cert: tls/server.crt, key: tls/server.key, clientCA: /etc/nexus/clients.pem}",
		"acp:",
		"  mode: read-only",
		"  terminal: client",
		"checkpoints:",
		"  enabled: false",
		"  maxFileSize: 512KiB",
		"  maxStoreSize: 100MiB",
		"  maxFiles: 5000",
		"web:",
		"  allowedDomains: [go.dev, \"*.python.org\", 127.0.0.1]",
		"  maxFetchSize: 1MiB",
		"  maxTextSize: 20KiB",
		"  timeout: 10s",
		"  search: {provider: searxng, url: \"http://127.0.0.1:8888/search\", maxResults: 5}",
	)
	want := &Config{
		Definitions: DefinitionsConfig{Root: "defs", MaxFileSize: 512 * 1024, Watch: false, Debounce: Duration(250 * time.Millisecond)},
		Runtime: RuntimeConfig{
			Backend:       "bbolt",
			Path:          "data/rt.db",
			URL:           "redis://localhost:6379",
			Prefix:        "team-a:",
			MaxValueSize:  100000,
			PurgeInterval: Duration(250 * time.Millisecond),
			CacheSize:     8 << 20,
		},
		Apps: []AppConfig{
			{
				ID:    "writer",
				Token: "s3cret",
				Grants: GrantsConfig{
					Definitions: DefinitionGrants{Read: []string{"shared/", "reader/"}, Write: []string{"shared/"}},
					Runtime:     []string{"reader"},
					Tools:       ToolGrants{Allow: []string{"read_file"}, Ask: []string{"write_file"}, Deny: []string{"execute_command"}},
				},
			},
			{ID: "reader_2", TokenFile: "/run/secrets/reader", Certificate: "d5:2c:e5:5e:47:4d:57:bf:09:7c:41:7e:75:16:7e:19:26:09:31:65:29:31:c8:0a:7a:d1:3b:e0:09:f1:09:70"},
		},
		Tools: ToolsConfig{
			Timeout:          Duration(90 * time.Second),
			OutputLimit:      2000000,
			MaxArgumentsSize: 2 << 20, // 2 × maxFileSize + 1 MiB
			Sandbox:          "read-only",
			Network:          false,
			EnvAllowlist:     []string{"PATH", "GOPATH"},
			Policy:           map[string]string{"execute_command": "ask", "fs__read": "allow"},
		},
		MCP: MCPConfig{
			CallTimeout:    Duration(10 * time.Second),
			StartupTimeout: Duration(5 * time.Second),
			Restart:        "never",
			MaxRestarts:    0,
			Separator:      ".",
			HTTP:           MCPHTTPConfig{SessionIdleTimeout: Duration(5 * time.Minute), MaxSessionsPerToken: 4},
		},
		LLM: LLMConfig{Default: "claude", Profiles: map[string]LLMProfile{"claude": {
			Provider:        "anthropic",
			Model:           "claude",
			APIKeyEnv:       "ANTHROPIC_API_KEY",
			BaseURL:         "https://api.example.com",
			Temperature:     ptr(0.5),
			MaxOutputTokens: 1024,
			ContextWindow:   200000,
			Prices:          LLMPrices{Input: 3, Output: 15, Cached: 0.3},
			ExtraBody: map[string]any{
				"stop":  []any{"END"},
				"extra": map[string]any{"nested": true},
			},
		}}},
		Agent:    AgentConfig{MaxSteps: 25, MaxToolResult: 32 * kib, MaxAnswerSize: mib, MaxToolCallSize: mib, CommandDirs: []string{".claude/commands"}, MaxSubagents: 4},
		Messages: MessagesConfig{MaxLength: 20, Pruning: "none", KeepSystem: false},
		Context:  ContextConfig{File: "docs/CONTEXT.md", Instructions: []string{"AGENTS.md", "CLAUDE.md", "GEMINI.md"}, MaxInstructionsSize: 32 * kib, AutoCompact: 0.8},
		Log:      LogConfig{Level: "warn", File: "/tmp/nexus.log"},
		GRPC: GRPCConfig{Address: "127.0.0.1:7777", MaxMessageSize: 1 << 30,
			TLS: TLSConfig{Cert: "tls/server.crt", Key: "tls/server.key", ClientCA: "/etc/nexus/clients.pem"}},
		ACP:         ACPConfig{Mode: "read-only", Terminal: "client"},
		Checkpoints: CheckpointsConfig{Enabled: false, MaxFileSize: 512 << 10, MaxStoreSize: 100 << 20, MaxFiles: 5000},
		Web: WebConfig{AllowedDomains: []string{"go.dev", "*.python.org", "127.0.0.1"}, MaxFetchSize: 1 << 20, MaxTextSize: 20 << 10,
			Timeout: Duration(10 * time.Second), Search: WebSearchConfig{Provider: "searxng", URL: "http://127.0.0.1:8888/search", MaxResults: 5}},
	}
	got, err := ParseConfig("config.yaml", in, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseConfigEnv(t *testing.T) {
	vars := map[string]string{
		"MODEL": "big-model",
		"EMPTY": "",
		"N":     "42",
		"NET":   "false",
		"SIZE":  "3MiB",
		"KEY":   "execute_command",
	}
	for _, tc := range []struct {
		name string
		in   string
		edit func(c *Config) // turns the defaults into the expected config
	}{
		{"set", "log:\n  file: ${MODEL}\n", func(c *Config) { c.Log.File = "big-model" }},
		{"in text", "log:\n  file: x-${MODEL}-y\n", func(c *Config) { c.Log.File = "x-big-model-y" }},
		{"twice", `log: {file: "${MODEL}/${N}"}`, func(c *Config) { c.Log.File = "big-model/42" }},
		{"default unset", "log:\n  file: ${NOPE:-small}\n", func(c *Config) { c.Log.File = "small" }},
		{"default empty", "log:\n  file: ${EMPTY:-small}\n", func(c *Config) { c.Log.File = "small" }},
		{"default ignored", "log:\n  file: ${MODEL:-small}\n", func(c *Config) { c.Log.File = "big-model" }},
		{"empty default", "log:\n  file: \"${NOPE:-}\"\n", func(c *Config) {}},
		{"set to empty", "log:\n  file: \"${EMPTY}\"\n", func(c *Config) {}},
		{"dollar", "log:\n  file: $$MODEL and $${MODEL} cost $$5\n", func(c *Config) { c.Log.File = "$MODEL and ${MODEL} cost $5" }},
		{"lone dollar", "log:\n  file: a$b $\n", func(c *Config) { c.Log.File = "a$b $" }},
		{"integer", "messages:\n  maxLength: ${N}\n", func(c *Config) { c.Messages.MaxLength = 42 }},
		{"quoted integer", "messages:\n  maxLength: \"${N}\"\n", func(c *Config) { c.Messages.MaxLength = 42 }},
		{"default integer", "messages:\n  maxLength: ${NOPE:-7}\n", func(c *Config) { c.Messages.MaxLength = 7 }},
		{"boolean", "tools:\n  network: ${NET}\n", func(c *Config) { c.Tools.Network = false }},
		{"duration", "definitions:\n  watch: ${NET}\n  debounce: ${N}ms\n", func(c *Config) {
			c.Definitions.Watch, c.Definitions.Debounce = false, Duration(42*time.Millisecond)
		}},
		{"size", "runtime:\n  maxValueSize: ${SIZE}\n", func(c *Config) { c.Runtime.MaxValueSize = 3 << 20 }},
		{"list item", "tools:\n  envAllowlist: [\"${MODEL}\", X]\n", func(c *Config) { c.Tools.EnvAllowlist = []string{"big-model", "X"} }},
		{"extraBody", "llm:\n  provider: openai\n  model: m\n  extraBody:\n    n: ${N}\n    deep: {m: \"${MODEL}\"}\n", func(c *Config) {
			c.LLM = LLMConfig{Default: "default", Profiles: map[string]LLMProfile{"default": {Key: "llm", Provider: "openai", Model: "m",
				ExtraBody: map[string]any{"n": 42, "deep": map[string]any{"m": "big-model"}}}}}
		}},
		{"images", "llm:\n  provider: openai-compatible\n  baseURL: http://h/v1\n  model: m\n  images: ${NET}\n", func(c *Config) {
			no := false
			c.LLM = LLMConfig{Default: "default", Profiles: map[string]LLMProfile{"default": {Key: "llm", Provider: "openai-compatible", BaseURL: "http://h/v1", Model: "m", Images: &no}}}
		}},
		{"not keys", "tools:\n  policy:\n    ${KEY}: deny\n", func(c *Config) { c.Tools.Policy = map[string]string{"${KEY}": "deny"} }},
		{"alias expanded once", "llm:\n  provider: openai\n  model: &m $$${N}\n  baseURL: *m\n", func(c *Config) {
			c.LLM = LLMConfig{Default: "default", Profiles: map[string]LLMProfile{"default": {Key: "llm", Provider: "openai", Model: "$42", BaseURL: "$42"}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig("config.yaml", []byte(tc.in), env(vars))
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultConfig()
			tc.edit(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseConfigOSEnv(t *testing.T) {
	t.Setenv("NEXUS_TEST_LEVEL", "error")
	got, err := ParseConfig("config.yaml", []byte("log:\n  level: ${NEXUS_TEST_LEVEL}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Log.Level != "error" {
		t.Errorf("Log.Level = %q, want error", got.Log.Level)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"unknown top-level key", yamlText("logs:", "  level: debug"),
			`c.yaml:1:1: unknown key "logs" (known: definitions, runtime, apps, tools, mcp, llm, agent, messages, context, log, grpc, acp, checkpoints, web, hooks)`},
		{"web domain with a scheme", yamlText("web:", "  allowedDomains: [go.dev, \"https://python.org\"]"),
			`c.yaml:2:28: web.allowedDomains[1]: "https://python.org" is not a lower-case host name without scheme, port or path (such as go.dev, or *.python.org)`},
		{"web wildcard IP", yamlText("web:", "  allowedDomains: [\"*.10.0.0.1\"]"),
			`c.yaml:2:20: web.allowedDomains[0]: "*.10.0.0.1": an IP address takes no "*."`},
		{"web search without url", yamlText("web:", "  search: {provider: searxng}"),
			`c.yaml:2:22: web.search.url: must not be empty with a provider (the search endpoint, such as https://searx.example.org/search)`},
		{"web search provider", yamlText("web:", "  search: {provider: bing, url: \"https://x\"}"),
			`c.yaml:2:22: web.search.provider: "bing" is not a known provider (searxng; or leave provider out for no web_search)`},
		{"web search url with password", yamlText("web:", "  search: {provider: searxng, url: \"https://u:p@x/search\"}"),
			`c.yaml:2:36: web.search.url: "https://u:p@x/search" carries a user name or password: web.search sends no credentials`},
		{"unknown key in app", yamlText(
			"# Apps",
			"",
			"log:",
			"  level: info",
			"",
			"apps:",
			"  - id: one",
			"    token: t",
			"",
			"    # the next key is a typo",
			"",
			"    foo: bar",
		), `c.yaml:12:5: unknown key "foo" in apps[0] (known: id, token, tokenFile, certificate, grants)`},
		{"unknown nested key", yamlText(
			"apps:",
			"  - id: one",
			"    grants:",
			"      tools:",
			"        allow: [read_file]",
			"        permit: [write_file]",
		), `c.yaml:6:9: unknown key "permit" in apps[0].grants.tools (known: allow, ask, deny)`},
		{"bad size", yamlText("definitions:", "  maxFileSize: abc"),
			`c.yaml:2:16: definitions.maxFileSize: "abc" is not a size (examples: 1048576, 10MiB)`},
		{"TLS certificate without its key", yamlText("grpc:", "  tls:", "    cert: server.crt"),
			`c.yaml:3:5: grpc.tls: cert and key go together: give both, or neither for a generated certificate`},
		{"TLS key without its certificate", yamlText("grpc:", "  tls: {key: server.key, clientCA: ca.pem}"),
			`c.yaml:2:8: grpc.tls: cert and key go together: give both, or neither for a generated certificate`},
		{"a field the file does not set", yamlText("llm:", "  provider: openai", "  model: m", "  \"-\": elsewhere"),
			`c.yaml:4:3: unknown key "-" in llm (known: default, profiles, provider, api, model, apiKeyEnv, baseURL, temperature, maxOutputTokens, contextWindow, prices, extraBody, images)`},
		{"no subagents", yamlText("agent:", "  maxSubagents: 0"),
			`c.yaml:2:17: agent.maxSubagents: 0 is less than 1`},
		{"too many subagents", yamlText("agent:", "  maxSubagents: 65"),
			`c.yaml:2:17: agent.maxSubagents: 65 is more than 64`},
		{"a command directory outside the workspace", yamlText("agent:", "  commandDirs: [.claude/commands, ../elsewhere]"),
			`c.yaml:2:35: agent.commandDirs[1]: "../elsewhere" is not a directory inside the workspace (a relative path, such as .claude/commands)`},
		{"a command directory in .nexus", yamlText("agent:", "  commandDirs: [.nexus/run]"),
			`c.yaml:2:17: agent.commandDirs[0]: ".nexus/run" is inside .nexus, the daemon's own state (commands of the definitions root go in its commands/)`},
		{"a hook without a command", yamlText("hooks:", "  preToolUse:", "    - match: write_file"),
			`c.yaml:3:7: hooks.preToolUse[0].command: must name a program and its arguments, such as ["./scripts/check.sh"]`},
		{"a hook's match not a regular expression", yamlText("hooks:", "  postToolUse:", "    - {match: \"(\", command: [x]}"),
			`c.yaml:3:15: hooks.postToolUse[0].match: "(" is not a regular expression: error parsing regexp: missing closing ): ` + "`(`"},
		{"a prompt hook with a match", yamlText("hooks:", "  userPromptSubmit:", "    - {match: x, command: [x]}"),
			`c.yaml:3:8: unknown key "match" in hooks.userPromptSubmit[0] (known: command, timeout)`},
		{"a hook's timeout over the limit", yamlText("hooks:", "  preToolUse:", "    - {command: [x], timeout: 11m}"),
			`c.yaml:3:31: hooks.preToolUse[0].timeout: 11m0s is more than the limit of 10m0s`},
		{"an unknown hook event", yamlText("hooks:", "  PreToolUse: []"),
			`c.yaml:2:3: unknown key "PreToolUse" in hooks (known: preToolUse, postToolUse, userPromptSubmit)`},
		{"a fraction for an integer", yamlText("agent:", "  maxSteps: 2.5"),
			`c.yaml:2:13: agent.maxSteps: "2.5" is not an integer`},
		{"a profile's key under llm without provider", yamlText("llm:", "  profiles: {p: {provider: openai, model: m}}", "  temperature: 0.2"),
			`c.yaml:2:3: llm: profile "default" names no provider (openai, anthropic, gemini or openai-compatible) (llm.temperature, directly under llm, is a key of the profile "default")` + "\n" +
				`c.yaml:2:3: llm: profile "default" names no model (llm.temperature, directly under llm, is a key of the profile "default")`},
		{"unknown TLS key", yamlText("grpc:", "  tls: {ca: ca.pem}"),
			`c.yaml:2:9: unknown key "ca" in grpc.tls (known: cert, key, clientCA)`},
		{"app certificate not a fingerprint", yamlText("apps:", "  - id: a", "    certificate: /etc/a.pem"),
			`c.yaml:3:18: apps[0].certificate: "/etc/a.pem" is not a SHA-256 fingerprint (64 hex digits, as openssl x509 -noout -fingerprint -sha256 -in cert.pem prints them)`},
		{"app certificate too short", yamlText("apps:", "  - id: a", "    certificate: AB:CD"),
			`c.yaml:3:18: apps[0].certificate: "AB:CD" is not a SHA-256 fingerprint (64 hex digits, as openssl x509 -noout -fingerprint -sha256 -in cert.pem prints them)`},
		{"two apps with one certificate", yamlText("apps:",
			"  - id: a", "    certificate: "+strings.Repeat("ab", 32),
			"  - id: b", "    certificate: sha256 Fingerprint="+strings.Repeat("AB:", 31)+"AB"),
			`c.yaml:5:18: apps[1].certificate: the same certificate as apps[0].certificate`},
		{"bad size unit", yamlText("grpc:", "  maxMessageSize: 10M"),
			`c.yaml:2:19: grpc.maxMessageSize: "10M" is not a size (examples: 1048576, 10MiB)`},
		{"negative size", yamlText("tools:", "  outputLimit: -1MiB"),
			`c.yaml:2:16: tools.outputLimit: "-1MiB" must not be negative`},
		{"no arguments at all", yamlText("tools:", "  maxArgumentsSize: 0"),
			`c.yaml:2:21: tools.maxArgumentsSize: must be more than 0`},
		{"huge size", yamlText("runtime:", "  maxValueSize: 9000000000GiB"),
			`c.yaml:2:17: runtime.maxValueSize: "9000000000GiB" is too large`},
		{"size is a list", yamlText("runtime:", "  maxValueSize: [1]"),
			`c.yaml:2:17: runtime.maxValueSize: expected a size, got a list`},
		{"bad duration", yamlText("tools:", "  timeout: 30"),
			`c.yaml:2:12: tools.timeout: "30" is not a duration (examples: 30s, 1m30s, 250ms)`},
		{"negative duration", yamlText("mcp:", "  callTimeout: -5s"),
			`c.yaml:2:16: mcp.callTimeout: "-5s" must not be negative`},
		{"bad boolean", yamlText("tools:", "  network: maybe"),
			`c.yaml:2:12: tools.network: "maybe" is not a boolean (true or false)`},
		{"bad integer", yamlText("messages:", "  maxLength: lots"),
			`c.yaml:2:14: messages.maxLength: "lots" is not an integer`},
		{"integer is a mapping", yamlText("mcp:", "  maxRestarts: {n: 1}"),
			`c.yaml:2:16: mcp.maxRestarts: expected an integer, got a mapping`},
		{"section is a scalar", yamlText("runtime: bbolt"),
			`c.yaml:1:10: runtime: expected a mapping, got "bbolt"`},
		{"list is a scalar", yamlText("tools:", "  envAllowlist: PATH"),
			`c.yaml:2:17: tools.envAllowlist: expected a list, got "PATH"`},
		{"string is a list", yamlText("context:", "  file: [a, b]"),
			`c.yaml:2:9: context.file: expected a string, got a list`},
		{"instruction file with a directory", yamlText("context:", "  instructions: [AGENTS.md, ../secret.md]"),
			`c.yaml:2:17: context.instructions: "../secret.md" is not a file name (a name such as AGENTS.md, without a directory)`},
		{"instruction files over a GiB", yamlText("context:", "  maxInstructionsSize: 2GiB"),
			`c.yaml:2:24: context.maxInstructionsSize: 2GiB is more than 1GiB`},
		{"auto-compaction over the window", yamlText("context:", "  autoCompact: 80"),
			`c.yaml:2:16: context.autoCompact: 80 is not a share of the context window between 0 (off) and 1, such as 0.8`},
		{"auto-compaction as a word", yamlText("context:", "  autoCompact: false"),
			`c.yaml:2:16: context.autoCompact: "false" is not a number`},
		{"map is a list", yamlText("tools:", "  policy: [read_file]"),
			`c.yaml:2:11: tools.policy: expected a mapping, got a list`},
		{"top level is a list", yamlText("- a"),
			`c.yaml:1:1: top level: expected a mapping, got a list`},
		{"sandbox", yamlText("tools:", "  sandbox: none"),
			`c.yaml:2:12: tools.sandbox: "none" is not one of: read-only, workspace-write, off`},
		{"restart", yamlText("mcp:", "  restart: sometimes"),
			`c.yaml:2:12: mcp.restart: "sometimes" is not one of: always, on-failure, never`},
		{"pruning", yamlText("messages:", "  pruning: newest-first"),
			`c.yaml:2:12: messages.pruning: "newest-first" is not one of: oldest-first, remove_oldest, token_budget, none`},
		{"log level", yamlText("log:", "  level: INFO"),
			`c.yaml:2:10: log.level: "INFO" is not one of: debug, info, warn, error`},
		{"policy", yamlText("tools:", "  policy:", "    read_file: yes"),
			`c.yaml:3:16: tools.policy.read_file: "yes" is not one of: allow, ask, deny`},
		{"backend", yamlText("runtime:", "  backend: mysql"),
			`c.yaml:2:12: runtime.backend: "mysql" is not one of: bbolt, redis`},
		{"redis without url", yamlText("runtime:", "  backend: redis"),
			`c.yaml:2:12: runtime.url: must not be empty with backend redis (redis://[user:${REDIS_PASSWORD}@]host:6379/0, rediss:// for TLS)`},
		{"redis bad url", yamlText("runtime:", "  backend: redis", "  url: http://user:hunter2@localhost"),
			`c.yaml:3:8: runtime.url: http://user:xxxxx@localhost is not a Redis URL (redis://[user:password@]host:6379/0, rediss:// for TLS, unix:///path): redis: invalid URL scheme: http`},
		{"redis bad db", yamlText("runtime:", "  backend: redis", "  url: redis://localhost/x"),
			`c.yaml:3:8: runtime.url: redis://localhost/x is not a Redis URL (redis://[user:password@]host:6379/0, rediss:// for TLS, unix:///path): redis: invalid database number: "x"`},
		{"redis password unset", yamlText("runtime:", "  backend: redis", "  url: redis://nexus:${REDIS_PASSWORD}@localhost:6379/0"),
			`c.yaml:3:8: environment variable REDIS_PASSWORD is not set (write ${REDIS_PASSWORD:-default} to give a default)`},
		{"empty prefix", yamlText("runtime:", "  backend: redis", "  url: redis://localhost", `  prefix: ""`),
			`c.yaml:4:11: runtime.prefix: must not be empty (the start of every Redis key, such as "nexus:")`},
		{"cache with bbolt", yamlText("runtime:", "  cache: true"),
			`c.yaml:2:10: runtime.cache: applies to backend redis only (bbolt reads are local already)`},
		{"no answer at all", yamlText("agent:", "  maxAnswerSize: 0"),
			`c.yaml:2:18: agent.maxAnswerSize: must be more than 0`},
		{"a tool call over 1GiB", yamlText("llm:", "  provider: openai", "  model: m", "agent:", "  maxSteps: 3", "  maxToolCallSize: 2GiB"),
			`c.yaml:6:20: agent.maxToolCallSize: 2GiB is more than 1GiB`},
		{"answer size not a size", yamlText("agent:", "  maxAnswerSize: lots"),
			`c.yaml:2:18: agent.maxAnswerSize: "lots" is not a size (examples: 1048576, 10MiB)`},
		{"zero cache size", yamlText("runtime:", "  backend: redis", "  url: redis://localhost", "  cache: true", "  cacheSize: 0"),
			`c.yaml:5:14: runtime.cacheSize: must be more than 0`},
		{"max length", yamlText("messages:", "  maxLength: 0"),
			`c.yaml:2:14: messages.maxLength: 0 is less than 1`},
		{"max restarts", yamlText("mcp:", "  maxRestarts: -1"),
			`c.yaml:2:16: mcp.maxRestarts: -1 is less than 0`},
		{"empty separator", yamlText("mcp:", `  separator: ""`),
			`c.yaml:2:14: mcp.separator: must not be empty`},
		{"no idle timeout", yamlText("mcp:", "  http:", "    sessionIdleTimeout: 0s"),
			`c.yaml:3:25: mcp.http.sessionIdleTimeout: 0s must be more than 0`},
		{"long idle timeout", yamlText("mcp:", "  http:", "    sessionIdleTimeout: 48h"),
			`c.yaml:3:25: mcp.http.sessionIdleTimeout: 48h0m0s is more than the limit of 24h0m0s`},
		{"no sessions", yamlText("mcp:", "  http:", "    maxSessionsPerToken: 0"),
			`c.yaml:3:26: mcp.http.maxSessionsPerToken: 0 is less than 1`},
		{"too many sessions", yamlText("mcp:", "  http:", "    maxSessionsPerToken: 100000"),
			`c.yaml:3:26: mcp.http.maxSessionsPerToken: 100000 is more than the limit of 10000`},
		{"zero debounce", yamlText("definitions:", "  debounce: 0s"),
			`c.yaml:2:13: definitions.debounce: 0s must be more than 0`},
		{"long debounce", yamlText("definitions:", "  debounce: 1m"),
			`c.yaml:2:13: definitions.debounce: 1m0s is more than the limit of 10s`},
		{"negative debounce", yamlText("definitions:", "  debounce: -1s"),
			`c.yaml:2:13: definitions.debounce: "-1s" must not be negative`},
		{"bad watch", yamlText("definitions:", "  watch: sometimes"),
			`c.yaml:2:10: definitions.watch: "sometimes" is not a boolean (true or false)`},
		{"unknown definitions key", yamlText("definitions:", "  watcher: true"),
			`c.yaml:2:3: unknown key "watcher" in definitions (known: root, maxFileSize, watch, debounce)`},
		{"empty root", yamlText("definitions:", `  root: ""`),
			`c.yaml:2:9: definitions.root: must not be empty (a directory of the workspace, such as "definitions"; not one that holds .nexus)`},
		{"bad app id", yamlText("apps:", "  - id: My-App"),
			`c.yaml:2:9: apps[0].id: "My-App" is not a valid app id (1 to 63 of a-z, 0-9, _ and -, starting with a letter or digit)`},
		{"app id starts with dash", yamlText("apps:", "  - id: -app"),
			`c.yaml:2:9: apps[0].id: "-app" is not a valid app id (1 to 63 of a-z, 0-9, _ and -, starting with a letter or digit)`},
		{"app id too long", yamlText("apps:", "  - id: "+strings.Repeat("a", 64)),
			`c.yaml:2:9: apps[0].id: "` + strings.Repeat("a", 64) + `" is not a valid app id (1 to 63 of a-z, 0-9, _ and -, starting with a letter or digit)`},
		{"missing app id", yamlText("apps:", "  - token: t"),
			`c.yaml:2:5: apps[0]: missing required key "id"`},
		{"duplicate app id", yamlText("apps:", "  - id: one", "  - id: two", "  - id: one"),
			`c.yaml:4:9: apps[2].id: duplicate app id "one" (first at line 2)`},
		{"token and tokenFile", yamlText("apps:", "  - id: one", "    token: t", "    tokenFile: /t"),
			`c.yaml:4:16: apps[0]: token and tokenFile are mutually exclusive`},
		{"tool in two lists", yamlText("apps:", "  - id: one", "    grants:", "      tools:", "        allow: [a, b]", "        deny: [c, b]"),
			`c.yaml:6:19: apps[0].grants.tools.deny[1]: "b" is also in allow`},
		{"app is a scalar", yamlText("apps:", "  - one"),
			`c.yaml:2:5: apps[0]: expected a mapping, got "one"`},
		{"duplicate key", yamlText("log:", "  level: info", "  file: a", "  level: debug"),
			`c.yaml:4:3: log: duplicate key "level" (first at line 2)`},
		{"merge key", yamlText("base: &b {level: info}", "log:", "  <<: *b"),
			"c.yaml:1:1: unknown key \"base\" (known: definitions, runtime, apps, tools, mcp, llm, agent, messages, context, log, grpc, acp, checkpoints, web, hooks)\n" +
				"c.yaml:3:3: log: merge keys (<<) are not supported"},
		{"llm default not a profile", yamlText("llm:", "  default: big", "  profiles:", "    small: {provider: openai, model: gpt-5-mini}"),
			`c.yaml:2:12: llm.default: "big" is not a profile (profiles: small)`},
		{"sampling profile not a profile", yamlText("mcp:", "  sampling:", "    profile: big", "llm:", "  profiles:", "    small: {provider: openai, model: gpt-5-mini}"),
			`c.yaml:3:14: mcp.sampling.profile: "big" is not an llm profile (profiles: small)`},
		{"sampling hint profile not a profile", yamlText("mcp:", "  sampling: {profile: small, profiles: [small, big]}", "llm:", "  profiles:", "    small: {provider: openai, model: gpt-5-mini}"),
			`c.yaml:2:48: mcp.sampling.profiles[1]: "big" is not an llm profile (profiles: small)`},
		{"sampling profiles without profile", yamlText("mcp:", "  sampling: {profiles: [small]}", "llm:", "  profiles:", "    small: {provider: openai, model: gpt-5-mini}"),
			`c.yaml:2:24: mcp.sampling.profiles: needs mcp.sampling.profile, the profile that answers when no hint picks another`},
		{"sampling maxTokens negative", yamlText("mcp:", "  sampling: {maxTokens: -1}"),
			`c.yaml:2:25: mcp.sampling.maxTokens: -1 is less than 0`},
		{"llm compatible without baseURL", yamlText("llm:", "  profiles:", "    local: {provider: openai-compatible, model: qwen}"),
			`c.yaml:3:12: llm.profiles.local: profile "local": an openai-compatible provider needs a baseURL (Ollama: http://127.0.0.1:11434/v1, llama-server: http://127.0.0.1:8080/v1)`},
		{"llm temperature", yamlText("llm:", "  provider: openai", "  model: gpt", "  temperature: 3"),
			`c.yaml:4:16: llm.temperature: 3 is not between 0 and 2`},
		{"llm no provider", yamlText("llm:", "  profiles:", "    x: {model: gpt}"),
			`c.yaml:3:8: llm.profiles.x: profile "x" names no provider (openai, anthropic, gemini or openai-compatible)`},
		{"unset variable", yamlText("llm:", "  model: gpt", "  apiKeyEnv: ${KEY_NAME}"),
			`c.yaml:3:14: environment variable KEY_NAME is not set (write ${KEY_NAME:-default} to give a default)`},
		{"unset variable in a size", yamlText("grpc:", "  maxMessageSize: ${GRPC_MAX}"),
			`c.yaml:2:19: environment variable GRPC_MAX is not set (write ${GRPC_MAX:-default} to give a default)`},
		{"bad reference", yamlText("llm:", "  model: ${MODEL-x}"),
			`c.yaml:2:10: bad reference "${MODEL-x}" (write ${NAME} or ${NAME:-default}, or $$ for a literal $)`},
		{"unterminated reference", yamlText("llm:", "  model: ${MODEL"),
			`c.yaml:2:10: "${MODEL" has no closing } (write $$ for a literal $)`},
		{"syntax", yamlText("log:", "  level: info", "  file: x: y"),
			`c.yaml:3: mapping values are not allowed in this context`},
		{"two documents", yamlText("log: {}", "---", "tools: {}"),
			`c.yaml:2:1: a second YAML document; the config must be a single document`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig("c.yaml", tc.in, env(nil))
			if err == nil {
				t.Fatalf("no error, config %+v\nwant %s", got, tc.want)
			}
			if got != nil {
				t.Errorf("config %+v returned with an error", got)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tc.want)
			}
		})
	}
}

func TestParseConfigManyErrors(t *testing.T) {
	in := yamlText(
		"definitions:",
		"  maxFileSize: huge",
		"runtime:",
		"  backend: mongo",
		"apps:",
		"  - id: Bad",
		"    grants:",
		"      tools:",
		"        allow: [x]",
		"        wat: [y]",
		"  - id: ok",
		"    token: ${TOKEN}",
		"tools:",
		"  sandbox: jail",
		"  network: sure",
		"colour: blue",
	)
	want := strings.Join([]string{
		`.nexus/config.yaml:2:16: definitions.maxFileSize: "huge" is not a size (examples: 1048576, 10MiB)`,
		`.nexus/config.yaml:4:12: runtime.backend: "mongo" is not one of: bbolt, redis`,
		`.nexus/config.yaml:6:9: apps[0].id: "Bad" is not a valid app id (1 to 63 of a-z, 0-9, _ and -, starting with a letter or digit)`,
		`.nexus/config.yaml:10:9: unknown key "wat" in apps[0].grants.tools (known: allow, ask, deny)`,
		`.nexus/config.yaml:12:12: environment variable TOKEN is not set (write ${TOKEN:-default} to give a default)`,
		`.nexus/config.yaml:14:12: tools.sandbox: "jail" is not one of: read-only, workspace-write, off`,
		`.nexus/config.yaml:15:12: tools.network: "sure" is not a boolean (true or false)`,
		`.nexus/config.yaml:16:1: unknown key "colour" (known: definitions, runtime, apps, tools, mcp, llm, agent, messages, context, log, grpc, acp, checkpoints, web, hooks)`,
	}, "\n")
	_, err := ParseConfig(".nexus/config.yaml", in, env(nil))
	if err == nil {
		t.Fatal("no error")
	}
	if err.Error() != want {
		t.Errorf("error:\n%s\nwant:\n%s", err, want)
	}

	// Each problem is a *ConfigError with its position.
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error %T does not wrap a list", err)
	}
	errs := joined.Unwrap()
	if len(errs) != 8 {
		t.Fatalf("%d errors, want 8", len(errs))
	}
	var ce *ConfigError
	if !errors.As(errs[3], &ce) {
		t.Fatalf("error %T is not a *ConfigError", errs[3])
	}
	wantErr := ConfigError{File: ".nexus/config.yaml", Line: 10, Column: 9,
		Msg: `unknown key "wat" in apps[0].grants.tools (known: allow, ask, deny)`}
	if *ce != wantErr {
		t.Errorf("errs[3] = %+v, want %+v", *ce, wantErr)
	}
}

func TestHookTimeoutDefault(t *testing.T) {
	cfg, err := ParseConfig("c.yaml", []byte(yamlText("hooks:", "  preToolUse:", "    - {command: [./check.sh]}", "    - {command: [x], timeout: 5s}")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Hooks.PreToolUse; len(got) != 2 || got[0].Timeout != Duration(30*time.Second) || got[1].Timeout != Duration(5*time.Second) {
		t.Fatalf("hooks %+v, want timeouts 30s (the default) and 5s", got)
	}
	cfg, err = ParseConfig("c.yaml", []byte(yamlText("hooks:", "  userPromptSubmit:", "    - {command: [./check.sh]}")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Hooks.UserPromptSubmit; len(got) != 1 || got[0].Timeout != Duration(30*time.Second) {
		t.Fatalf("prompt hooks %+v, want the timeout 30s (the default)", got)
	}
}

func TestFingerprint(t *testing.T) {
	var fp [32]byte
	for i := range fp {
		fp[i] = byte(i * 7)
	}
	text := FormatFingerprint(fp)
	if want := "00:07:0E:15:1C:23:2A:31:38:3F:46:4D:54:5B:62:69:70:77:7E:85:8C:93:9A:A1:A8:AF:B6:BD:C4:CB:D2:D9"; text != want {
		t.Errorf("FormatFingerprint = %s, want %s", text, want)
	}
	for _, in := range []string{text, strings.ToLower(text), strings.ReplaceAll(text, ":", ""), "sha256 Fingerprint=" + text, "SHA256 Fingerprint=" + text + "\n"} {
		if got, err := ParseFingerprint(in); err != nil || got != fp {
			t.Errorf("ParseFingerprint(%q) = %x, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "xyz", text + ":00", "md5 Fingerprint=" + text} {
		if _, err := ParseFingerprint(in); err == nil {
			t.Errorf("ParseFingerprint(%q) accepted it", in)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Size
		err  string
	}{
		{in: "0", want: 0},
		{in: "1048576", want: 1 << 20},
		{in: "1024B", want: 1024},
		{in: "100KB", want: 100000},
		{in: "1MB", want: 1000000},
		{in: "2GB", want: 2000000000},
		{in: "512KiB", want: 512 << 10},
		{in: "10MiB", want: 10 << 20},
		{in: "10 MiB", want: 10 << 20},
		{in: "1GiB", want: 1 << 30},
		{in: "8589934591GiB", want: 8589934591 << 30},
		{in: "8589934592GiB", err: `"8589934592GiB" is too large`},
		{in: "99999999999999999999", err: `"99999999999999999999" is too large`},
		{in: "-1", err: `"-1" must not be negative`},
		{in: "1.5MiB", err: `"1.5MiB" is not a size (examples: 1048576, 10MiB)`},
		{in: "10mib", err: `"10mib" is not a size (examples: 1048576, 10MiB)`},
		{in: "MiB", err: `"MiB" is not a size (examples: 1048576, 10MiB)`},
		{in: "", err: `"" is not a size (examples: 1048576, 10MiB)`},
	} {
		got, err := parseSize(tc.in)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("parseSize(%q) = %d, %v; want error %s", tc.in, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestSizeString(t *testing.T) {
	for s, want := range map[Size]string{
		0:         "0B",
		1000:      "1000B",
		1024:      "1KiB",
		1536:      "1536B",
		10 << 20:  "10MiB",
		3 << 30:   "3GiB",
		1<<30 + 1: "1073741825B",
	} {
		if got := s.String(); got != want {
			t.Errorf("Size(%d).String() = %q, want %q", int64(s), got, want)
		}
	}
}

func TestMaxArgumentsSize(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want Size
	}{
		{"", 21 * mib},
		{"tools:\n  maxArgumentsSize: 4MiB\n", 4 * mib},
		{"tools:\n  maxArgumentsSize: 4MiB\ndefinitions:\n  maxFileSize: 100MiB\n", 4 * mib},
		{"tools:\n  maxArgumentsSize:\ndefinitions:\n  maxFileSize: 100MiB\n", 201 * mib},
		{"definitions:\n  maxFileSize: 1MiB\n", 3 * mib},
	} {
		cfg, err := ParseConfig("c.yaml", []byte(c.yaml), env(nil))
		if err != nil {
			t.Errorf("%q: %v", c.yaml, err)
		} else if cfg.Tools.MaxArgumentsSize != c.want {
			t.Errorf("%q: maxArgumentsSize %v, want %v", c.yaml, cfg.Tools.MaxArgumentsSize, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// The answer limits take sizes, and a file that sets one keeps the
// other's default.
func TestAgentAnswerLimits(t *testing.T) {
	cfg, err := ParseConfig("c.yaml", yamlText("agent:", "  maxAnswerSize: 256KiB"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agent.MaxAnswerSize != 256*kib || cfg.Agent.MaxToolCallSize != mib {
		t.Errorf("maxAnswerSize %v, maxToolCallSize %v; want 256KiB and 1MiB", cfg.Agent.MaxAnswerSize, cfg.Agent.MaxToolCallSize)
	}
}
