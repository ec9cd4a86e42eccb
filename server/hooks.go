package server

import (
	"context"
	"errors"

	"github.com/nexuscocreate/nexus/tools/hooks"
)

type hooksListResult struct {
	Hooks []hooks.Status `json:"hooks"`
}

// hooksList is the hooks of .nexus/config.yaml, whether each is approved,
// what it runs and the files it pins.
func (s *Server) hooksList(_ context.Context, _ *struct{}) (*hooksListResult, error) {
	out := &hooksListResult{Hooks: []hooks.Status{}}
	if s.opts.Hooks != nil {
		out.Hooks = append(out.Hooks, s.opts.Hooks.List()...)
	}
	return out, nil
}

type hooksTrustParams struct {
	Name string `json:"name"`
	// Pin, when set, is the pin of the hook the person was shown.
	Pin string `json:"pin,omitempty"`
}

type hooksTrustResult struct {
	Hook hooks.Status `json:"hook"`
}

// hooksTrust is the person's approval of a hook: as it is now, or as it
// was shown when pin is set.
func (s *Server) hooksTrust(_ context.Context, p *hooksTrustParams) (*hooksTrustResult, error) {
	if p.Name == "" {
		return nil, missing("name", "the hook to approve, such as preToolUse[0]")
	}
	if s.opts.Hooks == nil {
		return nil, notFound("no hooks are configured (hooks in .nexus/config.yaml)")
	}
	st, err := s.opts.Hooks.Trust(editor, p.Name, p.Pin)
	if err != nil {
		if errors.Is(err, hooks.ErrUnknownHook) {
			return nil, notFound("%v", err)
		}
		return nil, precondition("%v", err)
	}
	return &hooksTrustResult{Hook: st}, nil
}

// requestHookTrust is the request nexusd sends the editor about a hook
// that waits for the person's approval; the answers are those of
// nexus/requestMcpTrust.
const requestHookTrust = "nexus/requestHookTrust"

type hookTrustRequest struct {
	// Hook carries what the hook runs, its files and its pin.
	Hook    hooks.Status `json:"hook"`
	Options []string     `json:"options"`
}

// attachHookAsker makes the editor the one asked to approve hooks that
// wait, from initialized until the editor goes.
func (s *Server) attachHookAsker() {
	if s.opts.Hooks != nil {
		s.opts.Hooks.SetAsker(editor, s.askEditorHookTrust)
	}
}

// askEditorHookTrust sends nexus/requestHookTrust and waits for the
// answer, "allow" or "reject" (see askEditorTrust).
func (s *Server) askEditorHookTrust(ctx context.Context, st hooks.Status) (bool, error) {
	return s.askEditorTrustOf(ctx, requestHookTrust, hookTrustRequest{Hook: st, Options: []string{trustAllow, trustReject}})
}
