package mcp

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

// writeWorkspace creates a workspace holding files (slash-separated path → content).
func writeWorkspace(t *testing.T, files map[string]string) string {
	t.Helper()
	ws := t.TempDir()
	for name, content := range files {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// fakeEnv is a getenv over a fixed set of variables.
func fakeEnv(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

var testEnv = fakeEnv(map[string]string{"TOKEN": "s3cret", "EMPTY": "", "HOST": "example.com"})

func TestLoadConfigPrecedence(t *testing.T) {
	ws := writeWorkspace(t, map[string]string{
		".nexus/mcp.json": `{"mcpServers": {"a": {"command": "nexus-a"}}}`,
		".vscode/mcp.json": `{
			"inputs": [{"type": "promptString", "id": "token"}],
			"servers": {
				"a": {"type": "stdio", "command": "vscode-a", "envFile": "x"},
				"b": {"type": "http", "url": "https://b.example.com/mcp"}
			}
		}`,
		".mcp.json": `{"mcpServers": {
			"a": {"command": "claude-a"},
			"b": {"command": "claude-b"},
			"c": {"command": "claude-c", "args": ["--stdio"]}
		}}`,
	})
	servers, warnings, err := LoadConfig(ws, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ServerConfig{
		"a": {Name: "a", Source: ".nexus/mcp.json", Transport: "stdio", Command: "nexus-a", Cwd: ws, Enabled: true},
		"b": {Name: "b", Source: ".vscode/mcp.json", Transport: "http", URL: "https://b.example.com/mcp", Cwd: ws, Enabled: true},
		"c": {Name: "c", Source: ".mcp.json", Transport: "stdio", Command: "claude-c", Args: []string{"--stdio"}, Cwd: ws, Enabled: true},
	}
	if !reflect.DeepEqual(servers, want) {
		t.Errorf("servers:\ngot  %+v\nwant %+v", servers, want)
	}
	// The shadowed entry's unknown key ("envFile") is not reported.
	wantWarnings := []string{
		`.vscode/mcp.json: server "a" ignored: .nexus/mcp.json defines it too`,
		`.mcp.json: server "a" ignored: .nexus/mcp.json defines it too`,
		`.mcp.json: server "b" ignored: .vscode/mcp.json defines it too`,
	}
	if !slices.Equal(warnings, wantWarnings) {
		t.Errorf("warnings:\ngot  %q\nwant %q", warnings, wantWarnings)
	}
}

func TestLoadConfigNoFiles(t *testing.T) {
	servers, warnings, err := LoadConfig(t.TempDir(), testEnv)
	if err != nil || len(servers) != 0 || len(warnings) != 0 {
		t.Errorf("LoadConfig(empty workspace) = %v, %q, %v; want no servers, warnings or error", servers, warnings, err)
	}
}

func TestFiles(t *testing.T) {
	ws := t.TempDir()
	want := []string{
		filepath.Join(ws, ".nexus", "mcp.json"),
		filepath.Join(ws, ".vscode", "mcp.json"),
		filepath.Join(ws, ".mcp.json"),
	}
	if got := Files(ws); !slices.Equal(got, want) {
		t.Errorf("Files(%q) = %q, want %q", ws, got, want)
	}
}

// TestLoadConfigEntry loads one server "x" and checks it, its Err and the warnings.
func TestLoadConfigEntry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  string // default .nexus/mcp.json
		entry string // the JSON of server "x"
		// want edits the expected config, which starts as a stdio server with
		// command "srv" and the defaults; ws is the workspace.
		want     func(c *ServerConfig, ws string)
		wantErr  string // the whole Err message; then only Err is compared
		warnings []string
	}{
		{
			name:  "defaults",
			entry: `{"command": "srv"}`,
		},
		{
			name:  "http inferred from url",
			entry: `{"url": "https://example.com/mcp", "headers": {"X-Team": "core"}}`,
			want: func(c *ServerConfig, ws string) {
				c.Transport, c.Command, c.URL = "http", "", "https://example.com/mcp"
				c.Headers = map[string]string{"X-Team": "core"}
			},
		},
		{
			name: "all options",
			entry: `{"command": "srv", "args": ["-v"], "cwd": "/opt/srv", "env": {"A": "1"}, "inheritEnv": ["PATH_EXTRA"],
				"lazy": true, "callTimeout": "1m30s", "startupTimeout": 2.5, "unprefixed": true,
				"tools": {"allow": ["read_*", "list"], "deny": ["read_secret"]}}`,
			want: func(c *ServerConfig, ws string) {
				c.Args, c.Cwd, c.Env = []string{"-v"}, "/opt/srv", map[string]string{"A": "1"}
				c.InheritEnv, c.Lazy, c.Unprefixed = []string{"PATH_EXTRA"}, true, true
				c.CallTimeout, c.StartupTimeout = 90*time.Second, 2500*time.Millisecond
				c.AllowTools, c.DenyTools = []string{"read_*", "list"}, []string{"read_secret"}
			},
		},
		{
			name:  "relative cwd",
			entry: `{"command": "srv", "cwd": "tools/srv"}`,
			want:  func(c *ServerConfig, ws string) { c.Cwd = filepath.Join(ws, "tools", "srv") },
		},
		{
			name:  "enabled false",
			entry: `{"command": "srv", "enabled": false}`,
			want:  func(c *ServerConfig, ws string) { c.Enabled = false },
		},
		{
			name:  "disabled true",
			file:  ".mcp.json",
			entry: `{"command": "srv", "disabled": true}`,
			want:  func(c *ServerConfig, ws string) { c.Source, c.Enabled = ".mcp.json", false },
		},
		{
			name:    "enabled and disabled contradict",
			entry:   `{"command": "srv", "enabled": true, "disabled": true}`,
			wantErr: `.nexus/mcp.json: server "x": "enabled" and "disabled" contradict each other`,
		},
		{
			name:  "timeouts as numbers",
			entry: `{"command": "srv", "callTimeout": 30, "startupTimeout": 0}`,
			want:  func(c *ServerConfig, ws string) { c.CallTimeout = 30 * time.Second },
		},
		{
			name:    "bad duration",
			entry:   `{"command": "srv", "callTimeout": "30 seconds"}`,
			wantErr: `.nexus/mcp.json: server "x": "callTimeout": "30 seconds" is not a duration (examples: 30s, 1m30s, or a number of seconds)`,
		},
		{
			name:    "negative duration",
			entry:   `{"command": "srv", "startupTimeout": -1}`,
			wantErr: `.nexus/mcp.json: server "x": "startupTimeout" must not be negative`,
		},
		{
			name:    "duration of the wrong type",
			entry:   `{"command": "srv", "callTimeout": true}`,
			wantErr: `.nexus/mcp.json: server "x": "callTimeout" must be a duration ("30s") or a number of seconds`,
		},
		{
			name:    "bad tool pattern",
			entry:   `{"command": "srv", "tools": {"allow": ["read_*"], "deny": ["[unclosed"]}}`,
			wantErr: `.nexus/mcp.json: server "x": "tools.deny": bad pattern "[unclosed": syntax error in pattern`,
		},
		{
			name:     "unknown keys",
			file:     ".vscode/mcp.json",
			entry:    `{"type": "stdio", "command": "srv", "envFile": "${workspaceFolder}/.env", "tools": {"only": []}}`,
			want:     func(c *ServerConfig, ws string) { c.Source = ".vscode/mcp.json" },
			warnings: []string{`.vscode/mcp.json: server "x": unknown key "envFile" ignored`, `.vscode/mcp.json: server "x": unknown key "tools.only" ignored`},
		},
		{
			name:    "wrong types",
			entry:   `{"command": ["srv"], "args": "-v", "env": {"A": 1}, "lazy": "yes"}`,
			wantErr: `.nexus/mcp.json: server "x": "args" must be an array of strings` + "\n" + `.nexus/mcp.json: server "x": "command" must be a string` + "\n" + `.nexus/mcp.json: server "x": "env" must be an object of strings` + "\n" + `.nexus/mcp.json: server "x": "lazy" must be true or false` + "\n" + `.nexus/mcp.json: server "x": "command" is required for a stdio server`,
		},
		{
			name:    "entry not an object",
			entry:   `"srv"`,
			wantErr: `.nexus/mcp.json: server "x": must be an object`,
		},

		// Transports.
		{
			name:  "vscode type stdio",
			file:  ".vscode/mcp.json",
			entry: `{"type": "stdio", "command": "srv"}`,
			want:  func(c *ServerConfig, ws string) { c.Source = ".vscode/mcp.json" },
		},
		{
			name:  "vscode type http",
			file:  ".vscode/mcp.json",
			entry: `{"type": "http", "url": "http://localhost:8080/mcp"}`,
			want: func(c *ServerConfig, ws string) {
				c.Source, c.Transport, c.Command, c.URL = ".vscode/mcp.json", "http", "", "http://localhost:8080/mcp"
			},
		},
		{
			name:  "type streamableHttp",
			entry: `{"type": "streamableHttp", "url": "http://localhost:8080/mcp"}`,
			want: func(c *ServerConfig, ws string) {
				c.Transport, c.Command, c.URL = "http", "", "http://localhost:8080/mcp"
			},
		},
		{
			name:  "type streamable-http",
			entry: `{"type": "streamable-http", "url": "http://localhost:8080/mcp"}`,
			want: func(c *ServerConfig, ws string) {
				c.Transport, c.Command, c.URL = "http", "", "http://localhost:8080/mcp"
			},
		},
		{
			name:    "sse",
			file:    ".vscode/mcp.json",
			entry:   `{"type": "sse", "url": "http://localhost:8080/sse"}`,
			wantErr: `.vscode/mcp.json: server "x": SSE servers are not supported; use Streamable HTTP ("type": "http")`,
		},
		{
			name:    "unknown type",
			entry:   `{"type": "websocket", "url": "ws://localhost:8080"}`,
			wantErr: `.nexus/mcp.json: server "x": "type" "websocket" is not supported; use "stdio" or "http"`,
		},
		{
			name:    "stdio without command",
			entry:   `{"type": "stdio", "args": ["-v"]}`,
			wantErr: `.nexus/mcp.json: server "x": "command" is required for a stdio server`,
		},
		{
			name:    "http without url",
			entry:   `{"type": "http"}`,
			wantErr: `.nexus/mcp.json: server "x": "url" is required for an http server`,
		},
		{
			name:    "url without host",
			entry:   `{"url": "https:///mcp"}`,
			wantErr: `.nexus/mcp.json: server "x": "url" "https:///mcp" is not an http or https URL with a host`,
		},
		{
			name:    "url of another scheme",
			entry:   `{"url": "ftp://${HOST}/mcp"}`,
			wantErr: `.nexus/mcp.json: server "x": "url" "ftp://${HOST}/mcp" is not an http or https URL with a host`,
		},
		{
			name:    "command and url",
			entry:   `{"command": "srv", "url": "https://example.com/mcp"}`,
			wantErr: `.nexus/mcp.json: server "x": "command" and "url" are both set; a server is either stdio ("command") or http ("url")`,
		},

		// Expansion.
		{
			name: "env expansion",
			entry: `{"command": "${BIN:-srv}", "args": ["--token=${TOKEN}", "--mode=${EMPTY:-fast}", "$$HOME"],
				"env": {"API_KEY": "${TOKEN}", "REGION": "${REGION:-eu}"}}`,
			want: func(c *ServerConfig, ws string) {
				c.Args = []string{"--token=s3cret", "--mode=fast", "$HOME"}
				c.Env = map[string]string{"API_KEY": "s3cret", "REGION": "eu"}
			},
		},
		{
			name:  "url and header expansion",
			entry: `{"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}`,
			want: func(c *ServerConfig, ws string) {
				c.Transport, c.Command, c.URL = "http", "", "https://example.com/mcp"
				c.Headers = map[string]string{"Authorization": "Bearer s3cret"}
			},
		},
		{
			name:    "unset variable",
			entry:   `{"command": "srv", "env": {"API_KEY": "${API_KEY}"}}`,
			wantErr: `.nexus/mcp.json: server "x": "env.API_KEY": environment variable API_KEY is not set (write ${API_KEY:-default} to give a default)`,
		},
		{
			name:  "workspaceFolder",
			file:  ".vscode/mcp.json",
			entry: `{"command": "${workspaceFolder}/bin/srv", "args": ["--root", "${workspaceFolder}"], "cwd": "${workspaceFolder}/sub"}`,
			want: func(c *ServerConfig, ws string) {
				c.Source, c.Command, c.Args = ".vscode/mcp.json", ws+"/bin/srv", []string{"--root", ws}
				c.Cwd = filepath.Join(ws, "sub")
			},
		},
		{
			name:    "vscode input",
			file:    ".vscode/mcp.json",
			entry:   `{"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${input:token}"}}`,
			wantErr: `.vscode/mcp.json: server "x": "headers.Authorization": ${input:token} needs VS Code to prompt for it; set the value with ${VAR} from the environment instead`,
		},
		{
			name:  "escaped input reference",
			entry: `{"command": "srv", "args": ["$${input:token}"]}`,
			want:  func(c *ServerConfig, ws string) { c.Args = []string{"${input:token}"} },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.file
			if file == "" {
				file = ".nexus/mcp.json"
			}
			key := "mcpServers"
			if file == ".vscode/mcp.json" {
				key = "servers"
			}
			ws := writeWorkspace(t, map[string]string{file: `{"` + key + `": {"x": ` + tc.entry + `}}`})
			servers, warnings, err := LoadConfig(ws, testEnv)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := servers["x"]
			if !ok || len(servers) != 1 {
				t.Fatalf("servers = %v, want just x", servers)
			}
			if tc.wantErr != "" {
				if got.Err == nil || got.Err.Error() != tc.wantErr {
					t.Errorf("Err:\ngot  %v\nwant %s", got.Err, tc.wantErr)
				}
			} else {
				want := ServerConfig{Name: "x", Source: ".nexus/mcp.json", Transport: "stdio", Command: "srv", Cwd: ws, Enabled: true}
				if tc.want != nil {
					tc.want(&want, ws)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("server:\ngot  %+v\nwant %+v", got, want)
				}
			}
			if !slices.Equal(warnings, tc.warnings) {
				t.Errorf("warnings:\ngot  %q\nwant %q", warnings, tc.warnings)
			}
		})
	}
}

func TestLoadConfigNames(t *testing.T) {
	ws := writeWorkspace(t, map[string]string{".mcp.json": `{"mcpServers": {
		"git/hub": {"command": "srv"},
		"my server": {"command": "srv"},
		"": {"command": "srv"},
		"ok-name_1.0": {"command": "srv"}
	}}`})
	servers, _, err := LoadConfig(ws, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"git/hub":     `.mcp.json: server "git/hub": the server name must not contain "/" or white space (tools are named server/tool)`,
		"my server":   `.mcp.json: server "my server": the server name must not contain "/" or white space (tools are named server/tool)`,
		"":            `.mcp.json: server "": the server name must not be empty`,
		"ok-name_1.0": "",
	}
	for name, wantErr := range want {
		cfg, ok := servers[name]
		if !ok {
			t.Errorf("server %q missing", name)
			continue
		}
		if gotErr := errText(cfg.Err); gotErr != wantErr {
			t.Errorf("server %q: Err = %q, want %q", name, gotErr, wantErr)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestLoadConfigFileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, content, wantErr string
	}{
		{
			name: "syntax error",
			file: ".nexus/mcp.json",
			content: `{
  "mcpServers": {
    "x": {"command": "srv" "args": []}
  }
}`,
			wantErr: `.nexus/mcp.json:3:28: invalid character '"' after object key:value pair`,
		},
		{
			name: "syntax error after a comment",
			file: ".vscode/mcp.json",
			content: `// Servers for this repository.
{"servers": {
  /* a server */ "x": {"command": "srv"}}}}`,
			wantErr: `.vscode/mcp.json:3:43: invalid character '}' after top-level value`,
		},
		{
			name:    "unexpected end",
			file:    ".mcp.json",
			content: "{\"mcpServers\": {\n",
			wantErr: `.mcp.json:2:1: unexpected end of JSON input`,
		},
		{
			name:    "not an object",
			file:    ".mcp.json",
			content: `[{"command": "srv"}]`,
			wantErr: `.mcp.json: must be a JSON object with the servers under "mcpServers"`,
		},
		{
			name:    "servers not an object",
			file:    ".vscode/mcp.json",
			content: `{"servers": [{"command": "srv"}]}`,
			wantErr: `.vscode/mcp.json: "servers" must be an object of servers by name`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := writeWorkspace(t, map[string]string{tc.file: tc.content})
			servers, _, err := LoadConfig(ws, testEnv)
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("err:\ngot  %v\nwant %s", err, tc.wantErr)
			}
			if servers != nil {
				t.Errorf("servers = %v, want nil with an error", servers)
			}
		})
	}
}

