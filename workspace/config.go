// Package workspace finds a workspace's files and loads its configuration.
// Start with [LoadConfig].
package workspace

//go:generate go run ../internal/configschema/gen ..

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/nexuscocreate/nexus/state"
)

// Config is .nexus/config.yaml with every default filled in.
type Config struct {
	Definitions DefinitionsConfig `yaml:"definitions"`
	Runtime     RuntimeConfig     `yaml:"runtime"`
	// Apps are the sandbox applications that use Nexus over gRPC, each
	// with its token and what it may reach.
	Apps     []AppConfig    `yaml:"apps"`
	Tools    ToolsConfig    `yaml:"tools"`
	MCP      MCPConfig      `yaml:"mcp"`
	LLM      LLMConfig      `yaml:"llm"`
	Agent    AgentConfig    `yaml:"agent"`
	Messages MessagesConfig `yaml:"messages"`
	Context  ContextConfig  `yaml:"context"`
	Log      LogConfig      `yaml:"log"`
	GRPC     GRPCConfig     `yaml:"grpc"`
	ACP      ACPConfig      `yaml:"acp"`
	// Checkpoints are the records of what agents, apps, MCP clients and
	// their commands change in the workspace, to review and undo it.
	Checkpoints CheckpointsConfig `yaml:"checkpoints"`
	// Web is web_fetch and web_search: the pages and searches the daemon
	// fetches for a tool call.
	Web WebConfig `yaml:"web"`
	// Hooks are programs run before and after tool calls and when a
	// prompt is submitted, each only once the person has approved it
	// (nexus hooks trust).
	Hooks HooksConfig `yaml:"hooks"`
}

// WebConfig is the web section: the core tools web_fetch and web_search,
// which the daemon itself runs (the command sandbox's network, which
// tools.network sets, is another matter). Each call asks the person
// unless its host is allowed here or by tools.policy.
type WebConfig struct {
	// AllowedDomains are the hosts web_fetch fetches from without asking,
	// and to which a page may redirect: "go.dev" is that host exactly,
	// "*.python.org" every host under python.org (not python.org itself);
	// an IP address or "localhost" names itself. Any port. The host of
	// web.search.url here lets web_search run without asking.
	AllowedDomains []string `yaml:"allowedDomains"`
	// MaxFetchSize bounds the bytes read of one response; the rest is not
	// read, and the result says the page was cut. Default 5MiB.
	MaxFetchSize Size `yaml:"maxFetchSize"`
	// MaxTextSize bounds the text one web_fetch returns (after HTML
	// becomes markdown); a call may ask for less, and for the text from an
	// offset on. Default 24KiB, so that a page's part fits whole in
	// agent.maxToolResult (32KiB).
	MaxTextSize Size `yaml:"maxTextSize"`
	// Timeout bounds one call, redirects included. Default 30s.
	Timeout Duration `yaml:"timeout"`
	// Search is the provider of web_search; without one, there is no
	// web_search (an MCP server's search tool can stand in).
	Search WebSearchConfig `yaml:"search"`
}

// WebSearchConfig is web.search: an HTTP JSON search endpoint.
type WebSearchConfig struct {
	// Provider is "searxng" (a SearXNG instance's JSON API, format=json);
	// empty is no web_search.
	Provider string `yaml:"provider"`
	// URL is the endpoint, such as https://searx.example.org/search; the
	// query goes in its q parameter.
	URL string `yaml:"url"`
	// MaxResults bounds the results of one search. Default 10, at most 50.
	MaxResults int `yaml:"maxResults"`
}

// HooksConfig is the hooks section: programs that get a tool call, its
// result or a prompt as JSON on stdin, run in the command sandbox
// (tools.sandbox, tools.network) with the workspace root as working
// directory. A hook is workspace content: it runs only once the person
// has approved its command line and the files it names (nexus hooks
// trust), and a change of either makes it wait for approval again.
type HooksConfig struct {
	// PreToolUse run before a tool call, after its arguments are checked
	// and before the permission question, for every door (agent, apps,
	// MCP clients). Exit code 2, or {"decision":"deny","reason":...} on
	// stdout, denies the call with that message; {"decision":"ask"} asks
	// the person even where the policy would allow. A hook that fails,
	// times out or is not approved denies the call.
	PreToolUse []HookConfig `yaml:"preToolUse"`
	// PostToolUse run after a tool call ran, with its result; what they
	// say ({"additionalContext":...}, or stderr with exit code 2) is
	// added for the model. A hook that fails is logged and ignored.
	PostToolUse []HookConfig `yaml:"postToolUse"`
	// UserPromptSubmit run when a prompt is submitted to an agent session,
	// before it goes to the model: exit code 2 or {"decision":"block"}
	// blocks it, with the reason shown to the person; plain stdout or
	// {"additionalContext":...} is added to the prompt. A hook that fails,
	// times out or is not approved blocks the prompt.
	UserPromptSubmit []PromptHookConfig `yaml:"userPromptSubmit"`
}

// HookConfig is one hook.
type HookConfig struct {
	// Match is a regular expression the whole tool name must match
	// ("write_file|edit_file"; an MCP server's tool is SERVER/TOOL);
	// empty or "*" matches every tool.
	Match string `yaml:"match"`
	// Command is the program and its arguments; a program with a slash
	// (./scripts/check.sh) is a path from the workspace root. The
	// approval pins them and the content of every file of the workspace
	// they name.
	Command []string `yaml:"command"`
	// Timeout bounds one run; default 30s, at most 10m.
	Timeout Duration `yaml:"timeout"`
}

// PromptHookConfig is one userPromptSubmit hook: a hook that matches no
// tool.
type PromptHookConfig struct {
	// Command is the program and its arguments, as a tool hook's.
	Command []string `yaml:"command"`
	// Timeout bounds one run; default 30s, at most 10m.
	Timeout Duration `yaml:"timeout"`
}

// HookEvents are the names of the hook events, in the order they happen
// to a prompt and its calls.
var HookEvents = []string{"userPromptSubmit", "preToolUse", "postToolUse"}

// Of returns the hooks of an event (one of [HookEvents]); a prompt hook's
// Match is empty.
func (c HooksConfig) Of(event string) []HookConfig {
	switch event {
	case "preToolUse":
		return c.PreToolUse
	case "postToolUse":
		return c.PostToolUse
	case "userPromptSubmit":
		out := make([]HookConfig, len(c.UserPromptSubmit))
		for i, h := range c.UserPromptSubmit {
			out[i] = HookConfig{Command: h.Command, Timeout: h.Timeout}
		}
		return out
	}
	return nil
}

// defaultHookTimeout and maxHookTimeout bound a hook's run.
const (
	defaultHookTimeout = 30 * time.Second
	maxHookTimeout     = 10 * time.Minute
)

// CheckpointsConfig is the checkpoints section: every tool call that
// changes files (write_file, edit_file, execute_command, a local MCP
// server's tool) is recorded in .nexus/history.git under refs/nexus/ (never
// the workspace's own .git), to be listed, diffed, undone and redone.
type CheckpointsConfig struct {
	// Enabled records checkpoints; false records none, and undo has
	// nothing to restore.
	Enabled bool `yaml:"enabled"`
	// MaxFileSize is the largest changed file recorded: a larger one is
	// listed as skipped with its checkpoint, and cannot be undone.
	MaxFileSize Size `yaml:"maxFileSize"`
	// MaxStoreSize bounds the checkpoints' share of the history store: past
	// it the oldest sessions' checkpoints are pruned (`nexus checkpoints
	// gc` prunes at once).
	MaxStoreSize Size `yaml:"maxStoreSize"`
	// MaxFiles bounds the files compared before and after a command: in a
	// workspace with more, a command's changes are listed as skipped.
	MaxFiles int `yaml:"maxFiles"`
}

