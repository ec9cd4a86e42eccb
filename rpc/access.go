package rpc

import (
	"context"
	"path"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/state"
)

// caller is the resolved acting party of one request.
type caller struct {
	id     Identity
	appID  string // the app acted for; "" for the admin at the root
	author string
}

// apps are the apps the daemon knows, by id.
type apps map[string]*App

// caller checks the request's app id against the token: an app token may
// act only for its own app (an empty app id means its own); the admin token
// may act at the root ("") or for any known app.
func (known apps) caller(ctx context.Context, appID string) (caller, error) {
	id := identityFrom(ctx)
	switch {
	case id.App != nil:
		if appID != "" && appID != id.App.ID {
			return caller{}, status.Errorf(codes.PermissionDenied, "the token belongs to app %q, the request names app %q", id.App.ID, appID)
		}
		return caller{id: id, appID: id.App.ID, author: state.AppAuthor(id.App.ID)}, nil
	case id.Admin:
		if appID != "" {
			if _, ok := known[appID]; !ok {
				return caller{}, status.Errorf(codes.NotFound, "unknown app %q: apps are declared in .nexus/config.yaml", appID)
			}
		}
		return caller{id: id, appID: appID, author: state.AuthorCLI}, nil
	}
	return caller{}, status.Error(codes.Unauthenticated, "no identity")
}

// defPath turns a path as the caller wrote it into a path relative to the
// definitions root, and checks that the caller may read (or write) it.
//
// Paths are relative to the caller's root: <definitions>/<appId>/ for an
// app, the definitions root for the admin. A leading "/" addresses the
// definitions root; an app needs a grant for anything outside its own root.
func (c caller) defPath(p string, write bool) (string, error) {
	return c.address(p, false, write)
}

// defDir is defPath for a directory; "" is the caller's root.
func (c caller) defDir(p string, write bool) (string, error) {
	return c.address(p, true, write)
}

func (c caller) address(p string, dir, write bool) (string, error) {
	full, err := state.Address(c.appID, p, dir)
	if err != nil {
		return "", toStatus(err)
	}
	if err := c.mayAccess(full, write); err != nil {
		return "", err
	}
	return full, nil
}

// display turns a root-relative path back into the caller's addressing.
func (c caller) display(full string, abs bool) string {
	return state.Display(c.appID, full, abs)
}

func (c caller) mayAccess(full string, write bool) error {
	app := c.id.App
	if app == nil || full == app.ID || strings.HasPrefix(full, app.ID+"/") {
		return nil
	}
	if matchAny(app.Write, full) || (!write && matchAny(app.Read, full)) {
		return nil
	}
	verb := "read"
	if write {
		verb = "write"
	}
	return status.Errorf(codes.PermissionDenied, "app %q may not %s %q: it is outside the app's root and no grant in .nexus/config.yaml covers it", app.ID, verb, "/"+full)
}

// namespace resolves the runtime namespace of a request: the one named, or
// the app's own.
func (c caller) namespace(ns string) (string, error) {
	if ns == "" {
		ns = c.appID
	}
	if ns == "" {
		return "", status.Error(codes.InvalidArgument, "a runtime namespace is needed: set appId or namespace")
	}
	if app := c.id.App; app != nil && ns != app.ID {
		for _, g := range app.Namespaces {
			if g == ns {
				return ns, nil
			}
		}
		return "", status.Errorf(codes.PermissionDenied, "app %q may not use runtime namespace %q: no grant in .nexus/config.yaml covers it", app.ID, ns)
	}
	return ns, nil
}

// matchAny matches a root-relative path against grant patterns: "*"
// matches within one name, "**" any number of names, and a pattern that
// names a directory covers everything below it.
func matchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if matchPattern(strings.Split(strings.Trim(pat, "/"), "/"), strings.Split(p, "/")) {
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