func TestLoadConfigTopLevel(t *testing.T) {
	ws := writeWorkspace(t, map[string]string{
		// An empty file configures nothing; a misplaced key is reported.
		".nexus/mcp.json":  "\n",
		".mcp.json":        `{"servers": {"x": {"command": "srv"}}}`,
		".vscode/mcp.json": `{"inputs": [], "servers": null}`,
	})
	servers, warnings, err := LoadConfig(ws, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 0 {
		t.Errorf("servers = %v, want none", servers)
	}
	want := []string{`.mcp.json: unknown top-level key "servers" ignored (servers go under "mcpServers")`}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings:\ngot  %q\nwant %q", warnings, want)
	}
}

// TestLoadConfigComments checks the JSON-with-comments that VS Code accepts.
func TestLoadConfigComments(t *testing.T) {
	ws := writeWorkspace(t, map[string]string{".vscode/mcp.json": `{
	// Servers for this repository.
	"servers": {
		/* a server; the "//" and "/*" in strings stay */
		"x": {
			"url": "https://example.com/a//b", // trailing comment
			"headers": {"X-Note": "/* not a comment */",},
		},
	},
}`})
	servers, warnings, err := LoadConfig(ws, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := ServerConfig{Name: "x", Source: ".vscode/mcp.json", Transport: "http", URL: "https://example.com/a//b",
		Headers: map[string]string{"X-Note": "/* not a comment */"}, Cwd: ws, Enabled: true}
	if got := servers["x"]; !reflect.DeepEqual(got, want) {
		t.Errorf("server:\ngot  %+v\nwant %+v", got, want)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %q, want none", warnings)
	}
}
