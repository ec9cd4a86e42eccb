package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nexuscocreate/nexus/workspace"
)

// ServerConfig is one MCP server as configured.
type ServerConfig struct {
	Name   string
	Source string // the file it came from, relative to the workspace (".nexus/mcp.json")
	// Transport is "stdio" (Command, Args, Cwd, Env) or "http" (URL, Headers; Streamable HTTP).
	Transport string
	Command   string
	Args      []string
	Cwd       string            // absolute; default the workspace root; relative paths are relative to the workspace root
	Env       map[string]string // the server's own variables, on top of the base environment
	// InheritEnv names daemon environment variables passed through besides the base set.
	InheritEnv []string
	URL        string
	Headers    map[string]string
	Enabled    bool
	// CallTimeout and StartupTimeout override the daemon's mcp defaults when > 0.
	CallTimeout, StartupTimeout time.Duration
	// AllowTools and DenyTools filter the server's tools by name (path.Match patterns): a tool is
	// served when it matches no deny pattern and, if AllowTools is not empty, some allow pattern.
	AllowTools, DenyTools []string
	// Lazy servers start on first use instead of with the daemon.
	Lazy bool
	// Unprefixed asks the MCP gateway (nexusd mcp) to show the server's
	// tools and prompts under their own names rather than
	// SERVER<separator>NAME, where no other name is the same.
	Unprefixed bool
	// OAuth is the entry's "oauth" block (http servers): how the hub is
	// authorized by the server. nil signs in with the defaults when the
	// server asks (see [OAuthConfig]).
	OAuth *OAuthConfig
	// Err is set when this entry is invalid; the hub reports it as the server's failure
	// and the other servers are unaffected.
	Err error
}

// serverFiles are the files that configure MCP servers, highest precedence first.
var serverFiles = [...]struct {
	path string // relative to the workspace, slash-separated
	key  string // the top-level key that holds the servers by name
	// ignored are other top-level keys that belong to the file's format.
	ignored []string
}{
	{path: ".nexus/mcp.json", key: "mcpServers"},
	{path: ".vscode/mcp.json", key: "servers", ignored: []string{"inputs"}},
	{path: ".mcp.json", key: "mcpServers"},
}

// Files returns the absolute paths of the files [LoadConfig] reads, highest precedence first.
func Files(workspace string) []string {
	root := absWorkspace(workspace)
	files := make([]string, len(serverFiles))
	for i, f := range serverFiles {
		files[i] = filepath.Join(root, filepath.FromSlash(f.path))
	}
	return files
}

// LoadConfig reads the MCP servers configured in the workspace: .nexus/mcp.json
// ("mcpServers"), .vscode/mcp.json ("servers", as VS Code writes it) and .mcp.json
// ("mcpServers", as Claude Code writes it), in that order of precedence. A missing
// file configures nothing. A server defined in several files is taken whole from the
// first of them, and a warning names each entry that was shadowed. The files may
// hold comments and trailing commas, as VS Code allows.
//
// Values of command, args, cwd, env, url and headers are expanded with
// [workspace.ExpandEnv], through getenv (nil means os.LookupEnv); ${workspaceFolder}
// is the workspace's absolute path.
//
// err is for a file that cannot be read, is not JSON or does not hold servers by
// name; it names the file, with the line and column of a syntax error. A problem in
// one entry sets that server's Err instead. Unknown keys are warnings, since the
// files are shared with other tools.
func LoadConfig(workspace string, getenv func(string) (string, bool)) (servers map[string]ServerConfig, warnings []string, err error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	root := absWorkspace(workspace)
	servers = make(map[string]ServerConfig)
	var errs []error
	for _, f := range serverFiles {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.path)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read MCP servers: %w", err))
			continue
		}
		p := &fileParser{source: f.path, root: root, getenv: getenv}
		entries, err := p.parse(data, f.key, f.ignored)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		warnings = append(warnings, p.warnings...)
		for _, name := range slices.Sorted(maps.Keys(entries)) {
			if prev, ok := servers[name]; ok {
				warnings = append(warnings, fmt.Sprintf("%s: server %q ignored: %s defines it too", f.path, name, prev.Source))
				continue
			}
			servers[name] = entries[name].config
			warnings = append(warnings, entries[name].warnings...)
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return servers, warnings, nil
}

