package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nexuscocreate/nexus/internal/durable"
)

// NexusDir is the daemon's directory in a workspace.
const NexusDir = ".nexus"

// DaemonFile is where a running nexusd describes itself, relative to the
// workspace root.
const DaemonFile = ".nexus/run/daemon.json"

// Layout is where a workspace keeps the daemon's files: the one list of
// them. Every path is absolute.
type Layout struct {
	Workspace string
	// Nexus is .nexus/, the daemon's own state. Tool calls reach none of it
	// but the definitions root when that lies inside.
	Nexus string
	// Run is .nexus/run/ (0700): the lock, daemon.json, the admin token,
	// and Apps, the generated app tokens.
	Run, Apps        string
	Lock, DaemonJSON string
	AdminToken       string
	Config           string // .nexus/config.yaml
	History          string // .nexus/history.git
	Approvals        string // .nexus/approvals.json
	Audit            string // .nexus/audit/toolcalls.jsonl
	MCPTrust         string // .nexus/mcp-trust.json
	HooksTrust       string // .nexus/hooks-trust.json
	// MCPAuth is .nexus/mcp-auth (0700): the OAuth tokens of the MCP
	// servers the person signed in to, a 0600 file each. Like the rest of
	// .nexus it is out of every tool call's reach.
	MCPAuth  string
	Sessions string // .nexus/sessions (0700): agent sessions
	// TLS is .nexus/tls (0700): the certificate nexusd generates for gRPC
	// over TCP when none is configured, TLSCert (PEM) and TLSKey (PEM,
	// 0600), kept across restarts so that clients can pin it.
	TLS, TLSCert, TLSKey string
}

// NewLayout returns the layout of the workspace ws (an absolute path).
func NewLayout(ws string) Layout {
	n := filepath.Join(ws, NexusDir)
	run := filepath.Join(n, "run")
	return Layout{
		Workspace: ws, Nexus: n, Run: run, Apps: filepath.Join(run, "apps"),
		Lock: filepath.Join(run, "lock"), DaemonJSON: filepath.Join(ws, filepath.FromSlash(DaemonFile)),
		AdminToken: filepath.Join(run, "admin.token"),
		Config:     filepath.Join(n, "config.yaml"), History: filepath.Join(n, "history.git"),
		Approvals: filepath.Join(n, "approvals.json"), Audit: filepath.Join(n, "audit", "toolcalls.jsonl"),
		MCPTrust: filepath.Join(n, "mcp-trust.json"), HooksTrust: filepath.Join(n, "hooks-trust.json"), MCPAuth: filepath.Join(n, "mcp-auth"), Sessions: filepath.Join(n, "sessions"),
		TLS: filepath.Join(n, "tls"), TLSCert: filepath.Join(n, "tls", "cert.pem"), TLSKey: filepath.Join(n, "tls", "key.pem"),
	}
}

// Resolve makes a configured path absolute against the workspace.
func (l Layout) Resolve(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(l.Workspace, p)
}

// CheckDefinitionsRoot refuses a definitions root that holds .nexus (the
// workspace root itself, or a directory above it): the daemon's tokens,
// history and sessions would be definition files, readable by tool calls
// and committed to the history.
func (l Layout) CheckDefinitionsRoot(root string) error {
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	rel, err := filepath.Rel(real(root), real(l.Nexus))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil // .nexus is not under it
	}
	return fmt.Errorf("definitions.root %s holds the daemon's own directory %s (its tokens, history and sessions): choose a directory that does not, such as %q", root, l.Nexus, "definitions")
}

// A Launcher is a workspace path whose content makes something run later,
// outside every sandbox, without the person choosing to run it. A tool
// call's write to one always asks the person (tools/policy); commands see
// it read-only (tools/core). See [Launchers].
type Launcher struct {
	// Path is clean, slash-separated and relative to the workspace root; a
	// directory ends in "/", and everything below it counts.
	Path string
	// HooksDir marks a directory that git's configuration names as the one
	// its hooks run from (core.hooksPath): a command that finds it missing
	// could make it and fill it, so it is made before a command runs.
	HooksDir bool
}

