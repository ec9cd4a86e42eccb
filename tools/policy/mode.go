package policy

import (
	"context"
	"fmt"

	"github.com/nexuscocreate/nexus/tools"
)

// Mode is the mode of an agent session (ACP's session modes): how the
// policy's verdict on each of its calls is bent. A mode never allows what
// the policy denies, and never allows a write to a protected path without
// asking; only auto-edit allows what the policy would ask about, and only
// edits of the workspace by core tools.
//
//	mode        policy says   the call                              decision
//	default     (any)         (any)                                 as the policy
//	ask         allow         reads (kind read or search)           allow
//	ask         allow         anything else                         ask
//	auto-edit   ask           a core tool of kind edit, not a       allow
//	                          protected path
//	read-only   (any)         reads (kind read or search)           as the policy
//	read-only   (any)         anything else                         deny
//
// Every other case is as the policy decides. An "always" answer given when
// ask mode asks is remembered as any other.
type Mode string

const (
	// ModeDefault is the workspace's policy as configured.
	ModeDefault Mode = "default"
	// ModeAsk asks every time: a call the policy allows is asked instead,
	// unless it only reads.
	ModeAsk Mode = "ask"
	// ModeAutoEdit allows the edits (core tools of kind edit: write_file,
	// edit_file) that the policy would ask about; they stay inside the
	// workspace. Deny stays deny, and protected files are still asked.
	ModeAutoEdit Mode = "auto-edit"
	// ModeReadOnly runs only the calls that read; every other call is
	// denied.
	ModeReadOnly Mode = "read-only"
)

// Valid reports whether m is one of the modes.
func (m Mode) Valid() bool {
	return m == ModeDefault || m == ModeAsk || m == ModeAutoEdit || m == ModeReadOnly
}

type modeKey struct{}

// WithMode returns ctx carrying m as the mode of the calls made with it;
// ModeDefault (or "") leaves ctx as it is.
func WithMode(ctx context.Context, m Mode) context.Context {
	if m == ModeDefault || m == "" {
		return ctx
	}
	return context.WithValue(ctx, modeKey{}, m)
}

// ModeFrom returns the mode WithMode put in ctx; ModeDefault when none.
func ModeFrom(ctx context.Context) Mode {
	if m, ok := ctx.Value(modeKey{}).(Mode); ok {
		return m
	}
	return ModeDefault
}

// reads reports whether a tool only reads: kind read or search.
func reads(d tools.Definition) bool {
	return d.Kind == tools.KindRead || d.Kind == tools.KindSearch
}

// apply bends the policy's verdict v on req by the mode. A mode that is
// not one of the modes denies every call.
func (m Mode) apply(req *Request, v Verdict) Verdict {
	switch m {
	case ModeDefault:
		return v
	case ModeAsk:
		if v.Decision == Allow && !reads(req.Tool) {
			return Verdict{Decision: Ask, Reason: fmt.Sprintf("the session's mode %s asks before every call that does more than read (policy: %s)", m, v.Reason)}
		}
		return v
	case ModeAutoEdit:
		if v.Decision == Ask && v.Protected == "" && req.Tool.ServerName == "" && req.Tool.Kind == tools.KindEdit {
			return Verdict{Decision: Allow, Reason: fmt.Sprintf("the session's mode %s allows edits inside the workspace (policy: %s)", m, v.Reason)}
		}
		return v
	case ModeReadOnly:
		if reads(req.Tool) {
			return v
		}
		return Verdict{Decision: Deny, Reason: fmt.Sprintf("the session's mode %s runs only calls that read, and %s is of kind %s (policy: %s)",
			m, displayName(req.Tool), req.Tool.Kind, v.Reason)}
	}
	return Verdict{Decision: Deny, Reason: fmt.Sprintf("the session's mode %q is not one of default, ask, auto-edit, read-only", m)}
}