// ACPConfig is the acp section: the agent in the editors that speak the
// Agent Client Protocol (nexusd acp).
type ACPConfig struct {
	// Mode is the mode a session starts in: "default" (the policy as
	// configured), "ask" (every call that changes something is asked),
	// "auto-edit" (edits in the workspace run without asking) or
	// "read-only" (only tools that read run).
	Mode string `yaml:"mode"`
	// Terminal is where execute_command runs for a client that offers
	// terminals: "nexus" (Nexus's command sandbox, the output in the tool
	// call) or "client" (the editor's terminal, where the person watches
	// it, outside Nexus's sandbox).
	Terminal string `yaml:"terminal"`
}

// DefinitionsConfig is the definitions section: where definition files live.
type DefinitionsConfig struct {
	// Root is the definitions directory, relative to the workspace root.
	Root string `yaml:"root"`
	// MaxFileSize is the largest definition file accepted.
	MaxFileSize Size `yaml:"maxFileSize"`
	// Watch records the edits made on disk while the daemon runs; without
	// it they are recorded at the next start.
	Watch bool `yaml:"watch"`
	// Debounce is how long a file must stay unchanged on disk before its
	// edit is recorded: more than 0, at most 10s.
	Debounce Duration `yaml:"debounce"`
}

// RuntimeConfig is the runtime section: the store of runtime key/values.
type RuntimeConfig struct {
	// Backend is "bbolt" (a file of this workspace) or "redis" (a server
	// that several daemons may share).
	Backend string `yaml:"backend"`
	// Path is the bbolt file, relative to the workspace root.
	Path string `yaml:"path"`
	// URL is the Redis server, for backend redis:
	// redis://[user:${REDIS_PASSWORD}@]host:6379/0, rediss:// for TLS, or
	// unix:///path/to/redis.sock.
	URL string `yaml:"url"`
	// Prefix starts every Redis key and channel of the runtime values;
	// daemons with the same URL and prefix share their values.
	Prefix string `yaml:"prefix"`
	// MaxValueSize is the largest runtime value accepted.
	MaxValueSize Size `yaml:"maxValueSize"`
	// PurgeInterval is how often the values whose TTL has passed are
	// removed from the bbolt file (they are never read after it passes).
	PurgeInterval Duration `yaml:"purgeInterval"`
	// Cache, for backend redis, keeps the values read in the daemon's
	// memory until Redis reports a change (client-side caching): reads
	// through another daemon may see a write a moment late.
	Cache bool `yaml:"cache"`
	// CacheSize bounds the cache's memory.
	CacheSize Size `yaml:"cacheSize"`
}

// AppConfig is one sandbox application and what it may do.
type AppConfig struct {
	// ID names the app; it owns <definitions root>/<ID>/ and the runtime
	// namespace ID.
	ID string `yaml:"id"`
	// Token is the app's gRPC token; at most one of token and tokenFile
	// is set. With neither, nexusd generates one into
	// .nexus/run/apps/ID.token and keeps it.
	Token string `yaml:"token"`
	// TokenFile is a file holding the app's gRPC token, relative to the
	// workspace root.
	TokenFile string `yaml:"tokenFile"`
	// Certificate is the SHA-256 fingerprint of the app's TLS client
	// certificate (64 hex digits, colons allowed, as openssl x509
	// -fingerprint -sha256 prints it): over gRPC on TCP with client
	// certificates (grpc.tls.clientCA), a connection that presents it is
	// this app, with or without the app's token.
	Certificate string `yaml:"certificate"`
	// Grants is what the app may reach beyond its own directory and
	// namespace.
	Grants GrantsConfig `yaml:"grants"`
}

// GrantsConfig is what an app may reach beyond its own directory and namespace.
type GrantsConfig struct {
	// Definitions lists definition paths outside the app's own directory
	// that it may read or write.
	Definitions DefinitionGrants `yaml:"definitions"`
	// Runtime lists other apps' runtime namespaces.
	Runtime []string `yaml:"runtime"`
	// Tools is the app's own tool policy, over tools.policy.
	Tools ToolGrants `yaml:"tools"`
	// Network lets the app's commands use the network; they have none
	// by default.
	Network bool `yaml:"network"`
}

// DefinitionGrants lists definition paths an app may read or write.
type DefinitionGrants struct {
	// Read lists patterns of definition paths, relative to the
	// definitions root, that the app may read: "*" matches within one
	// name, "**" any number of names ("shared/**"), and a pattern that
	// names a directory covers everything below it.
	Read []string `yaml:"read"`
	// Write lists patterns, as read does, of definition paths the app may
	// write; write implies read.
	Write []string `yaml:"write"`
}

// ToolGrants is an app's tool policy by tool name. A name is in at most one list.
type ToolGrants struct {
	// Allow lists the tools (name patterns, as in tools.policy) the app
	// calls without asking.
	Allow []string `yaml:"allow"`
	// Ask lists the tools whose calls by the app ask the person first.
	Ask []string `yaml:"ask"`
	// Deny lists the tools the app may not call.
	Deny []string `yaml:"deny"`
}

// ToolsConfig is the tools section: limits and policy for tool execution.
type ToolsConfig struct {
	// Timeout bounds a command of execute_command unless its call asks
	// for another (timeoutSeconds, at most an hour).
	Timeout Duration `yaml:"timeout"`
	// OutputLimit bounds a command's stdout and stderr together (the
	// head and tail are kept), and an MCP tool's result.
	OutputLimit Size `yaml:"outputLimit"`
	// MaxArgumentsSize refuses a call whose arguments are larger; by
	// default 2 × definitions.maxFileSize + 1 MiB, so that write_file
	// carries a definition file of the largest size even when JSON
	// escaping doubles it.
	MaxArgumentsSize Size `yaml:"maxArgumentsSize"`
	// Sandbox is where execute_command's commands run: "read-only" (they
	// read the workspace and write nowhere), "workspace-write" (they may
	// write in the workspace) or "off" (no sandbox).
	Sandbox string `yaml:"sandbox"`
	// Network lets commands use the network; without it they have none
	// (apps[].grants.network lets one app's commands).
	Network bool `yaml:"network"`
	// EnvAllowlist names the environment variables passed to commands. When
	// set it replaces the default list.
	EnvAllowlist []string `yaml:"envAllowlist"`
	// Policy maps a tool name to "allow", "ask" or "deny".
	Policy map[string]string `yaml:"policy"`
}

// MCPConfig is the mcp section: how MCP servers are called and restarted.
type MCPConfig struct {
	// CallTimeout bounds one call of an MCP server's tool.
	CallTimeout Duration `yaml:"callTimeout"`
	// StartupTimeout bounds an MCP server's start, up to its list of
	// tools.
	StartupTimeout Duration `yaml:"startupTimeout"`
	// Restart is when a server that exited is started again: "always",
	// "on-failure" or "never".
	Restart string `yaml:"restart"`
	// MaxRestarts bounds the restarts of one server; 0 is restart
	// "never".
	MaxRestarts int `yaml:"maxRestarts"`
	// Separator joins a server name and a tool name; never empty.
	Separator string `yaml:"separator"`
	// HTTP is the MCP gateway's Streamable HTTP endpoint (nexusd
	// --mcp-addr overrides its address).
	HTTP MCPHTTPConfig `yaml:"http"`
	// Sampling answers MCP servers' sampling requests with a model.
	Sampling MCPSamplingConfig `yaml:"sampling"`
}

