package policy

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nexuscocreate/nexus/workspace"
)

// ErrCorruptApprovals is returned by [OpenApprovals] for a file it cannot
// read as approvals.
var ErrCorruptApprovals = errors.New("corrupt approvals file")

// approvalsVersion is the version of the approvals file format that
// [Approvals] writes. Version 1 had no scopes: each of its answers covered
// every call of its tool; it is still read, its execute_command and file
// tool answers marked [Scope.Broad].
const (
	approvalsVersion   = 2
	approvalsVersionV1 = 1
)

// Scope is what a remembered answer covers of its tool's calls (see the
// package doc, "Asking and remembering"). The zero Scope is the whole tool:
// the scope of every tool but execute_command and the file tools.
type Scope struct {
	// Command is the argv of one plain simple command of execute_command,
	// as the command rules match it: a call whose program is exactly this
	// command, word for word, with no env.
	Command []string `json:"command,omitempty"`
	// Path is the path of a file tool's call, in clean form ("." the
	// workspace root), compared as written: the call must name this path.
	Path string `json:"path,omitempty"`
	// Directory is a directory, in clean form: the calls of the file tool
	// on it and on every path under it. The person picks it in the editor.
	Directory string `json:"directory,omitempty"`
	// Domain is the host of web_fetch's URL, in lower case: every
	// web_fetch of a URL on that host, any port.
	Domain string `json:"domain,omitempty"`
	// Broad marks an answer from an approvals file of version 1, given
	// before answers had scopes: it covers every call of its tool, as it
	// did then.
	Broad bool `json:"broad,omitempty"`
}

// key is s as a map key; "" for the whole tool.
func (s Scope) key() string {
	switch {
	case s.Broad:
		return "broad"
	case s.Command != nil:
		b, _ := json.Marshal(s.Command)
		return "command:" + string(b)
	case s.Path != "":
		return "path:" + s.Path
	case s.Directory != "":
		return "directory:" + s.Directory
	case s.Domain != "":
		return "domain:" + s.Domain
	}
	return ""
}

// Kind names the kind of s, as listings show it: command, path,
// directory, domain, broad, or tool (the whole tool).
func (s Scope) Kind() string {
	switch {
	case s.Broad:
		return "broad"
	case s.Command != nil:
		return "command"
	case s.Path != "":
		return "path"
	case s.Directory != "":
		return "directory"
	case s.Domain != "":
		return "domain"
	}
	return "tool"
}

// Name is what s covers as rules and listings write it: "" for the whole
// tool; for execute_command the command with shell quoting ("ls -la");
// for a file tool the path ("src/main.go"), a directory and everything
// under it ("src/**", "./**" for the whole workspace), for web_fetch the
// host ("go.dev"), or "**" for a broad answer.
func (s Scope) Name() string {
	switch {
	case s.Broad:
		return "**"
	case s.Command != nil:
		return shellJoin(s.Command)
	case s.Path != "":
		return s.Path
	case s.Directory == ".":
		return "./**"
	case s.Directory != "":
		return s.Directory + "/**"
	case s.Domain != "":
		return s.Domain
	}
	return ""
}

// Approval is one remembered "always" answer.
type Approval struct {
	// AppID is "" for the person: the answer covers the person's own calls
	// and every agent session acting for the person. An app's answer
	// covers the app's calls and its agent sessions.
	AppID  string `json:"appId"`
	Tool   string `json:"tool"`
	Server string `json:"server,omitempty"`
	Scope
	// DefinitionHash is the tool definition the answer was given for; the
	// answer does not apply to another.
	DefinitionHash string    `json:"definitionHash"`
	Allow          bool      `json:"allow"`
	Time           time.Time `json:"time"`
}

// Name is what the answer covers, as listings show it and revoking takes
// it: the tool's name, followed for a scoped answer by ":" and
// [Scope.Name] ("execute_command:ls -la", "read_file:src/**",
// "execute_command:**" for a broad answer).
func (a Approval) Name() string {
	if s := a.Scope.Name(); s != "" {
		return a.Tool + ":" + s
	}
	return a.Tool
}

