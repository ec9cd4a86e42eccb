package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/checkpoints"
	"github.com/nexuscocreate/nexus/events"
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

// watchCommands tells the agent's doors when command files change
// (agent.Service.CommandsChanged), so that they send their sessions'
// available_commands_update again: a commit under commands/ of the
// definitions root (an app's, the CLI's, an edit made on disk), or a
// change under one of agent.commandDirs of the workspace. Changes that
// come while the doors are told are told once after. It runs until ctx
// ends.
func watchCommands(ctx context.Context, svc *agent.Service, bus *events.Bus, ws string, dirs []string, logger *slog.Logger) {
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default: // told already, and not yet passed on
		}
	}
	detach := bus.Attach(func(ev any) {
		if c, ok := ev.(state.DefinitionChange); ok && agent.IsCommandPath(c.Path) {
			poke()
		}
	})
	defer detach()
	var wg sync.WaitGroup
	defer wg.Wait()
	if len(dirs) > 0 {
		wg.Go(func() {
			err := workspace.Watch(ctx, workspace.WatchOptions{
				Root:     ws,
				Ignore:   outsideDirs(dirs),
				OnChange: func([]string) { poke() },
				OnRescan: poke,
				OnError:  func(err error) { logger.Warn("agent.commandDirs watcher", "error", err.Error()) },
				Logger:   logger,
			})
			if err != nil {
				logger.Warn("agent.commandDirs are not watched: the editors' lists of commands change at their next session", "error", err.Error())
			}
		})
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			svc.CommandsChanged()
		}
	}
}

// outsideDirs is a watch's Ignore that keeps only the directories dirs
// (relative to the workspace), what is under them, and the directories on
// the way to them: a directory created later on the way is watched.
func outsideDirs(dirs []string) func(rel string) bool {
	var clean []string
	for _, d := range dirs {
		clean = append(clean, path.Clean(filepath.ToSlash(d)))
	}
	return func(rel string) bool {
		for _, d := range clean {
			if rel == d || strings.HasPrefix(rel, d+"/") || strings.HasPrefix(d, rel+"/") {
				return false
			}
		}
		return true
	}
}

// promptHook runs the userPromptSubmit hooks on an agent session's
// prompts; nil without any.
func promptHook(h *hooks.Hooks) func(ctx context.Context, session, turn, party, prompt string) (string, error) {
	if !h.Prompts() {
		return nil
	}
	return h.Prompt
}
