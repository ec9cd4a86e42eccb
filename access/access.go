// Package access decides what an acting party may touch: one answer for
// every door of the daemon (gRPC, the editor protocol, every core tool, and
// the file system a command sees). Start with [Party].
//
// The rules:
//
//   - An app reads and writes its own definitions root (<definitions>/<id>/),
//     and the definition paths its grants name; nothing of another app.
//     Outside the definitions root it uses the workspace as its tool grants
//     allow (the policy decides which tools it may call).
//   - The person (the CLI, the editor) and agents acting for the person use
//     the whole workspace.
//   - Nobody's tool call reaches the daemon's own state in .nexus/ (tokens,
//     approvals, configuration, history, runtime values, audit): see
//     [workspace.Layout.Protected]. The definitions root is the one part of
//     .nexus/ that tool calls may use, under the rules above.
//
// Doors carry the party into the domain (the Party of a tool call's
// invocation, [state.Definitions.For]) rather than checking grants at the
// edge, so no door can forget them.
package access

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// ErrDenied is the error of every refusal; the message says what was
// refused and why.
var ErrDenied = errors.New("permission denied")

// App is an app known to the daemon, with what it may touch beyond its own
// root and runtime namespace.
type App struct {
	ID string
	// Read and Write are patterns of definition paths relative to the
	// definitions root ("shared/**", "/team/*.md"): "*" matches within one
	// name, "**" any number of names, and a pattern that names a directory
	// covers everything below it. Write implies Read.
	Read, Write []string
	// Namespaces are runtime namespaces besides its own.
	Namespaces []string
	// Network lets the app's commands use the network (tools.network in
	// the app's grants); commands have none by default.
	Network bool
}

// Party is who acts: the person (through the CLI, the editor or an agent
// acting for them) or an app. The zero Party is no one and may touch
// nothing.
type Party struct {
	app    *App
	author string
	agent  bool
}

// Person is the person, acting through the door that author names
// ("cli", "editor", "agent:<session>").
func Person(author string) Party { return Party{author: author} }

// ForApp is the app a, acting for itself.
func ForApp(a *App) Party { return Party{app: a, author: "app:" + a.ID} }

// Agent is an agent session acting for p: it may touch what p may, its
// writes are by "agent:<session>", and it is never the person's own act
// (the policy asks it what it would ask an app; see tools/policy).
func (p Party) Agent(session string) Party {
	return Party{app: p.app, author: "agent:" + session, agent: true}
}

// MCPServer is an MCP server acting on its own initiative during a call
// made by app appID ("" for the person): its sampling requests. Its author
// is "mcp:<server>"; like an agent's, its calls are never the person's own
// act, and it may touch what the app (with no grants) or the person may.
func MCPServer(name, appID string) Party {
	p := Party{author: "mcp:" + name, agent: true}
	if appID != "" {
		p.app = &App{ID: appID}
	}
	return p
}

// IsAgent reports whether p is an agent session acting for someone.
func (p Party) IsAgent() bool { return p.agent }

// App returns the app that acts, nil for the person.
func (p Party) App() *App { return p.app }

// AppID is the id of the app that acts, "" for the person.
func (p Party) AppID() string {
	if p.app == nil {
		return ""
	}
	return p.app.ID
}

// Author is the author of the party's writes in the definitions history.
func (p Party) Author() string { return p.author }

// Valid reports whether p is someone.
func (p Party) Valid() bool { return p.author != "" }

// IsPerson reports whether p is the person.
func (p Party) IsPerson() bool { return p.Valid() && p.app == nil }

func (p Party) String() string {
	switch {
	case p.agent && p.app != nil:
		return fmt.Sprintf("%s for app %q", p.author, p.app.ID)
	case p.agent:
		return p.author + " for the person"
	case p.app != nil:
		return fmt.Sprintf("app %q", p.app.ID)
	case p.author != "":
		return "the person (" + p.author + ")"
	}
	return "no one"
}

// Definition checks that p may read, or write, the definition path full
// (relative to the definitions root, "" being the root itself). The error
// wraps [ErrDenied].
func (p Party) Definition(full string, write bool) error {
	if p.MayRead(full) && (!write || p.mayWrite(full)) {
		return nil
	}
	verb := "read"
	if write {
		verb = "write"
	}
	if !p.Valid() {
		return fmt.Errorf("%w: no one may %s definition %q", ErrDenied, verb, "/"+full)
	}
	return fmt.Errorf("%w: app %q may not %s %q: it is outside the app's root and no grant in .nexus/config.yaml covers it",
		ErrDenied, p.app.ID, verb, "/"+full)
}