// ParseName is the inverse of [Approval.Name]: the tool and the scope of
// an answer's name, for a tool of server ("" for core tools). A name
// without a scope is the whole tool, which is also how revoking by a
// tool's name reads it.
func ParseName(name, server string) (tool string, s Scope, err error) {
	tool, rest, ok := strings.Cut(name, ":")
	switch {
	case tool == "":
		return "", Scope{}, fmt.Errorf("answer name %q has no tool", name)
	case !ok:
		return tool, Scope{}, nil
	case !scoped(tool, server):
		return "", Scope{}, fmt.Errorf("answer name %q: %s takes no scope", name, displayTool(tool, server))
	case rest == "**":
		return tool, Scope{Broad: true}, nil
	case tool == executeCommand:
		b, _ := json.Marshal(map[string]string{"command": rest})
		c := parseArgs(b)
		if c.err != nil || c.plain == nil {
			return "", Scope{}, fmt.Errorf("answer name %q: %q is not one plain command", name, rest)
		}
		return tool, Scope{Command: c.plain}, nil
	case tool == webFetch:
		if err := checkDomainScope(rest); err != nil {
			return "", Scope{}, fmt.Errorf("answer name %q: %w", name, err)
		}
		return tool, Scope{Domain: rest}, nil
	case rest == "./**":
		return tool, Scope{Directory: "."}, nil
	}
	p, isDir := strings.CutSuffix(rest, "/**")
	if c, ok := cleanScopePath(p); !ok || c != p || p == "" {
		return "", Scope{}, fmt.Errorf("answer name %q: %q is not a clean path relative to the workspace", name, rest)
	}
	if isDir {
		return tool, Scope{Directory: p}, nil
	}
	return tool, Scope{Path: p}, nil
}

// Covers says in words which calls the answer covers, for listings.
func (a Approval) Covers() string {
	tool := a.Tool
	if a.Server != "" {
		tool = a.Server + "/" + a.Tool
	}
	switch {
	case a.Broad:
		return fmt.Sprintf("every call of %s (broad: remembered before answers had scopes)", tool)
	case a.Command != nil:
		return fmt.Sprintf("%s %q, exactly", tool, shellJoin(a.Command))
	case a.Path != "":
		return fmt.Sprintf("%s %q", tool, a.Path)
	case a.Directory == ".":
		return fmt.Sprintf("%s anywhere in the workspace", tool)
	case a.Directory != "":
		return fmt.Sprintf("%s in %q and everything under it", tool, a.Directory+"/")
	case a.Domain != "":
		return fmt.Sprintf("%s of any URL on the host %q", tool, a.Domain)
	}
	return tool + ", any arguments"
}

type approvalsFile struct {
	Version   int        `json:"version"`
	Approvals []Approval `json:"approvals"`
}

type approvalKey struct{ app, server, tool, scope string }

func keyOf(ap *Approval) approvalKey {
	return approvalKey{ap.AppID, ap.Server, ap.Tool, ap.Scope.key()}
}

// Approvals remembers "always" answers, one per app, server, tool and
// scope, persisted as JSON in one file. Every change is written to a
// temporary file that is synced and renamed over the old one, and the
// directory is synced: a change that returned nil survives a crash, and the
// file is never half written. It is safe for concurrent use.
type Approvals struct {
	path string

	approvalsMu sync.Mutex
	// approvals holds the answers; a change builds a new map and keeps it
	// only once it is written.
	approvals map[approvalKey]Approval
}

// OpenApprovals reads the approvals file at path; a missing file is no
// approvals. It reads versions 1 and 2 of the format; a version 1 file is
// written as version 2 at the first change. A file that is not valid
// approvals JSON is an error wrapping [ErrCorruptApprovals]: the daemon
// should stop and say so rather than forget what the person answered.
func OpenApprovals(path string) (*Approvals, error) {
	a := &Approvals{path: path, approvals: make(map[approvalKey]Approval)}
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("approvals file %s: %w: %s (fix or delete the file)", path, ErrCorruptApprovals, fmt.Sprintf(format, args...))
	}
	var f approvalsFile
	found, err := workspace.ReadJSONFile(path, &f)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return nil, fmt.Errorf("approvals: %w", err)
	case err != nil:
		return nil, corrupt("%v", err)
	case !found:
		return a, nil
	}
	if f.Version != approvalsVersion && f.Version != approvalsVersionV1 {
		return nil, corrupt("version %d, want %d or %d", f.Version, approvalsVersionV1, approvalsVersion)
	}
	for i, ap := range f.Approvals {
		if ap.Tool == "" {
			return nil, corrupt("approval %d has no tool", i)
		}
		if ap.DefinitionHash == "" {
			return nil, corrupt("approval %d has no definitionHash", i)
		}
		if f.Version == approvalsVersionV1 {
			if ap.Scope.key() != "" {
				return nil, corrupt("approval %d has a scope, which version 1 does not have", i)
			}
			ap.Broad = scoped(ap.Tool, ap.Server)
		}
		if err := ap.check(); err != nil {
			return nil, corrupt("approval %d: %v", i, err)
		}
		k := keyOf(&ap)
		if _, dup := a.approvals[k]; dup {
			return nil, corrupt("approval %d repeats %s for %s", i, ap.Name(), caller(ap.AppID))
		}
		a.approvals[k] = ap
	}
	return a, nil
}

