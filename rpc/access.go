package rpc

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
)

// caller is the resolved acting party of one request, and the base its
// paths are relative to.
type caller struct {
	id    Identity
	party access.Party
	// appID is the app acted for, the base of its definition paths; "" for
	// the admin at the root.
	appID string
}

// apps are the apps the daemon knows, by id.
type apps map[string]*access.App

// caller checks the request's app id against the token: an app token may
// act only for its own app (an empty app id means its own); the admin token
// is the person, and may address the root ("") or any known app's root.
func (known apps) caller(ctx context.Context, appID string) (caller, error) {
	id := identityFrom(ctx)
	switch {
	case id.App != nil:
		if appID != "" && appID != id.App.ID {
			by := "the token"
			if id.Certificate {
				by = "the client certificate"
			}
			return caller{}, status.Errorf(codes.PermissionDenied, "%s belongs to app %q, the request names app %q", by, id.App.ID, appID)
		}
		return caller{id: id, party: access.ForApp(id.App), appID: id.App.ID}, nil
	case id.Admin:
		if appID != "" {
			if _, ok := known[appID]; !ok {
				return caller{}, status.Errorf(codes.NotFound, "unknown app %q: apps are declared in .nexus/config.yaml", appID)
			}
		}
		return caller{id: id, party: access.Person(state.AuthorCLI), appID: appID}, nil
	}
	return caller{}, status.Error(codes.Unauthenticated, "no identity")
}

// defPath turns a path as the caller wrote it into a path relative to the
// definitions root. Paths are relative to the caller's base:
// <definitions>/<appId>/ for an app, the definitions root for the admin;
// a leading "/" addresses the definitions root. Whether the caller may use
// the path is the store's view to decide ([state.Definitions.For]).
func (c caller) defPath(p string) (string, error) {
	full, err := state.Address(c.appID, p, false)
	return full, toStatus(err)
}

// defDir is defPath for a directory; "" is the caller's base.
func (c caller) defDir(p string) (string, error) {
	full, err := state.Address(c.appID, p, true)
	return full, toStatus(err)
}

// display turns a root-relative path back into the caller's addressing.
func (c caller) display(full string, abs bool) string {
	return state.Display(c.appID, full, abs)
}

// namespace resolves the runtime namespace of a request: the one named, or
// the base app's own.
func (c caller) namespace(ns string) (string, error) {
	if ns == "" && c.appID == "" {
		return "", status.Error(codes.InvalidArgument, "a runtime namespace is needed: set appId or namespace")
	}
	if ns == "" {
		ns = c.appID
	}
	ns, err := c.party.Namespace(ns)
	return ns, toStatus(err)
}
