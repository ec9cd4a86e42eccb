package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/checkpoints"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/hooks"
	"github.com/nexuscocreate/nexus/tools/policy"
	"github.com/nexuscocreate/nexus/workspace"
)

// openAgent opens the agent core: its sessions' tool calls go through the
// ToolManager, offered only the tools the policy does not deny, and their
// permission requests go to the terminal that prompts them when there is
// one, else to the editor.
func openAgent(l layout, cfg *workspace.Config, tp *toolParts, defs *state.Definitions, cps *checkpoints.Store,
	apps map[string]*access.App, ss *sessionServers, opts Options, logger *slog.Logger) (*agent.Service, error) {
	var undo agent.Checkpoints
	if cps != nil {
		undo = cps // a nil *Store in the interface would be called
	}
	svc, err := agent.NewService(agent.Options{
		Checkpoints: undo,
		Layout:      l.Layout,
		Config:      cfg,
		Tools:       tp.manager,
		MayUse: func(party access.Party, d tools.Definition) bool {
			if !ss.allowed(party.Author(), d.ServerName) {
				return false // an MCP server another editor connection brought
			}
			v := tp.policy.Decide(policy.Request{AppID: party.AppID(), Agent: true, Tool: d, Args: json.RawMessage(`{}`)})
			return v.Decision != policy.Deny
		},
		App: func(id string) *access.App { return apps[id] },
		ReadDefinition: func(party access.Party, path string) ([]byte, error) {
			f, err := defs.For(party).Get(path, "")
			return f.Content, err
		},
		ReadDefinitions: func(party access.Party, dir string) ([]agent.DefinitionFile, error) {
			return readDefinitions(defs.For(party), dir)
		},
		PromptHook:  promptHook(tp.hooks),
		Getenv:      opts.Getenv,
		NewProvider: opts.NewProvider,
		Logger:      logger,
	})
	if err != nil {
		return nil, err
	}
	tp.approvers.Route(func(call tools.Call) policy.Approver {
		// An MCP server's sampling request is asked of whoever made the
		// call it came in (the terminal of a chat, else the editor).
		if strings.HasPrefix(call.Author, "mcp:") && call.RequestID != "" {
			if parent, ok := tp.manager.Get(call.RequestID); ok && !parent.Done() {
				call = parent
			}
		}
		return svc.ApproverFor(call)
	})
	return svc, nil
}

// readDefinitions reads the markdown files under dir that v may read, at
// any depth; a dir v may not list holds none.
func readDefinitions(v *state.View, dir string) ([]agent.DefinitionFile, error) {
	entries, err := v.List(dir, true)
	if errors.Is(err, access.ErrDenied) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var files []agent.DefinitionFile
	for _, e := range entries {
		if e.Dir || !strings.HasSuffix(e.Name, ".md") {
			continue
		}
		f, err := v.Get(e.Path, "")
		if err != nil {
			return files, fmt.Errorf("definition %s: %w", e.Path, err)
		}
		file := agent.DefinitionFile{Path: e.Path, Content: f.Content, Revision: f.Revision}
		if h, _, err := v.History(e.Path, 1, ""); err == nil && len(h) == 1 {
			file.Author = h[0].Author
		}
		files = append(files, file)
	}
	return files, nil
}

// promptHook runs the userPromptSubmit hooks on an agent session's
// prompts; nil without any.
func promptHook(h *hooks.Hooks) func(ctx context.Context, session, turn, party, prompt string) (string, error) {
	if !h.Prompts() {
		return nil
	}
	return h.Prompt
}