// check reports what is wrong with the scope of ap for its tool.
func (ap *Approval) check() error {
	s := &ap.Scope
	n := 0
	for _, set := range []bool{s.Broad, s.Command != nil, s.Path != "", s.Directory != "", s.Domain != ""} {
		if set {
			n++
		}
	}
	switch {
	case n > 1:
		return fmt.Errorf("%s has more than one of command, path, directory, domain and broad", ap.Tool)
	case !scoped(ap.Tool, ap.Server) && n > 0:
		return fmt.Errorf("%s takes no scope: its answers cover the whole tool", displayTool(ap.Tool, ap.Server))
	case scoped(ap.Tool, ap.Server) && n == 0:
		return fmt.Errorf("%s has no scope (command, path, directory, domain or broad)", ap.Tool)
	case s.Command != nil && ap.Tool != executeCommand:
		return fmt.Errorf("%s has a command: only execute_command does", ap.Tool)
	case s.Command != nil && len(s.Command) == 0:
		return errors.New("execute_command has an empty command")
	case ap.Tool == executeCommand && (s.Path != "" || s.Directory != ""):
		return errors.New("execute_command has a path or directory: its scope is a command")
	case (s.Domain != "") != (ap.Tool == webFetch && ap.Server == "" && !s.Broad):
		return fmt.Errorf("%s: only web_fetch has a domain, and web_fetch has nothing else", ap.Tool)
	case s.Domain != "":
		if err := checkDomainScope(s.Domain); err != nil {
			return err
		}
	}
	for _, p := range []string{s.Path, s.Directory} {
		if c, ok := cleanScopePath(p); p != "" && (!ok || c != p) {
			return fmt.Errorf("%s path %q is not a clean path relative to the workspace", ap.Tool, p)
		}
	}
	return nil
}

// Path is the file the approvals are kept in.
func (a *Approvals) Path() string { return a.path }

// Remember stores ap, replacing any earlier answer for the same app, tool
// and scope. It returns after the file is durable; on error nothing
// changed.
func (a *Approvals) Remember(ap Approval) error {
	if ap.Tool == "" {
		return errors.New("approvals: remember: no tool")
	}
	if ap.DefinitionHash == "" {
		return errors.New("approvals: remember: no definition hash")
	}
	if ap.Broad {
		return errors.New("approvals: remember: a broad answer is only read from an old file, never given")
	}
	if err := ap.check(); err != nil {
		return fmt.Errorf("approvals: remember: %w", err)
	}
	ap.Command = slices.Clone(ap.Command)
	ap.Time = ap.Time.UTC().Round(0)
	a.approvalsMu.Lock()
	defer a.approvalsMu.Unlock()
	m := maps.Clone(a.approvals)
	m[keyOf(&ap)] = ap
	if err := a.write(m); err != nil {
		return err
	}
	a.approvals = m
	return nil
}