func absWorkspace(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return filepath.Clean(dir)
}

// A fileParser reads the servers of one file.
type fileParser struct {
	source string // the file, relative to the workspace
	root   string // the workspace, absolute
	getenv func(string) (string, bool)
	// warnings are about the file itself; each entry has its own.
	warnings []string
}

// A parsedEntry is a server and the warnings about its entry, which are
// dropped when the entry is shadowed.
type parsedEntry struct {
	config   ServerConfig
	warnings []string
}

func (p *fileParser) parse(data []byte, key string, ignored []string) (map[string]parsedEntry, error) {
	data = stripJSONComments(data)
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		if se, ok := errors.AsType[*json.SyntaxError](err); ok {
			line, col := jsonPosition(data, se)
			return nil, fmt.Errorf("%s:%d:%d: %w", p.source, line, col, se)
		}
		top = nil
	}
	if top == nil {
		return nil, fmt.Errorf("%s: must be a JSON object with the servers under %q", p.source, key)
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if k != key && !slices.Contains(ignored, k) {
			p.warnings = append(p.warnings, fmt.Sprintf("%s: unknown top-level key %q ignored (servers go under %q)", p.source, k, key))
		}
	}
	var raw map[string]json.RawMessage
	if v, ok := top[key]; ok {
		if err := json.Unmarshal(v, &raw); err != nil {
			return nil, fmt.Errorf("%s: %q must be an object of servers by name", p.source, key)
		}
	}
	entries := make(map[string]parsedEntry, len(raw))
	for name, v := range raw {
		e := &entryParser{fileParser: p, name: name}
		cfg := e.parse(v)
		if len(e.errs) > 0 {
			cfg.Err = errors.Join(e.errs...)
		}
		entries[name] = parsedEntry{config: cfg, warnings: e.warnings}
	}
	return entries, nil
}

// jsonPosition returns the 1-based line and column of a syntax error in data.
func jsonPosition(data []byte, se *json.SyntaxError) (line, col int) {
	off := int(se.Offset)
	// Offset counts the bytes read, the bad one included, except at the end of the input.
	if off > 0 && !strings.HasPrefix(se.Error(), "unexpected end") {
		off--
	}
	off = min(off, len(data))
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return 1 + bytes.Count(data[:off], []byte("\n")), 1 + utf8.RuneCount(data[start:off])
}

// stripJSONComments returns data with // and /* */ comments and trailing commas
// replaced by spaces, so that JSON with comments (as VS Code writes it) parses and
// offsets in the result are offsets in data.
func stripJSONComments(data []byte) []byte {
	if !bytes.ContainsAny(data, "/,") {
		return data
	}
	out := bytes.Clone(data)
	blank := func(from, to int) {
		for i := from; i < to; i++ {
			if out[i] != '\n' && out[i] != '\r' {
				out[i] = ' '
			}
		}
	}
	outsideStrings(out, func(i int) int {
		switch {
		case out[i] == '/' && i+1 < len(out) && out[i+1] == '/':
			end := bytes.IndexByte(out[i:], '\n')
			if end < 0 {
				end = len(out) - i
			}
			blank(i, i+end)
			return i + end
		case out[i] == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return len(out) // unterminated: left for the JSON parser to report
			}
			blank(i, i+2+end+2)
			return i + 2 + end + 2
		}
		return i + 1
	})
	// Trailing commas, once the comments between them and the bracket are gone.
	outsideStrings(out, func(i int) int {
		if out[i] == ',' {
			rest := bytes.TrimLeft(out[i+1:], " \t\r\n")
			if len(rest) > 0 && (rest[0] == '}' || rest[0] == ']') {
				out[i] = ' '
			}
		}
		return i + 1
	})
	return out
}

// outsideStrings calls visit with the index of each byte of the JSON text
// data that is not inside a string; visit returns the index to go on from.
func outsideStrings(data []byte, visit func(i int) int) {
	for i := 0; i < len(data); {
		if data[i] != '"' {
			i = visit(i)
			continue
		}
		for i++; i < len(data) && data[i] != '"'; i++ {
			if data[i] == '\\' {
				i++
			}
		}
		i++
	}
}