// MCPSamplingConfig is mcp.sampling: the llm profile that answers MCP
// servers' sampling requests, the profiles their model hints may pick
// instead (default: every llm profile), and a cap on the tokens a request
// may ask for (0: none beyond the profile's maxOutputTokens). With Client
// (default false), a request made during an MCP gateway client's call goes
// to that client when it declared sampling, before the profile. With
// neither a profile nor Client, servers are told the hub does not sample.
type MCPSamplingConfig struct {
	// Profile names the llm profile that answers sampling requests.
	Profile string `yaml:"profile"`
	// Profiles are the llm profiles a request's model hints may pick
	// instead of profile; empty is every llm profile.
	Profiles []string `yaml:"profiles"`
	// MaxTokens caps the tokens a request may ask for; 0 is no cap beyond
	// the profile's maxOutputTokens.
	MaxTokens int `yaml:"maxTokens"`
	// Client sends a request made during an MCP gateway client's call to
	// that client, when it declared sampling, before the profile.
	Client bool `yaml:"client"`
}

// MCPHTTPConfig is mcp.http: where the daemon serves MCP clients over
// Streamable HTTP (/mcp), which browser origins and host names besides
// loopback ones it accepts, and how many sessions it keeps, for how long.
type MCPHTTPConfig struct {
	// Address is empty for none, or a loopback "host:port".
	Address string `yaml:"address"`
	// AllowedOrigins are the origins ("https://app.example") a browser
	// page may call from, besides loopback ones.
	AllowedOrigins []string `yaml:"allowedOrigins"`
	// AllowedHosts are the Host header names accepted besides loopback
	// ones (a name that resolves to this machine).
	AllowedHosts []string `yaml:"allowedHosts"`
	// SessionIdleTimeout closes a session that sent no request for that
	// long (default 30m, at most 24h); its client starts a new one.
	SessionIdleTimeout Duration `yaml:"sessionIdleTimeout"`
	// MaxSessionsPerToken bounds the sessions one token holds open at once
	// (default 16, 1 to 10000): one more closes the token's least recently
	// used session.
	MaxSessionsPerToken int `yaml:"maxSessionsPerToken"`
}

// LLMConfig is the llm section: the models the agent may talk to, as
// named profiles, and the one it uses unless told otherwise. A profile's
// keys written directly under llm (provider, model, ...) are the profile
// "default", for a workspace with one model.
type LLMConfig struct {
	// Default names the profile of new sessions; empty is the only
	// profile, or "default".
	Default string `yaml:"default"`
	// Profiles are the models by name.
	Profiles   map[string]LLMProfile `yaml:"profiles"`
	LLMProfile `yaml:",inline"`
}

// LLMProfile is one model: llm.profiles.NAME.
type LLMProfile struct {
	// Provider is "openai", "anthropic", "gemini" or "openai-compatible".
	Provider string `yaml:"provider"`
	// API picks the wire API where a provider has several: "responses"
	// (openai's default) or "chat" (openai-compatible's default),
	// "messages" for a compatible server that speaks Anthropic's, and
	// "generateContent" (gemini's).
	API string `yaml:"api"`
	// Model is the provider's name of the model ("gpt-5", "claude-sonnet-4-5").
	Model string `yaml:"model"`
	// APIKeyEnv names the environment variable that holds the API key
	// (default OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY).
	APIKeyEnv string `yaml:"apiKeyEnv"`
	// BaseURL replaces the provider's endpoint; openai-compatible needs it.
	BaseURL string `yaml:"baseURL"`
	// Temperature is the sampling temperature, 0 to 2; unset is the
	// provider's default.
	Temperature *float64 `yaml:"temperature"`
	// MaxOutputTokens bounds the tokens of one answer; 0 is the
	// provider's default.
	MaxOutputTokens int `yaml:"maxOutputTokens"`
	// ContextWindow is the model's window in tokens: token_budget pruning
	// keeps the history within it, less maxOutputTokens.
	ContextWindow int `yaml:"contextWindow"`
	// Prices are what the model costs, to count a session's cost.
	Prices LLMPrices `yaml:"prices"`
	// ExtraBody is merged into the JSON body of every request (vendor
	// parameters: tool_choice, logit_bias, provider routing).
	ExtraBody map[string]any `yaml:"extraBody"`
	// Images says whether the model takes images with a prompt (an ACP
	// editor's pasted screenshot); unset, the hosted providers' models
	// do and a baseURL's server is assumed not to.
	Images *bool `yaml:"images"`
	// Key is "llm" for the profile written directly under llm (named
	// "default"), so that messages name the keys the file has; empty is
	// llm.profiles.NAME.
	Key string `yaml:"-"`
}

// LLMPrices are the prices of a million tokens; unset prices make the
// cost of a session unknown (its tokens are still counted).
type LLMPrices struct {
	// Input is the price of a million input tokens.
	Input float64 `yaml:"input"`
	// Output is the price of a million output tokens.
	Output float64 `yaml:"output"`
	// Cached is the price of input tokens read from the prompt cache;
	// default the input price.
	Cached float64 `yaml:"cached"`
	// Currency is a label for people; default USD.
	Currency string `yaml:"currency"`
}

// AgentConfig is the agent section: how an agent session runs.
type AgentConfig struct {
	// MaxSteps bounds the model requests of one prompt; default 25.
	MaxSteps int `yaml:"maxSteps"`
	// Tools, when set, are the only tools the agent is offered (name
	// patterns as in tools.policy: "read_file", "github/*"); the caller's
	// own grants bound them further.
	Tools []string `yaml:"tools"`
	// MaxToolResult bounds a tool result as it enters the history; a
	// longer one keeps its head and tail. Default 32KiB.
	MaxToolResult Size `yaml:"maxToolResult"`
	// MaxAnswerSize bounds the text and thoughts of one model answer,
	// together. A longer answer ends that request with an error; nothing
	// past the limit is read or kept, and the session goes on. Default
	// 1MiB; at most 1GiB.
	MaxAnswerSize Size `yaml:"maxAnswerSize"`
	// MaxToolCallSize bounds each tool call of one model answer (its
	// arguments, name and id); the calls of one answer together may have
	// four times as much. Over it, as for maxAnswerSize. Default 1MiB; at
	// most 1GiB.
	MaxToolCallSize Size `yaml:"maxToolCallSize"`
	// CommandDirs are directories of the workspace, besides commands/ of
	// the definitions root, whose markdown files are special commands
	// (/NAME, /DIR:NAME in a subdirectory); default .claude/commands. The
	// definitions root's win over these, and an earlier one over a later.
	CommandDirs []string `yaml:"commandDirs"`
	// MaxSubagents bounds the subagents (the task tool) of one session
	// that run at once: more task calls of one step wait for a place.
	// Default 4; at most 64.
	MaxSubagents int `yaml:"maxSubagents"`
}