// Lookup returns the stored answer that covers a call by appID of the
// tool with the definition hash defHash; call is the call's own scope
// ([Scope.Command] or [Scope.Path], or the zero Scope for a tool without
// scopes), and ok false when the call has none (a command that is not one
// plain command): then only a broad answer covers it. The most specific
// answer wins: the call's own scope, then the deepest directory that holds
// its path, then a broad answer. An answer given for another definition of
// the tool does not apply.
func (a *Approvals) Lookup(appID, tool, server, defHash string, call Scope, ok bool) (Approval, bool) {
	keys := make([]string, 0, 4)
	if ok {
		keys = append(keys, call.key())
		if call.Path != "" {
			for d := call.Path; ; d = path.Dir(d) {
				keys = append(keys, Scope{Directory: d}.key())
				if d == "." {
					break
				}
			}
		}
	}
	if scoped(tool, server) {
		keys = append(keys, Scope{Broad: true}.key())
	}
	a.approvalsMu.Lock()
	defer a.approvalsMu.Unlock()
	for _, k := range keys {
		if ap, found := a.approvals[approvalKey{appID, server, tool, k}]; found && ap.DefinitionHash == defHash {
			return ap, true
		}
	}
	return Approval{}, false
}

// List returns every stored answer, sorted by app, server, tool and name.
func (a *Approvals) List() []Approval {
	a.approvalsMu.Lock()
	out := slices.Collect(maps.Values(a.approvals))
	a.approvalsMu.Unlock()
	sortApprovals(out)
	return out
}

// Revoke forgets appID's answers about a tool, whatever their definition
// hash. name is the tool's name, which forgets every answer about the tool
// (every scope), or an answer's [Approval.Name] ("execute_command:ls"),
// which forgets that one. It returns how many it forgot.
func (a *Approvals) Revoke(appID, name, server string) (int, error) {
	a.approvalsMu.Lock()
	defer a.approvalsMu.Unlock()
	m := maps.Clone(a.approvals)
	for k, ap := range a.approvals {
		if ap.AppID == appID && ap.Server == server && (ap.Tool == name || ap.Name() == name) {
			delete(m, k)
		}
	}
	n := len(a.approvals) - len(m)
	if n == 0 {
		return 0, nil
	}
	if err := a.write(m); err != nil {
		return 0, err
	}
	a.approvals = m
	return n, nil
}

func sortApprovals(s []Approval) {
	slices.SortFunc(s, func(x, y Approval) int {
		return cmp.Or(cmp.Compare(x.AppID, y.AppID), cmp.Compare(x.Server, y.Server), cmp.Compare(x.Tool, y.Tool),
			cmp.Compare(x.Scope.Name(), y.Scope.Name()), cmp.Compare(x.Scope.key(), y.Scope.key()))
	})
}

// write stores m in the file: temporary file, fsync, rename, fsync of the
// directory. The caller holds approvalsMu.
func (a *Approvals) write(m map[approvalKey]Approval) error {
	f := approvalsFile{Version: approvalsVersion, Approvals: slices.Collect(maps.Values(m))}
	if f.Approvals == nil {
		f.Approvals = []Approval{}
	}
	sortApprovals(f.Approvals)
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	data = append(data, '\n')
	if err := workspace.WriteFileAtomic(a.path, data); err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	return nil
}

// fileTools are the core tools whose answers are remembered by path.
var fileTools = []string{"read_file", "write_file", "edit_file", "list_directory", "search_files"}

// scoped reports whether answers about the tool have a scope: the core
// tools execute_command (a command), the file tools (a path) and
// web_fetch (a host).
func scoped(tool, server string) bool {
	return server == "" && (tool == executeCommand || tool == webFetch || slices.Contains(fileTools, tool))
}

// checkDomainScope reports what is wrong with a web_fetch answer's host: a
// host name or an IP address, in lower case, with no "*." (an answer is
// for one host; web.allowedDomains takes patterns).
func checkDomainScope(host string) error {
	if strings.HasPrefix(host, "*.") {
		return fmt.Errorf("%q: an answer covers one host; web.allowedDomains takes patterns", host)
	}
	return workspace.CheckDomainPattern(host)
}

// cleanScopePath is p in the clean form a scope keeps ("." for the root),
// and whether it is a path a file tool takes: relative, without ".." or a
// NUL, and with no "**" name, which names a directory scope.
func cleanScopePath(p string) (string, bool) {
	if strings.IndexByte(p, 0) >= 0 || strings.HasPrefix(p, "/") {
		return "", false
	}
	for c := range strings.SplitSeq(p, "/") {
		if c == ".." || c == "**" {
			return "", false
		}
	}
	return path.Clean(p), true
}

func displayTool(tool, server string) string {
	if server == "" {
		return tool
	}
	return server + "/" + tool
}