// MayRead reports whether p may read the definition path full.
func (p Party) MayRead(full string) bool {
	switch {
	case !p.Valid():
		return false
	case p.app == nil:
		return true
	}
	return under(full, p.app.ID) || matchAny(p.app.Write, full) || matchAny(p.app.Read, full)
}

func (p Party) mayWrite(full string) bool {
	switch {
	case !p.Valid():
		return false
	case p.app == nil:
		return true
	}
	return under(full, p.app.ID) || matchAny(p.app.Write, full)
}

// MayList reports whether the directory dir (relative to the definitions
// root) may appear to p: p may read it, or something p may read lies below
// it. Names of directories that hold nothing p may read never leak.
func (p Party) MayList(dir string) bool {
	if p.MayRead(dir) {
		return true
	}
	if p.app == nil {
		return false
	}
	if under(p.app.ID, dir) {
		return true
	}
	parts := strings.Split(dir, "/")
	for _, pats := range [][]string{p.app.Read, p.app.Write} {
		for _, pat := range pats {
			if prefixMatch(splitPattern(pat), parts) {
				return true
			}
		}
	}
	return dir == ""
}

// Namespace resolves the runtime namespace of a request: the one named, or
// the app's own; an app needs a grant for any other.
func (p Party) Namespace(ns string) (string, error) {
	if !p.Valid() {
		return "", fmt.Errorf("%w: no one may use runtime values", ErrDenied)
	}
	if ns == "" {
		ns = p.AppID()
	}
	if ns == "" {
		return "", fmt.Errorf("a runtime namespace is needed: set appId or namespace")
	}
	if p.app != nil && ns != p.app.ID {
		for _, g := range p.app.Namespaces {
			if g == ns {
				return ns, nil
			}
		}
		return "", fmt.Errorf("%w: app %q may not use runtime namespace %q: no grant in .nexus/config.yaml covers it", ErrDenied, p.app.ID, ns)
	}
	return ns, nil
}

// Mount is a definitions directory, or file, that a command of p sees.
type Mount struct {
	// Path is relative to the definitions root; "" is the whole root.
	Path     string
	Writable bool
	// Glob is set when Path is a pattern with wildcards: the command sees
	// the entries that exist and match when it starts.
	Glob bool
}

// Mounts lists what of the definitions root a command run by p sees: the
// whole root for the person; for an app its own root and each grant (read
// grants read-only). A grant "a/**" or "a" is the directory a; a pattern
// with wildcards is matched against the entries present when the command
// starts.
func (p Party) Mounts() []Mount {
	if !p.Valid() {
		return nil
	}
	if p.app == nil {
		return []Mount{{Path: "", Writable: true}}
	}
	m := []Mount{{Path: p.app.ID, Writable: true}}
	add := func(pats []string, w bool) {
		for _, pat := range pats {
			parts := splitPattern(pat)
			for len(parts) > 0 && parts[len(parts)-1] == "**" {
				parts = parts[:len(parts)-1]
			}
			glob := false
			for _, c := range parts {
				glob = glob || strings.ContainsAny(c, "*?[")
			}
			m = append(m, Mount{Path: strings.Join(parts, "/"), Writable: w, Glob: glob})
		}
	}
	add(p.app.Write, true)
	add(p.app.Read, false)
	return m
}

// under reports whether p is dir or lies below it ("" is the root).
func under(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}

func splitPattern(pat string) []string {
	return strings.Split(strings.Trim(pat, "/"), "/")
}

func matchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if matchPattern(splitPattern(pat), strings.Split(p, "/")) {
			return true
		}
	}
	return false
}

func matchPattern(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(parts); i++ {
				if matchPattern(pat[1:], parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], parts[0]); err != nil || !ok {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return true // a directory pattern covers what is below it
}

// prefixMatch reports whether the directory parts could hold a path that
// the pattern matches: each of its names matches the pattern's name at the
// same depth, until a "**".
func prefixMatch(pat, parts []string) bool {
	for _, c := range parts {
		if len(pat) == 0 {
			return true
		}
		if pat[0] == "**" {
			return true
		}
		if ok, err := path.Match(pat[0], c); err != nil || !ok {
			return false
		}
		pat = pat[1:]
	}
	return true
}