// Launchers returns the launchers of the workspace ws (absolute; "" gives
// the fixed ones alone), the one list of them:
//
//   - .git (its hooks, and the programs its config names: core.hooksPath,
//     core.fsmonitor, filters), and a repository directory that a .git
//     file points to in the workspace;
//   - the hooks directory that core.hooksPath names in the workspace, in
//     any config file git reads for the repository (its own, the
//     worktree's, the user's, the system's, and what they include), as
//     written and as its symlinks resolve; when it is the workspace root
//     itself, the hook files there (pre-commit, ...);
//   - .husky (husky's hooks, which git runs when core.hooksPath names
//     .husky/_);
//   - JetBrains' run configurations, direnv's .envrc, MCP server entries
//     (started by the McpHub, VS Code, Claude Code), and VS Code's tasks (a
//     task may run when the folder opens) and settings.
//
// The list follows git's config as it is now: it is read on every call (a
// few small files, tens of microseconds), so a change of core.hooksPath
// counts at the next tool call. Not covered:
//
//   - a hooks directory outside the workspace (~/.githooks, /etc/...): not
//     listed, as no core tool writes there and a sandboxed command may
//     write only in the workspace (with tools.sandbox off, the person's
//     own commands write anywhere);
//   - a launcher reached through a symlink: the path it leads to is listed
//     too, but a command may replace the link itself;
//   - a repository nested in the workspace, or one a command makes (git
//     init): tool writes in a .git at any depth ask (tools/policy), but
//     commands see only the workspace's own .git read-only;
//   - what a hook reads in turn: hook managers' configs
//     (.pre-commit-config.yaml, lefthook.yml, package.json).
func Launchers(ws string) []Launcher {
	fixed := []string{".git/", ".husky/", ".idea/", ".envrc", ".mcp.json", ".nexus/mcp.json", ".vscode/mcp.json", ".vscode/settings.json", ".vscode/tasks.json"}
	out := make([]Launcher, 0, len(fixed)+2)
	for _, p := range fixed {
		out = append(out, Launcher{Path: p})
	}
	if ws == "" {
		return out
	}
	hooks, repos := gitHookDirs(ws)
	for _, rel := range repos {
		out = append(out, Launcher{Path: rel + "/"})
	}
	for _, rel := range hooks {
		if rel == "" {
			for _, name := range gitHookNames {
				out = append(out, Launcher{Path: name})
			}
			continue
		}
		out = append(out, Launcher{Path: rel + "/", HooksDir: true})
	}
	return out
}

// MakeDirs creates .nexus/ and the private run directories (see
// [MakePrivateDir]).
func (l Layout) MakeDirs() error {
	if err := makeNexusDir(l.Nexus); err != nil {
		return err
	}
	for _, d := range []string{l.Run, l.Apps} {
		if err := MakePrivateDir(d); err != nil {
			return err
		}
	}
	return nil
}

// AppToken is where nexusd keeps the token it generated for app id, when
// the config gives the app none (token, tokenFile): .nexus/run/apps/<id>.token
// (0600). The app reads it to call the gRPC API as itself.
func (l Layout) AppToken(id string) string {
	return filepath.Join(l.Apps, id+".token")
}

// DaemonInfo is the content of .nexus/run/daemon.json.
type DaemonInfo struct {
	PID            int    `json:"pid"`
	Version        string `json:"version"`
	Workspace      string `json:"workspace"`
	GRPCAddress    string `json:"grpcAddress"`
	GRPCTCPAddress string `json:"grpcTcpAddress,omitempty"`
	// TLSCertFile and TLSFingerprint are the certificate served on
	// GRPCTCPAddress (PEM) and its SHA-256 fingerprint, as openssl x509
	// -noout -fingerprint -sha256 prints it; empty for plain TCP
	// (--insecure-tcp).
	TLSCertFile    string `json:"tlsCertFile,omitempty"`
	TLSFingerprint string `json:"tlsFingerprint,omitempty"`
	AdminTokenFile string `json:"adminTokenFile"`
	// MCPSocket is the MCP gateway's unix socket (nexusd mcp connects to
	// it), MCPURL its Streamable HTTP endpoint when one is served.
	MCPSocket string `json:"mcpSocket,omitempty"`
	MCPURL    string `json:"mcpUrl,omitempty"`
}

// WriteFileAtomic writes a file readable only by this user (0600; on
// Windows an ACL granting this user alone), so that a crash leaves the old
// content or the new, never a mix, and a nil return means the new content
// is on disk: a temporary file in the same directory (made private when
// missing), synced, renamed over path, and the directory synced (see
// package durable for Windows). The one atomic write of the daemon's files.
func WriteFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := MakePrivateDir(dir); err != nil {
			return err
		}
	}
	tmp, err := createPrivateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := durable.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return durable.SyncDir(dir)
}

// ReadJSONFile reads the one JSON value in path into v, strictly: an
// unknown field, or data after the value, is an error. A missing file is
// (false, nil). A file that cannot be read is an *fs.PathError; any other
// error says what is wrong with the content. The daemon's own files
// (approvals, MCP trust) are read this way, and are written with
// [WriteFileAtomic].
func ReadJSONFile(path string, v any) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return true, err
	}
	if dec.More() {
		return true, errors.New("data after the JSON object")
	}
	return true, nil
}

// WriteJSONAtomic writes v as indented JSON with [WriteFileAtomic].
func WriteJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(data, '\n'))
}
