package server

import (
	"context"
	"slices"

	"go.lsp.dev/jsonrpc2"
)

// typed adapts a method on decoded params to the method table.
func typed[P, R any](fn func(s *Server, ctx context.Context, p *P) (R, error)) func(*Server, context.Context, jsonrpc2.RawMessage) (any, error) {
	return func(s *Server, ctx context.Context, raw jsonrpc2.RawMessage) (any, error) {
		p := new(P)
		if err := decodeParams(raw, p); err != nil {
			return nil, err
		}
		return fn(s, ctx, p)
	}
}

func (s *Server) methodTable() map[string]method {
	t := map[string]method{
		"nexus/definitions/get":           {fn: typed((*Server).definitionsGet)},
		"nexus/definitions/set":           {fn: typed((*Server).definitionsSet)},
		"nexus/definitions/applyDiff":     {fn: typed((*Server).definitionsApplyDiff)},
		"nexus/definitions/delete":        {fn: typed((*Server).definitionsDelete)},
		"nexus/definitions/restore":       {fn: typed((*Server).definitionsRestore)},
		"nexus/definitions/list":          {fn: typed((*Server).definitionsList)},
		"nexus/definitions/history":       {fn: typed((*Server).definitionsHistory)},
		"nexus/definitions/diff":          {fn: typed((*Server).definitionsDiff)},
		"nexus/runtime/get":               {fn: typed((*Server).runtimeGet)},
		"nexus/runtime/set":               {fn: typed((*Server).runtimeSet)},
		"nexus/runtime/delete":            {fn: typed((*Server).runtimeDelete)},
		"nexus/runtime/list":              {fn: typed((*Server).runtimeList)},
		"nexus/tools/list":                {fn: typed((*Server).toolsList)},
		"nexus/tools/get":                 {fn: typed((*Server).toolsGet)},
		"nexus/tools/execute":             {fn: typed((*Server).toolsExecute), async: true},
		"nexus/toolCalls/list":            {fn: typed((*Server).toolCallsList)},
		"nexus/toolCalls/cancel":          {fn: typed((*Server).toolCallsCancel)},
		"nexus/mcp/servers":               {fn: typed((*Server).mcpServers)},
		"nexus/mcp/restart":               {fn: typed((*Server).mcpRestart), async: true},
		"nexus/mcp/trust":                 {fn: typed((*Server).mcpTrust), async: true},
		"nexus/hooks/list":                {fn: typed((*Server).hooksList)},
		"nexus/hooks/trust":               {fn: typed((*Server).hooksTrust), async: true},
		"nexus/mcp/resources/list":        {fn: typed((*Server).mcpResourcesList), async: true},
		"nexus/mcp/resources/read":        {fn: typed((*Server).mcpResourcesRead), async: true},
		"nexus/mcp/resources/templates":   {fn: typed((*Server).mcpResourcesTemplates), async: true},
		"nexus/mcp/resources/subscribe":   {fn: typed((*Server).mcpResourcesSubscribe), async: true},
		"nexus/mcp/resources/unsubscribe": {fn: typed((*Server).mcpResourcesUnsubscribe)},
		"nexus/mcp/prompts/list":          {fn: typed((*Server).mcpPromptsList), async: true},
		"nexus/mcp/prompts/get":           {fn: typed((*Server).mcpPromptsGet), async: true},
		"nexus/mcp/login":                 {fn: typed((*Server).mcpLogin), async: true},
		"nexus/mcp/logout":                {fn: typed((*Server).mcpLogout), async: true},
		"nexus/checkpoints/list":          {fn: typed((*Server).checkpointsList)},
		"nexus/checkpoints/diff":          {fn: typed((*Server).checkpointsDiff), async: true},
		"nexus/checkpoints/undo":          {fn: typed((*Server).checkpointsUndo), async: true},
		"nexus/checkpoints/redo":          {fn: typed((*Server).checkpointsRedo), async: true},
		"nexus/checkpoints/gc":            {fn: typed((*Server).checkpointsGC), async: true},
	}
	if s.opts.Approvals != nil {
		t["nexus/approvals/list"] = method{fn: typed((*Server).approvalsList)}
		t["nexus/approvals/revoke"] = method{fn: typed((*Server).approvalsRevoke)}
	}
	if s.opts.Agent != nil {
		t["nexus/agent/sessions/new"] = method{fn: typed((*Server).agentSessionsNew)}
		t["nexus/agent/sessions/list"] = method{fn: typed((*Server).agentSessionsList)}
		t["nexus/agent/sessions/load"] = method{fn: typed((*Server).agentSessionsLoad), async: true}
		t["nexus/agent/sessions/delete"] = method{fn: typed((*Server).agentSessionsDelete)}
		t["nexus/agent/prompt"] = method{fn: typed((*Server).agentPrompt), async: true}
		t["nexus/agent/cancel"] = method{fn: typed((*Server).agentCancel)}
	}
	return t
}

func (s *Server) methodNames() []string {
	names := make([]string, 0, len(s.methods))
	for n := range s.methods {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// coded is an error of a nexus/ method with its code and kind.
func coded(code jsonrpc2.Code, kind, msg string) error {
	e := jsonrpc2.NewError(code, msg)
	e.Data = jsonrpc2.RawMessage(`{"code":"` + kind + `"}`)
	return e
}