// An entryParser reads one server's entry, collecting its problems.
type entryParser struct {
	*fileParser
	name     string
	errs     []error
	warnings []string
}

func (e *entryParser) errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Errorf("%s: server %q: %w", e.source, e.name, fmt.Errorf(format, args...)))
}

func (e *entryParser) warnf(format string, args ...any) {
	e.warnings = append(e.warnings, fmt.Sprintf("%s: server %q: ", e.source, e.name)+fmt.Sprintf(format, args...))
}

// parse returns the server configured by raw; problems are in e.errs.
func (e *entryParser) parse(raw json.RawMessage) ServerConfig {
	cfg := ServerConfig{Name: e.name, Source: e.source, Enabled: true}
	switch {
	case e.name == "":
		e.errorf("the server name must not be empty")
	case strings.ContainsFunc(e.name, func(r rune) bool { return r == '/' || unicode.IsSpace(r) }):
		e.errorf(`the server name must not contain "/" or white space (tools are named server/tool)`)
	}

	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		e.errorf("must be an object")
		return cfg
	}
	var (
		typ, command, cwd, rawURL string
		args                      []string
		env, headers              map[string]string
		enabled, disabled         *bool
		tools                     map[string]json.RawMessage
		oauth                     json.RawMessage
	)
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		v := fields[key]
		switch key {
		case "type":
			e.decode(key, v, &typ, "a string")
		case "command":
			e.decode(key, v, &command, "a string")
		case "args":
			e.decode(key, v, &args, "an array of strings")
		case "cwd":
			e.decode(key, v, &cwd, "a string")
		case "env":
			e.decode(key, v, &env, "an object of strings")
		case "inheritEnv":
			e.decode(key, v, &cfg.InheritEnv, "an array of strings")
		case "url":
			e.decode(key, v, &rawURL, "a string")
		case "headers":
			e.decode(key, v, &headers, "an object of strings")
		case "enabled":
			e.decode(key, v, &enabled, "true or false")
		case "disabled":
			e.decode(key, v, &disabled, "true or false")
		case "lazy":
			e.decode(key, v, &cfg.Lazy, "true or false")
		case "unprefixed":
			e.decode(key, v, &cfg.Unprefixed, "true or false")
		case "callTimeout":
			cfg.CallTimeout = e.duration(key, v)
		case "startupTimeout":
			cfg.StartupTimeout = e.duration(key, v)
		case "tools":
			e.decode(key, v, &tools, `an object with "allow" and "deny"`)
		case "oauth":
			oauth = v
		default:
			e.warnf("unknown key %q ignored", key)
		}
	}

	switch {
	case enabled != nil && disabled != nil && *enabled == *disabled:
		e.errorf(`"enabled" and "disabled" contradict each other`)
	case enabled != nil:
		cfg.Enabled = *enabled
	case disabled != nil:
		cfg.Enabled = !*disabled
	}
	for _, name := range cfg.InheritEnv {
		if name == "" || strings.Contains(name, "=") {
			e.errorf(`"inheritEnv": %q is not an environment variable name`, name)
		}
	}
	e.tools(tools, &cfg)

	switch typ {
	case "":
		cfg.Transport = "stdio"
		if rawURL != "" {
			cfg.Transport = "http"
		}
	case "stdio":
		cfg.Transport = "stdio"
	case "http", "streamable-http", "streamableHttp":
		cfg.Transport = "http"
	case "sse":
		e.errorf(`SSE servers are not supported; use Streamable HTTP ("type": "http")`)
	default:
		e.errorf(`"type" %q is not supported; use "stdio" or "http"`, typ)
	}

	cfg.Command = e.expand("command", command)
	for i, a := range args {
		args[i] = e.expand(fmt.Sprintf("args[%d]", i), a)
	}
	cfg.Args = args
	cfg.Cwd = e.root
	if cwd != "" {
		if dir := e.expand("cwd", cwd); dir != "" {
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(e.root, dir)
			}
			cfg.Cwd = filepath.Clean(dir)
		}
	}
	cfg.Env = e.expandMap("env", env)
	for k := range cfg.Env {
		if k == "" || strings.Contains(k, "=") {
			e.errorf(`"env": %q is not an environment variable name`, k)
		}
	}
	cfg.URL = e.expand("url", rawURL)
	cfg.Headers = e.expandMap("headers", headers)
	cfg.OAuth = e.oauth(oauth, &cfg)

	switch {
	case command != "" && rawURL != "":
		e.errorf(`"command" and "url" are both set; a server is either stdio ("command") or http ("url")`)
	case cfg.Transport == "stdio" && command == "":
		e.errorf(`"command" is required for a stdio server`)
	case cfg.Transport == "http" && rawURL == "":
		e.errorf(`"url" is required for an http server`)
	case cfg.Transport == "http" && cfg.URL != "":
		// The message shows the URL as written: the expanded one may hold a secret.
		if u, err := url.Parse(cfg.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			e.errorf(`"url" %q is not an http or https URL with a host`, rawURL)
		}
	}
	return cfg
}