// ProfileNames are the names of the configured profiles, sorted.
func (c LLMConfig) ProfileNames() []string {
	return slices.Sorted(maps.Keys(c.Profiles))
}

// MessagesConfig is the messages section: the agent's message history.
type MessagesConfig struct {
	// MaxLength is the most messages kept; at least 1.
	MaxLength int `yaml:"maxLength"`
	// Pruning is "remove_oldest" (or its older name "oldest-first"),
	// "token_budget" (the model's window less the reply's reserve) or "none".
	Pruning string `yaml:"pruning"`
	// KeepSystem keeps the system messages whatever the pruning.
	KeepSystem bool `yaml:"keepSystem"`
}

// ContextConfig is the context section: the agent's dynamic context (the
// DCM): its initial prompt, sections and documents.
type ContextConfig struct {
	// File is the context file, relative to the workspace root; the agent
	// reads it again when it changes, and a missing file is an empty
	// context.
	File string `yaml:"file"`
	// Instructions are the names of the project instruction files, read in
	// the workspace root and in each directory the agent works in (a file
	// its core tools read, write, list or search, or a command's cwd) and
	// those between: in each directory, the first of these names it holds
	// is read, so CLAUDE.md and GEMINI.md stand in where there is no
	// AGENTS.md. An empty list reads none.
	Instructions []string `yaml:"instructions"`
	// MaxInstructionsSize bounds the instruction files together: the
	// files nearer the root come first, the one that passes the bound is
	// cut there and those after it are left out (/context says which).
	MaxInstructionsSize Size `yaml:"maxInstructionsSize"`
	// AutoCompact is the share of the profile's contextWindow a model
	// request may fill before the agent compacts it: the older turns are
	// summarised by the model, as /compact does, and the request is sent
	// smaller. 0 turns it off; a profile without contextWindow is never
	// compacted. A summary that fails, or is not smaller, falls back to
	// pruning the oldest turns. The system prompt and the project
	// instructions are never summarised.
	AutoCompact float64 `yaml:"autoCompact"`
}

// LogConfig is the log section: where the daemon writes its log, and how much.
type LogConfig struct {
	// Level is "debug", "info", "warn" or "error"; nexusd --log-level
	// overrides it.
	Level string `yaml:"level"`
	// File is the log file, relative to the workspace root; empty is
	// standard error. nexusd --log-file overrides it.
	File string `yaml:"file"`
}

// GRPCConfig is the grpc section: the gRPC API of apps and the CLI, on the
// workspace's unix socket and, when set, on a TCP address.
type GRPCConfig struct {
	// Address is empty for the unix socket only, or "host:port", served
	// with TLS.
	Address string `yaml:"address"`
	// TLS is the certificate of the TCP address; without one, nexusd
	// generates a self-signed certificate into .nexus/tls/.
	TLS TLSConfig `yaml:"tls"`
	// MaxMessageSize bounds one message; it is never less than what the
	// largest definition file (twice, for a diff) and the largest tool
	// arguments need, plus 1 MiB, which is also the default (0).
	MaxMessageSize Size `yaml:"maxMessageSize"`
}

// TLSConfig is grpc.tls: PEM files, relative to the workspace root.
type TLSConfig struct {
	// Cert is the server's certificate (chain); cert and key go
	// together.
	Cert string `yaml:"cert"`
	// Key is the private key of cert (mode 0600).
	Key string `yaml:"key"`
	// ClientCA, when set, makes clients present a certificate signed by
	// one of its certificates (mutual TLS); apps[].certificate maps a
	// client certificate to an app.
	ClientCA string `yaml:"clientCA"`
}

const (
	kib Size = 1 << 10
	mib Size = 1 << 20
	gib Size = 1 << 30
)

// maxSessionsPerToken is the largest mcp.http.maxSessionsPerToken: each
// open session holds memory in the daemon.
const maxSessionsPerToken = 10000

// maxSubagents is the most agent.maxSubagents may be.
const maxSubagents = 64

// DefaultConfig returns the configuration of a workspace without a config file.
func DefaultConfig() *Config {
	return &Config{
		Definitions: DefinitionsConfig{
			Root:        ".nexus/definitions",
			MaxFileSize: 10 * mib,
			Watch:       true,
			Debounce:    Duration(100 * time.Millisecond),
		},
		Runtime: RuntimeConfig{
			Backend:       "bbolt",
			Path:          ".nexus/runtime.db",
			Prefix:        state.DefaultRedisPrefix,
			MaxValueSize:  mib,
			PurgeInterval: Duration(time.Second),
			CacheSize:     state.DefaultRedisCacheSize,
		},
		Tools: ToolsConfig{
			Timeout:          Duration(60 * time.Second),
			OutputLimit:      mib,
			MaxArgumentsSize: 21 * mib, // 2 × definitions.maxFileSize + 1 MiB
			Sandbox:          "workspace-write",
			Network:          false,
			EnvAllowlist:     []string{"PATH", "HOME", "LANG", "TERM"},
		},
		MCP: MCPConfig{
			CallTimeout:    Duration(60 * time.Second),
			StartupTimeout: Duration(30 * time.Second),
			Restart:        "on-failure",
			MaxRestarts:    5,
			Separator:      "__",
			HTTP:           MCPHTTPConfig{SessionIdleTimeout: Duration(30 * time.Minute), MaxSessionsPerToken: 16},
		},
		Agent: AgentConfig{MaxSteps: 25, MaxToolResult: 32 * kib, MaxAnswerSize: mib, MaxToolCallSize: mib,
			CommandDirs: []string{".claude/commands"}, MaxSubagents: 4},
		Messages: MessagesConfig{MaxLength: 100, Pruning: "oldest-first", KeepSystem: true},
		Context: ContextConfig{File: "FRAMEWORK_CONTEXT.md", Instructions: []string{"AGENTS.md", "CLAUDE.md", "GEMINI.md"},
			MaxInstructionsSize: 32 * kib, AutoCompact: 0.8},
		Log: LogConfig{Level: "info"},
		ACP: ACPConfig{Mode: "default", Terminal: "nexus"},
		Checkpoints: CheckpointsConfig{
			Enabled:      true,
			MaxFileSize:  2 * mib,
			MaxStoreSize: gib,
			MaxFiles:     100000,
		},
		Web: WebConfig{MaxFetchSize: 5 * mib, MaxTextSize: 24 * kib, Timeout: Duration(30 * time.Second),
			Search: WebSearchConfig{MaxResults: 10}},
	}
}

// LoadConfig reads the file at path; a missing file gives DefaultConfig() and no error.
// getenv resolves ${VAR} / ${VAR:-default}; nil means os.LookupEnv.
// Problems in the file are [*ConfigError] values, joined with [errors.Join]
// when there are several.
func LoadConfig(path string, getenv func(string) (string, bool)) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultConfig(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	return ParseConfig(path, data, getenv)
}

