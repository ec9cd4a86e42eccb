package server

import (
	"context"
	"encoding/json"

	"go.lsp.dev/jsonrpc2"

	"github.com/nexuscocreate/nexus/agent"
)

// The agent's methods: the editor is the person, and its sessions are the
// person's (those started from the CLI too; an app's are its own).

type agentUpdateParams struct {
	SessionID string       `json:"sessionId"`
	Update    agent.Update `json:"update"`
}

type agentNewParams struct {
	// Profile is an llm profile of the config; empty is llm.default.
	Profile string `json:"profile"`
}

type agentSessionParams struct {
	SessionID string `json:"sessionId"`
}

type agentSessionResult struct {
	Session agent.SessionInfo `json:"session"`
	// Profiles are the configured llm profiles, for a model picker.
	Profiles []string        `json:"profiles"`
	Commands []agent.Command `json:"availableCommands"`
}

type agentLoadResult struct {
	agentSessionResult
	// Updates are the conversation so far, as the updates that made it
	// (also sent as nexus/agent/update before the answer).
	Updates []agent.Update `json:"updates"`
}

type agentListResult struct {
	Sessions []agent.SessionInfo `json:"sessions"`
}

type agentPromptParams struct {
	SessionID string `json:"sessionId"`
	// Prompt is the text; one that starts with "/" is a special command.
	Prompt string `json:"prompt"`
}

type agentCancelResult struct {
	Cancelled bool `json:"cancelled"`
}

func (s *Server) agentSessionsNew(ctx context.Context, p *agentNewParams) (*agentSessionResult, error) {
	svc := s.opts.Agent
	info, err := svc.New(ctx, agent.NewSession{Owner: editor, Profile: p.Profile})
	if err != nil {
		return nil, agentError(err)
	}
	cmds := s.sendCommands(info.ID)
	return &agentSessionResult{Session: info, Profiles: svc.Profiles(), Commands: cmds}, nil
}

func (s *Server) agentSessionsList(_ context.Context, _ *struct{}) (*agentListResult, error) {
	svc := s.opts.Agent
	list := svc.List(editor)
	if list == nil {
		list = []agent.SessionInfo{}
	}
	return &agentListResult{Sessions: list}, nil
}

func (s *Server) agentSessionsLoad(ctx context.Context, p *agentSessionParams) (*agentLoadResult, error) {
	svc := s.opts.Agent
	if p.SessionID == "" {
		return nil, missing("sessionId", "the session to load")
	}
	info, updates, err := svc.Load(editor, p.SessionID)
	if err != nil {
		return nil, agentError(err)
	}
	for _, u := range updates {
		s.out.agent(agentUpdateParams{SessionID: info.ID, Update: u})
	}
	cmds := s.sendCommands(info.ID)
	if err := s.out.flush(ctx); err != nil {
		return nil, err
	}
	return &agentLoadResult{agentSessionResult: agentSessionResult{Session: info, Profiles: svc.Profiles(), Commands: cmds}, Updates: updates}, nil
}

func (s *Server) agentSessionsDelete(_ context.Context, p *agentSessionParams) (*emptyResult, error) {
	svc := s.opts.Agent
	if p.SessionID == "" {
		return nil, missing("sessionId", "the session to delete")
	}
	if err := svc.Delete(editor, p.SessionID); err != nil {
		return nil, agentError(err)
	}
	s.commandsMu.Lock()
	delete(s.agentSessions, p.SessionID)
	s.commandsMu.Unlock()
	return &emptyResult{}, nil
}

// agentPrompt runs a turn; its updates go out as nexus/agent/update, all
// of them before the answer, which carries the stop reason. Its tool
// calls' permission requests come as nexus/requestPermission, as any
// call's.
func (s *Server) agentPrompt(ctx context.Context, p *agentPromptParams) (*agent.PromptResult, error) {
	svc := s.opts.Agent
	if p.SessionID == "" {
		return nil, missing("sessionId", "the session to prompt")
	}
	if p.Prompt == "" {
		return nil, missing("prompt", "the text to send")
	}
	res, err := svc.Prompt(ctx, editor, p.SessionID, p.Prompt, agent.PromptOptions{
		OnUpdate: func(u agent.Update) { s.out.agent(agentUpdateParams{SessionID: p.SessionID, Update: u}) },
		Ask:      s.ownApprover(),
	})
	if ferr := s.out.flush(context.WithoutCancel(ctx)); ferr != nil && err == nil {
		err = ferr
	}
	if err != nil {
		return nil, agentError(err)
	}
	return &res, nil
}

func (s *Server) agentCancel(_ context.Context, p *agentSessionParams) (*agentCancelResult, error) {
	svc := s.opts.Agent
	if p.SessionID == "" {
		return nil, missing("sessionId", "the session whose prompt to cancel")
	}
	ok, err := svc.Cancel(editor, p.SessionID)
	if err != nil {
		return nil, agentError(err)
	}
	return &agentCancelResult{Cancelled: ok}, nil
}

// agentError answers an error of the agent with the code every door uses
// for it (agent.ErrorCode), its kind in data.code, and the agent's message,
// which says what to do.
func agentError(err error) error {
	kind := agent.ErrorCode(err)
	code, ok := map[agent.Code]jsonrpc2.Code{
		agent.CodeNotFound:           CodeNotFound,
		agent.CodeFailedPrecondition: CodeFailedPrecondition,
		agent.CodeUnavailable:        CodeUnavailable,
		agent.CodeAborted:            CodeInternal,
		agent.CodeInvalidArgument:    jsonrpc2.InvalidParams,
	}[kind]
	if !ok {
		return err // cancelled and internal: as any method's error
	}
	return coded(code, string(kind), err.Error())
}

// sendCommands sends the special commands to a session the editor opens,
// and returns them; the session gets them again when they change
// (resendCommands).
func (s *Server) sendCommands(id string) []agent.Command {
	s.commandsMu.Lock()
	defer s.commandsMu.Unlock()
	cmds := s.opts.Agent.Commands(editor)
	if s.agentSessions == nil {
		s.agentSessions = map[string]bool{}
	}
	s.agentSessions[id] = true
	s.sentCommands = commandsKey(cmds)
	s.out.agent(agentUpdateParams{SessionID: id, Update: agent.Update{SessionUpdate: "available_commands_update", AvailableCommands: cmds}})
	return cmds
}

// resendCommands sends the special commands again to every session the
// editor opened, when they are not those sent last: a command file was
// added, changed or removed (agent.Service.WatchCommands). The chat's "/"
// list reads them.
func (s *Server) resendCommands() {
	s.commandsMu.Lock()
	defer s.commandsMu.Unlock()
	if len(s.agentSessions) == 0 {
		return
	}
	cmds := s.opts.Agent.Commands(editor)
	key := commandsKey(cmds)
	if key == s.sentCommands {
		return
	}
	s.sentCommands = key
	for id := range s.agentSessions {
		s.out.agent(agentUpdateParams{SessionID: id, Update: agent.Update{SessionUpdate: "available_commands_update", AvailableCommands: cmds}})
	}
}

func commandsKey(cmds []agent.Command) string {
	data, _ := json.Marshal(cmds)
	return string(data)
}
