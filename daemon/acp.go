package daemon

import (
	"context"
	"io"
	"sync"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/acp"
	"github.com/nexuscocreate/nexus/gateway"
	"github.com/nexuscocreate/nexus/rpc"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp"
)

// The ACP door (nexusd acp): an ACP client's stdin and stdout, handed to
// the running daemon through its MCP socket ("Bearer TOKEN acp"), or the
// daemon's own stdio when nexusd acp is the daemon. Its sessions are the
// agent core's, visible to every other door.

// acpParty is who an ACP client acts for: the editor is the person's (its
// sessions' agents act for the person, and the policy asks them what it
// asks any agent), or an app with its token — whose client answers no
// question (policy.MayAnswer): its sessions' questions go to the editor,
// and the MCP servers it passes wait for the person.
func acpParty(id rpc.Identity) access.Party {
	if id.App != nil {
		return access.ForApp(id.App)
	}
	return access.Person("acp")
}

// sessionServers decides who may call the tools of the MCP servers an ACP
// client brought: the agents of the sessions of its connection only. The
// hub is set once it exists; until then no such server does.
type sessionServers struct {
	registry *acp.Registry

	mu  sync.Mutex
	hub *mcp.Hub
}

func (s *sessionServers) setHub(h *mcp.Hub) {
	s.mu.Lock()
	s.hub = h
	s.mu.Unlock()
}

// allowed reports whether the caller of author may use server's tools.
func (s *sessionServers) allowed(author, server string) bool {
	if server == "" {
		return true
	}
	s.mu.Lock()
	h := s.hub
	s.mu.Unlock()
	if h == nil {
		return true
	}
	owner := h.OwnerOf(server)
	return owner == "" || s.registry.MayUse(author, owner)
}

// gate refuses the calls of others to a session's MCP servers before the
// policy is asked.
func (s *sessionServers) gate(next tools.Gate) tools.Gate {
	return func(ctx context.Context, gr *tools.GateRequest, setICERC func(tools.ICERC)) error {
		if !s.allowed(gr.Call.Author, gr.Tool.ServerName) {
			return tools.Errorf(tools.CodePermissionDenied, "the MCP server %q belongs to the ACP sessions of one editor connection: only their agents may call it",
				gr.Tool.ServerName)
		}
		return next(ctx, gr, setICERC)
	}
}

// acpOptions are the options of the ACP door of party.
func (p *Parts) acpOptions(party access.Party) acp.Options {
	return acp.Options{Agent: p.Agent, Hub: p.MCP, Config: p.Config, Workspace: p.Workspace, Party: party,
		Registry: p.sessionServers.registry, Version: p.opts.Version, Logger: p.Logger, Getenv: p.opts.Getenv}
}

// acpDoor is the ACP door of the MCP socket.
func (p *Parts) acpDoor(a *rpc.Authenticator) gateway.Door {
	return gateway.Door{
		Authenticate: func(token string) (access.Party, bool) {
			id, ok := a.Identify(token)
			if !ok {
				return access.Party{}, false
			}
			return acpParty(id), true
		},
		Serve: func(ctx context.Context, party access.Party, in io.Reader, out io.Writer) error {
			return acp.Serve(ctx, p.acpOptions(party), in, out)
		},
	}
}