// ParseConfig is LoadConfig on bytes; name is used in error messages.
//
// Every scalar value (never a key) is expanded before it is decoded:
// ${VAR} is the variable's value and an error when it is unset,
// ${VAR:-default} is default when VAR is unset or empty, and $$ is a literal $.
// A null value (a key with nothing after it, or ~) keeps the default.
func ParseConfig(name string, data []byte, getenv func(string) (string, bool)) (*Config, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	cfg := DefaultConfig()

	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, nil
		}
		return nil, syntaxError(name, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, syntaxError(name, err)
		}
		return nil, &ConfigError{File: name, Line: next.Line, Column: next.Column,
			Msg: "a second YAML document; the config must be a single document"}
	}
	if len(doc.Content) == 0 {
		return cfg, nil
	}

	d := &decoder{
		name:     name,
		getenv:   getenv,
		nodes:    make(map[string]*yaml.Node),
		bad:      make(map[string]bool),
		unusable: make(map[*yaml.Node]bool),
	}
	root := doc.Content[0]
	d.expand(root)
	d.value("", root, reflect.ValueOf(cfg).Elem())
	d.check(cfg)
	if len(d.errs) == 0 {
		return cfg, nil
	}
	slices.SortStableFunc(d.errs, func(a, b *ConfigError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	if len(d.errs) == 1 {
		return nil, d.errs[0]
	}
	errs := make([]error, len(d.errs))
	for i, e := range d.errs {
		errs[i] = e
	}
	return nil, errors.Join(errs...)
}

// ConfigError is one problem in a configuration file, at a position when known.
type ConfigError struct {
	File   string
	Line   int // 1-based; 0 when unknown
	Column int // 1-based; 0 when unknown
	Msg    string
}

func (e *ConfigError) Error() string {
	switch {
	case e.Line == 0:
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	case e.Column == 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
}

// syntaxError turns a yaml error ("yaml: line 3: did not find expected key")
// into a ConfigError.
func syntaxError(name string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		num, after, ok := strings.Cut(rest, ": ")
		if line, err := strconv.Atoi(num); ok && err == nil {
			return &ConfigError{File: name, Line: line, Msg: after}
		}
	}
	return &ConfigError{File: name, Msg: msg}
}

// Size is a number of bytes. In YAML it is an integer or a number with a
// unit: B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024),
// as in "10MiB" or "100KB". It is never negative.
type Size int64

// UnmarshalYAML implements [yaml.Unmarshaler].
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected a size, got %s", describe(n))
	}
	v, err := parseSize(n.Value)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// String formats s with the largest binary unit that divides it, as "10MiB".
func (s Size) String() string {
	for _, u := range []struct {
		unit string
		n    Size
	}{{"GiB", gib}, {"MiB", mib}, {"KiB", kib}} {
		if s != 0 && s%u.n == 0 {
			return strconv.FormatInt(int64(s/u.n), 10) + u.unit
		}
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}

func parseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	neg := strings.HasPrefix(t, "-")
	if neg {
		t = t[1:]
	}
	digits := 0
	for digits < len(t) && '0' <= t[digits] && t[digits] <= '9' {
		digits++
	}
	var unit Size
	switch strings.TrimSpace(t[digits:]) {
	case "", "B":
		unit = 1
	case "KB":
		unit = 1000
	case "MB":
		unit = 1000 * 1000
	case "GB":
		unit = 1000 * 1000 * 1000
	case "KiB":
		unit = kib
	case "MiB":
		unit = mib
	case "GiB":
		unit = gib
	}
	if digits == 0 || unit == 0 {
		return 0, fmt.Errorf("%q is not a size (examples: 1048576, 10MiB)", s)
	}
	if neg {
		return 0, fmt.Errorf("%q must not be negative", s)
	}
	n, err := strconv.ParseInt(t[:digits], 10, 64)
	if err != nil || n > math.MaxInt64/int64(unit) {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return Size(n) * unit, nil
}

// Duration is a [time.Duration] that YAML writes as a Go duration string,
// as in "30s", "1m30s" or "250ms". It is never negative.
type Duration time.Duration

// UnmarshalYAML implements [yaml.Unmarshaler].
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("expected a duration, got %s", describe(n))
	}
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return fmt.Errorf("%q is not a duration (examples: 30s, 1m30s, 250ms)", n.Value)
	}
	if v < 0 {
		return fmt.Errorf("%q must not be negative", n.Value)
	}
	*d = Duration(v)
	return nil
}

func (d Duration) String() string { return time.Duration(d).String() }

// A decoder walks a YAML node tree against the Config struct, setting fields
// and collecting every problem with its position.
type decoder struct {
	name   string
	getenv func(string) (string, bool)
	errs   []*ConfigError

	// nodes holds the value node of each path that was set ("tools.sandbox",
	// "apps[0].id"), for the checks that run after decoding.
	nodes map[string]*yaml.Node
	// bad holds the paths whose value was already reported.
	bad map[string]bool
	// unusable holds the scalars whose expansion failed.
	unusable map[*yaml.Node]bool
}

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	e := &ConfigError{File: d.name, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

// fail reports a problem with the value at path and marks the path as bad.
func (d *decoder) fail(path string, n *yaml.Node, format string, args ...any) {
	d.bad[path] = true
	d.errorf(n, orTop(path)+": "+format, args...)
}

// expand replaces environment references in every scalar value under n.
// Keys are left alone, and aliases are expanded once, where their anchor is.
func (d *decoder) expand(n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			d.expand(n.Content[i])
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			d.expand(c)
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "$") {
			return
		}
		v, err := expandEnv(n.Value, d.getenv)
		if err != nil {
			d.errorf(n, "%v", err)
			d.unusable[n] = true
			return
		}
		if v != n.Value && n.Style == 0 {
			// A plain scalar is resolved again from its new text, so
			// "maxLength: ${N}" can be an integer.
			n.Tag = ""
		}
		n.Value = v
	}
}

func expandEnv(s string, getenv func(string) (string, bool)) (string, error) {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i:]
		switch {
		case strings.HasPrefix(s, "$$"):
			b.WriteByte('$')
			s = s[2:]
		case strings.HasPrefix(s, "${"):
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return "", fmt.Errorf("%q has no closing } (write $$ for a literal $)", s)
			}
			ref := s[:end+1]
			name, def, hasDefault := strings.Cut(s[2:end], ":-")
			s = s[end+1:]
			if !isEnvName(name) {
				return "", fmt.Errorf("bad reference %q (write ${NAME} or ${NAME:-default}, or $$ for a literal $)", ref)
			}
			v, ok := getenv(name)
			switch {
			case hasDefault && v == "":
				b.WriteString(def)
			case !ok:
				return "", fmt.Errorf("environment variable %s is not set (write ${%s:-default} to give a default)", name, name)
			default:
				b.WriteString(v)
			}
		default:
			b.WriteByte('$')
			s = s[1:]
		}
	}
}

// ExpandEnv expands ${VAR}, ${VAR:-default} and $$ in s, like the config file; getenv nil means os.LookupEnv.
func ExpandEnv(s string, getenv func(string) (string, bool)) (string, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	return expandEnv(s, getenv)
}

func isEnvName(s string) bool {
	for i, c := range s {
		if c != '_' && !('A' <= c && c <= 'Z') && !('a' <= c && c <= 'z') && (i == 0 || !('0' <= c && c <= '9')) {
			return false
		}
	}
	return s != ""
}