// decode unmarshals v into dst, which is described as want in the error.
// A null value leaves dst unchanged.
func (e *entryParser) decode(key string, v json.RawMessage, dst any, want string) {
	if err := json.Unmarshal(v, dst); err != nil {
		e.errorf("%q must be %s", key, want)
	}
}

// duration reads a Go duration string ("30s") or a number of seconds.
func (e *entryParser) duration(key string, v json.RawMessage) time.Duration {
	var s string
	var secs float64
	var d time.Duration
	switch {
	case string(v) == "null":
		return 0
	case json.Unmarshal(v, &s) == nil:
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			e.errorf("%q: %q is not a duration (examples: 30s, 1m30s, or a number of seconds)", key, s)
			return 0
		}
	case json.Unmarshal(v, &secs) == nil:
		if secs*float64(time.Second) > math.MaxInt64 {
			e.errorf("%q: %v seconds is too long", key, secs)
			return 0
		}
		d = time.Duration(secs * float64(time.Second))
	default:
		e.errorf(`%q must be a duration ("30s") or a number of seconds`, key)
		return 0
	}
	if d < 0 {
		e.errorf("%q must not be negative", key)
		return 0
	}
	return d
}

// tools reads the "tools" filter into cfg.
func (e *entryParser) tools(fields map[string]json.RawMessage, cfg *ServerConfig) {
	for _, key := range slices.Sorted(maps.Keys(fields)) {
		var dst *[]string
		switch key {
		case "allow":
			dst = &cfg.AllowTools
		case "deny":
			dst = &cfg.DenyTools
		default:
			e.warnf("unknown key %q ignored", "tools."+key)
			continue
		}
		e.decode("tools."+key, fields[key], dst, "an array of strings")
		for _, pattern := range *dst {
			if _, err := path.Match(pattern, ""); err != nil {
				e.errorf("%q: bad pattern %q: %v", "tools."+key, pattern, err)
			}
		}
	}
}

// expand expands the environment references in the value at key (for messages).
// After a problem it returns "".
func (e *entryParser) expand(key, s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	if ref, ok := promptedInput(s); ok {
		e.errorf("%q: %s needs VS Code to prompt for it; set the value with ${VAR} from the environment instead", key, ref)
		return ""
	}
	v, err := workspace.ExpandEnv(s, e.lookup)
	if err != nil {
		e.errorf("%q: %w", key, err)
		return ""
	}
	return v
}

func (e *entryParser) expandMap(key string, m map[string]string) map[string]string {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		m[k] = e.expand(key+"."+k, m[k])
	}
	return m
}

// lookup is getenv with VS Code's ${workspaceFolder}.
func (e *entryParser) lookup(name string) (string, bool) {
	if name == "workspaceFolder" {
		return e.root, true
	}
	return e.getenv(name)
}

// promptedInput returns the first ${input:id} reference in s, which VS Code
// resolves by prompting the user.
func promptedInput(s string) (string, bool) {
	const prefix = "${input:"
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "$$"):
			i++
		case strings.HasPrefix(s[i:], prefix):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", false // ExpandEnv reports it
			}
			return s[i : i+end+1], true
		}
	}
	return "", false
}