// value decodes n into v, which must be addressable, and records n under path.
func (d *decoder) value(path string, n *yaml.Node, v reflect.Value) {
	at := n // where the value is written, for messages
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if d.unusable[n] {
		d.bad[path] = true
		return
	}
	d.nodes[path] = at
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}

	if u, ok := v.Addr().Interface().(yaml.Unmarshaler); ok {
		if err := u.UnmarshalYAML(n); err != nil {
			d.fail(path, at, "%v", err)
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.structure(path, at, n, v)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail(path, at, "expected a list, got %s", describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, e := range n.Content {
			d.value(fmt.Sprintf("%s[%d]", path, i), e, s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		d.mapping(path, at, n, v)
	case reflect.Interface:
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.fail(path, at, "%v", strings.TrimPrefix(err.Error(), "yaml: "))
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.fail(path, at, "expected a string, got %s", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		d.value(path, n, e.Elem())
		v.Set(e)
	case reflect.Float64:
		plain := *n
		plain.Tag, plain.Style = "", 0
		var f float64
		if n.Kind != yaml.ScalarNode || plain.Decode(&f) != nil {
			d.fail(path, at, "%s is not a number", describe(n))
			return
		}
		v.SetFloat(f)
	case reflect.Bool, reflect.Int:
		// Decode from the text alone, so a quoted "${N}" works too.
		plain := *n
		plain.Tag, plain.Style = "", 0
		// yaml decodes 1.5 into an int as 1: a fraction is refused here.
		fraction := v.Kind() == reflect.Int && plain.ShortTag() == "!!float"
		if n.Kind != yaml.ScalarNode || fraction || plain.Decode(v.Addr().Interface()) != nil {
			want := "an integer"
			if v.Kind() == reflect.Bool {
				want = "a boolean (true or false)"
			}
			if n.Kind != yaml.ScalarNode {
				d.fail(path, at, "expected %s, got %s", want, describe(n))
			} else {
				d.fail(path, at, "%q is not %s", n.Value, want)
			}
		}
	default:
		d.fail(path, at, "cannot decode into %s", v.Type())
	}
}

// structure decodes a mapping into the struct v by the fields' yaml tags.
func (d *decoder) structure(path string, at, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.fail(path, at, "expected a mapping, got %s", describe(n))
		return
	}
	var known []string
	fields := make(map[string][]int)
	var collect func(t reflect.Type, index []int)
	collect = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			name, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			at := append(slices.Clone(index), i)
			if opts == "inline" {
				collect(t.Field(i).Type, at)
				continue
			}
			if name == "-" {
				continue // not in the file (LLMProfile.Key)
			}
			known = append(known, name)
			fields[name] = at
		}
	}
	collect(v.Type(), nil)
	d.pairs(path, n, func(key string, k, val *yaml.Node) {
		i, ok := fields[key]
		if !ok {
			where := ""
			if path != "" {
				where = " in " + path
			}
			d.errorf(k, "unknown key %q%s (known: %s)", key, where, strings.Join(known, ", "))
			return
		}
		d.value(join(path, key), val, v.FieldByIndex(i))
	})
}

// mapping decodes a mapping into the map v, whose keys are strings.
func (d *decoder) mapping(path string, at, n *yaml.Node, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.fail(path, at, "expected a mapping, got %s", describe(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	d.pairs(path, n, func(key string, _, val *yaml.Node) {
		e := reflect.New(v.Type().Elem()).Elem()
		d.value(join(path, key), val, e)
		m.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), e)
	})
	v.Set(m)
}

// pairs calls f for each key and value of the mapping n, reporting keys that
// are not strings or appear twice.
func (d *decoder) pairs(path string, n *yaml.Node, f func(key string, k, v *yaml.Node)) {
	seen := make(map[string]*yaml.Node)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case k.Kind != yaml.ScalarNode:
			d.errorf(k, "%s: keys must be strings, got %s", orTop(path), describe(k))
			continue
		case k.ShortTag() == "!!merge":
			d.errorf(k, "%s: merge keys (<<) are not supported", orTop(path))
			continue
		}
		if first, ok := seen[k.Value]; ok {
			d.errorf(k, "%s: duplicate key %q (first at line %d)", orTop(path), k.Value, first.Line)
			continue
		}
		seen[k.Value] = k
		f(k.Value, k, v)
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orTop(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "an alias"
}

// check reports values that decoded but are not allowed.
func (d *decoder) check(c *Config) {
	d.nonEmpty("definitions.root", c.Definitions.Root, ` (a directory of the workspace, such as "definitions"; not one that holds .nexus)`)
	d.positiveAtMost("definitions.debounce", c.Definitions.Debounce, 10*time.Second)

	if d.oneOf("runtime.backend", c.Runtime.Backend, "bbolt", "redis") && c.Runtime.Backend == "redis" {
		if n := d.nodes["runtime.url"]; c.Runtime.URL == "" && !d.bad["runtime.url"] {
			d.fail("runtime.url", cmp.Or(n, d.nodes["runtime.backend"]),
				"must not be empty with backend redis (redis://[user:${REDIS_PASSWORD}@]host:6379/0, rediss:// for TLS)")
		} else if err := state.CheckRedisURL(c.Runtime.URL); err != nil && !d.bad["runtime.url"] {
			d.fail("runtime.url", n, "%v", err)
		}
	}
	d.nonEmpty("runtime.path", c.Runtime.Path, "")
	d.nonEmpty("runtime.prefix", c.Runtime.Prefix, ` (the start of every Redis key, such as "nexus:")`)
	if c.Runtime.Cache && c.Runtime.Backend == "bbolt" && !d.bad["runtime.cache"] {
		d.fail("runtime.cache", d.nodes["runtime.cache"], "applies to backend redis only (bbolt reads are local already)")
	}
	if !d.bad["runtime.cacheSize"] && c.Runtime.CacheSize <= 0 {
		d.fail("runtime.cacheSize", d.nodes["runtime.cacheSize"], "must be more than 0")
	}

	d.apps(c.Apps)

	if n := d.nodes["tools.maxArgumentsSize"]; n == nil || n.ShortTag() == "!!null" {
		c.Tools.MaxArgumentsSize = 2*c.Definitions.MaxFileSize + mib // follows maxFileSize
	} else if !d.bad["tools.maxArgumentsSize"] && c.Tools.MaxArgumentsSize == 0 {
		d.fail("tools.maxArgumentsSize", n, "must be more than 0")
	}
	d.oneOf("tools.sandbox", c.Tools.Sandbox, "read-only", "workspace-write", "off")
	for _, name := range slices.Sorted(maps.Keys(c.Tools.Policy)) {
		d.oneOf("tools.policy."+name, c.Tools.Policy[name], "allow", "ask", "deny")
	}

	d.oneOf("mcp.restart", c.MCP.Restart, "always", "on-failure", "never")
	d.atLeast("mcp.maxRestarts", c.MCP.MaxRestarts, 0)
	d.nonEmpty("mcp.separator", c.MCP.Separator, "")
	d.positiveAtMost("mcp.http.sessionIdleTimeout", c.MCP.HTTP.SessionIdleTimeout, 24*time.Hour)
	d.atLeast("mcp.http.maxSessionsPerToken", c.MCP.HTTP.MaxSessionsPerToken, 1)
	if n := c.MCP.HTTP.MaxSessionsPerToken; n > maxSessionsPerToken && !d.bad["mcp.http.maxSessionsPerToken"] {
		d.fail("mcp.http.maxSessionsPerToken", d.nodes["mcp.http.maxSessionsPerToken"], "%d is more than the limit of %d", n, maxSessionsPerToken)
	}

	d.llm(&c.LLM)
	d.sampling(&c.MCP.Sampling, &c.LLM)
	d.atLeast("agent.maxSteps", c.Agent.MaxSteps, 1)
	d.atLeast("agent.maxSubagents", c.Agent.MaxSubagents, 1)
	if !d.bad["agent.maxSubagents"] && c.Agent.MaxSubagents > maxSubagents {
		d.fail("agent.maxSubagents", d.nodes["agent.maxSubagents"], "%d is more than %d", c.Agent.MaxSubagents, maxSubagents)
	}
	d.sizeUpTo("agent.maxAnswerSize", c.Agent.MaxAnswerSize, gib)
	d.sizeUpTo("agent.maxToolCallSize", c.Agent.MaxToolCallSize, gib)
	for i, dir := range c.Agent.CommandDirs {
		path := fmt.Sprintf("agent.commandDirs[%d]", i)
		local := filepath.FromSlash(dir)
		switch {
		case d.badUnder("agent.commandDirs"):
		case !filepath.IsLocal(local):
			d.fail(path, d.nodes[path], "%q is not a directory inside the workspace (a relative path, such as .claude/commands)", dir)
		case strings.SplitN(filepath.ToSlash(filepath.Clean(local)), "/", 2)[0] == NexusDir:
			d.fail(path, d.nodes[path], "%q is inside %s, the daemon's own state (commands of the definitions root go in its commands/)", dir, NexusDir)
		}
	}

	d.atLeast("messages.maxLength", c.Messages.MaxLength, 1)
	d.oneOf("messages.pruning", c.Messages.Pruning, "oldest-first", "remove_oldest", "token_budget", "none")

	d.sizeUpTo("context.maxInstructionsSize", c.Context.MaxInstructionsSize, gib)
	for _, name := range c.Context.Instructions {
		if !d.bad["context.instructions"] && (name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`+"\x00")) {
			d.fail("context.instructions", d.nodes["context.instructions"], "%q is not a file name (a name such as AGENTS.md, without a directory)", name)
		}
	}

	if !d.bad["context.autoCompact"] && (c.Context.AutoCompact < 0 || c.Context.AutoCompact > 1) {
		d.fail("context.autoCompact", d.nodes["context.autoCompact"], "%v is not a share of the context window between 0 (off) and 1, such as 0.8", c.Context.AutoCompact)
	}

	d.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	if (c.GRPC.TLS.Cert == "") != (c.GRPC.TLS.Key == "") && !d.badUnder("grpc.tls") {
		d.fail("grpc.tls", d.nodes["grpc.tls"], "cert and key go together: give both, or neither for a generated certificate")
	}

	d.oneOf("acp.mode", c.ACP.Mode, "default", "ask", "auto-edit", "read-only")
	d.oneOf("acp.terminal", c.ACP.Terminal, "nexus", "client")

	d.sizeUpTo("checkpoints.maxFileSize", c.Checkpoints.MaxFileSize, gib)
	d.sizeUpTo("checkpoints.maxStoreSize", c.Checkpoints.MaxStoreSize, 1<<40)
	d.atLeast("checkpoints.maxFiles", c.Checkpoints.MaxFiles, 1)

	d.web(&c.Web)
	d.hooks("hooks.preToolUse", c.Hooks.PreToolUse)
	d.hooks("hooks.postToolUse", c.Hooks.PostToolUse)
	prompt := c.Hooks.Of("userPromptSubmit")
	d.hooks("hooks.userPromptSubmit", prompt)
	for i := range prompt {
		c.Hooks.UserPromptSubmit[i].Timeout = prompt[i].Timeout
	}
}

// hooks checks the hooks of one event and fills in their timeouts.
func (d *decoder) hooks(path string, hooks []HookConfig) {
	for i := range hooks {
		h := &hooks[i]
		p := fmt.Sprintf("%s[%d]", path, i)
		if d.bad[p] {
			continue
		}
		switch cp := p + ".command"; {
		case d.bad[cp]:
		case len(h.Command) == 0:
			d.fail(cp, cmp.Or(d.nodes[cp], d.nodes[p]), `must name a program and its arguments, such as ["./scripts/check.sh"]`)
		case h.Command[0] == "":
			d.fail(cp, d.nodes[cp], "the program name is empty")
		case slices.ContainsFunc(h.Command, func(a string) bool { return strings.ContainsRune(a, 0) }):
			d.fail(cp, d.nodes[cp], "an argument holds a NUL byte")
		}
		if mp := p + ".match"; !d.bad[mp] && h.Match != "" && h.Match != "*" {
			if _, err := regexp.Compile(h.Match); err != nil {
				d.fail(mp, d.nodes[mp], "%q is not a regular expression: %v", h.Match, err)
			}
		}
		tp := p + ".timeout"
		if n := d.nodes[tp]; n == nil || n.ShortTag() == "!!null" {
			h.Timeout = Duration(defaultHookTimeout)
		} else {
			d.positiveAtMost(tp, h.Timeout, maxHookTimeout)
		}
	}
}

// llm checks the llm section and folds a profile written directly under
// llm into Profiles as "default".
func (d *decoder) llm(c *LLMConfig) {
	inline := d.inlineProfile()
	if inline != "" {
		if _, ok := c.Profiles["default"]; ok {
			d.fail("llm."+inline, d.nodes["llm."+inline], `a profile under llm itself is the profile "default", and llm.profiles has one too`)
		} else {
			if c.Profiles == nil {
				c.Profiles = map[string]LLMProfile{}
			}
			p := c.LLMProfile
			p.Key = "llm"
			c.Profiles["default"] = p
		}
		c.LLMProfile = LLMProfile{}
	}
	for _, name := range c.ProfileNames() {
		p, pp := c.Profiles[name], "llm.profiles."+name
		if p.Key != "" {
			pp = p.Key // the errors name the keys the file has
		}
		if d.badUnder(pp) || (name == "default" && d.badUnder("llm")) {
			continue // its own error says what is wrong
		}
		where := ""
		if p.Key == "llm" {
			where = fmt.Sprintf(" (llm.%s, directly under llm, is a key of the profile %q)", inline, name)
		}
		if p.Provider == "" {
			d.fail(pp, d.nodes[pp], "profile %q names no provider (openai, anthropic, gemini or openai-compatible)%s", name, where)
		} else {
			d.oneOf(pp+".provider", p.Provider, "openai", "anthropic", "gemini", "openai-compatible")
		}
		if p.Model == "" {
			d.fail(pp, d.nodes[pp], "profile %q names no model%s", name, where)
		}
		if p.API != "" {
			d.oneOf(pp+".api", p.API, "responses", "chat", "messages", "generateContent")
		}
		if p.Provider == "openai-compatible" && p.BaseURL == "" {
			d.fail(pp, d.nodes[pp], "profile %q: an openai-compatible provider needs a baseURL (Ollama: http://127.0.0.1:11434/v1, llama-server: http://127.0.0.1:8080/v1)", name)
		}
		d.atLeast(pp+".maxOutputTokens", p.MaxOutputTokens, 0)
		d.atLeast(pp+".contextWindow", p.ContextWindow, 0)
		if p.Temperature != nil && (*p.Temperature < 0 || *p.Temperature > 2) {
			d.fail(pp+".temperature", d.nodes[pp+".temperature"], "%v is not between 0 and 2", *p.Temperature)
		}
		for _, k := range []struct {
			name string
			v    float64
		}{{"input", p.Prices.Input}, {"output", p.Prices.Output}, {"cached", p.Prices.Cached}} {
			if k.v < 0 {
				d.fail(pp+".prices."+k.name, d.nodes[pp+".prices."+k.name], "a price may not be negative")
			}
		}
	}
	switch {
	case c.Default != "":
		if _, ok := c.Profiles[c.Default]; !ok {
			d.fail("llm.default", d.nodes["llm.default"], "%q is not a profile (profiles: %s)", c.Default, strings.Join(c.ProfileNames(), ", "))
		}
	case len(c.Profiles) == 1:
		c.Default = c.ProfileNames()[0]
	case hasKey(c.Profiles, "default"):
		c.Default = "default"
	}
}

// inlineProfile is the first key of a profile that the file sets directly
// under llm (a null value sets nothing), or "". Such keys are the profile
// "default", which needs a provider and a model like any other, rather
// than being dropped.
func (d *decoder) inlineProfile() string {
	t := reflect.TypeFor[LLMProfile]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if n := d.nodes["llm."+name]; name != "-" && n != nil && n.ShortTag() != "!!null" {
			return name
		}
	}
	return ""
}

// sampling checks mcp.sampling: the profiles it names are llm profiles.
func (d *decoder) sampling(s *MCPSamplingConfig, llm *LLMConfig) {
	d.atLeast("mcp.sampling.maxTokens", s.MaxTokens, 0)
	known := func(path, name string) {
		if _, ok := llm.Profiles[name]; !ok && !d.bad[path] && !d.badUnder("llm") {
			d.fail(path, d.nodes[path], "%q is not an llm profile (profiles: %s)", name, strings.Join(llm.ProfileNames(), ", "))
		}
	}
	if s.Profile != "" {
		known("mcp.sampling.profile", s.Profile)
	} else if len(s.Profiles) > 0 {
		d.fail("mcp.sampling.profiles", d.nodes["mcp.sampling.profiles"], "needs mcp.sampling.profile, the profile that answers when no hint picks another")
	}
	for i, p := range s.Profiles {
		known(fmt.Sprintf("mcp.sampling.profiles[%d]", i), p)
	}
}

// badUnder reports whether the value at path, or one below it, failed.
func (d *decoder) badUnder(path string) bool {
	for p := range d.bad {
		if p == path || strings.HasPrefix(p, path+".") {
			return true
		}
	}
	return false
}

func hasKey[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }

func (d *decoder) apps(apps []AppConfig) {
	first := make(map[string]*yaml.Node)
	firstCert := make(map[[32]byte]string)
	for i, app := range apps {
		p := fmt.Sprintf("apps[%d]", i)
		if d.bad[p] {
			continue
		}
		idPath := p + ".id"
		idNode := d.nodes[idPath]
		switch {
		case d.bad[idPath]:
		case idNode == nil:
			d.fail(p, d.nodes[p], `missing required key "id"`)
		case !validAppID(app.ID):
			d.fail(idPath, idNode, "%q is not a valid app id (1 to 63 of a-z, 0-9, _ and -, starting with a letter or digit)", app.ID)
		case first[app.ID] != nil:
			d.fail(idPath, idNode, "duplicate app id %q (first at line %d)", app.ID, first[app.ID].Line)
		default:
			first[app.ID] = idNode
		}
		if app.Token != "" && app.TokenFile != "" {
			d.fail(p, d.nodes[p+".tokenFile"], "token and tokenFile are mutually exclusive")
		}
		if cp := p + ".certificate"; app.Certificate != "" && !d.bad[cp] {
			fp, err := ParseFingerprint(app.Certificate)
			switch {
			case err != nil:
				d.fail(cp, d.nodes[cp], "%v", err)
			case firstCert[fp] != "":
				d.fail(cp, d.nodes[cp], "the same certificate as %s", firstCert[fp])
			default:
				firstCert[fp] = cp
			}
		}

		lists := []struct {
			name  string
			names []string
		}{{"allow", app.Grants.Tools.Allow}, {"ask", app.Grants.Tools.Ask}, {"deny", app.Grants.Tools.Deny}}
		in := make(map[string]string)
		for _, l := range lists {
			for j, tool := range l.names {
				if prev, ok := in[tool]; ok && prev != l.name {
					tp := fmt.Sprintf("%s.grants.tools.%s[%d]", p, l.name, j)
					d.fail(tp, d.nodes[tp], "%q is also in %s", tool, prev)
					continue
				}
				in[tool] = l.name
			}
		}
	}
}

// ParseFingerprint reads a certificate's SHA-256 fingerprint: 64 hex
// digits, upper or lower case, with or without colons between the bytes
// (as openssl x509 -noout -fingerprint -sha256 prints it, with or without
// its "sha256 Fingerprint=" label).
func ParseFingerprint(s string) ([32]byte, error) {
	var fp [32]byte
	t := strings.TrimSpace(s)
	if _, after, ok := strings.Cut(t, "="); ok && strings.HasPrefix(strings.ToLower(t), "sha256") {
		t = after
	}
	t = strings.ReplaceAll(t, ":", "")
	b, err := hex.DecodeString(t)
	if err != nil || len(b) != len(fp) {
		return fp, fmt.Errorf("%q is not a SHA-256 fingerprint (64 hex digits, as openssl x509 -noout -fingerprint -sha256 -in cert.pem prints them)", s)
	}
	copy(fp[:], b)
	return fp, nil
}

// FormatFingerprint writes a SHA-256 fingerprint as openssl x509
// -fingerprint -sha256 does: upper-case hex bytes joined by colons.
func FormatFingerprint(fp [32]byte) string {
	var b strings.Builder
	for i, c := range fp {
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%02X", c)
	}
	return b.String()
}

// validAppID reports whether id matches ^[a-z0-9][a-z0-9_-]{0,62}$.
func validAppID(id string) bool {
	if id == "" || len(id) > 63 {
		return false
	}
	for i := range len(id) {
		c := id[i]
		ok := 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || i > 0 && (c == '_' || c == '-')
		if !ok {
			return false
		}
	}
	return true
}

// oneOf reports whether the value at path is one of allowed, and reports it
// when it is not.
func (d *decoder) oneOf(path, value string, allowed ...string) bool {
	if d.bad[path] {
		return false
	}
	if slices.Contains(allowed, value) {
		return true
	}
	d.fail(path, d.nodes[path], "%q is not one of: %s", value, strings.Join(allowed, ", "))
	return false
}

// sizeUpTo fails a size that is not more than 0 and at most most.
func (d *decoder) sizeUpTo(path string, value, most Size) {
	switch {
	case d.bad[path]:
	case value <= 0:
		d.fail(path, d.nodes[path], "must be more than 0")
	case value > most:
		d.fail(path, d.nodes[path], "%v is more than %v", value, most)
	}
}

func (d *decoder) atLeast(path string, value, least int) {
	if !d.bad[path] && value < least {
		d.fail(path, d.nodes[path], "%d is less than %d", value, least)
	}
}

// positiveAtMost reports a duration that is zero or over most.
func (d *decoder) positiveAtMost(path string, value Duration, most time.Duration) {
	switch {
	case d.bad[path]:
	case value <= 0:
		d.fail(path, d.nodes[path], "%s must be more than 0", value)
	case time.Duration(value) > most:
		d.fail(path, d.nodes[path], "%s is more than the limit of %s", value, Duration(most))
	}
}

func (d *decoder) nonEmpty(path, value, hint string) {
	if !d.bad[path] && value == "" {
		d.fail(path, d.nodes[path], "must not be empty%s", hint)
	}
}
