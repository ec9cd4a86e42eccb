package server

import (
	"context"
	"time"
)

// The person's remembered "always" answers, as gRPC's ListApprovals and
// RevokeApproval give them, with their scope spelled out.

type approvalWire struct {
	AppID string `json:"appId"`
	// ToolName is the answer's name, as gRPC's Approval.tool_name has it:
	// the tool's, with the scope after a colon ("execute_command:ls",
	// "read_file:src/**", "execute_command:**" for a broad answer).
	// approvals/revoke takes it back.
	ToolName   string `json:"toolName"`
	ServerName string `json:"serverName,omitempty"`
	// Tool is the tool's own name.
	Tool string `json:"tool"`
	// Scope is command, path, directory, domain (web_fetch's host), tool
	// (the whole tool: MCP tools) or broad; Broad is set for broad answers, from an approvals file
	// written before answers had scopes, which cover every call of the
	// tool.
	Scope     string   `json:"scope"`
	Broad     bool     `json:"broad,omitempty"`
	Command   []string `json:"command,omitempty"`
	Path      string   `json:"path,omitempty"`
	Directory string   `json:"directory,omitempty"`
	Domain    string   `json:"domain,omitempty"`
	// Covers says in words which calls the answer covers.
	Covers         string `json:"covers"`
	DefinitionHash string `json:"definitionHash"`
	Allow          bool   `json:"allow"`
	// Decision is "allow" or "reject", for people.
	Decision string    `json:"decision"`
	Time     time.Time `json:"time"`
}

type approvalsListResult struct {
	Approvals []approvalWire `json:"approvals"`
}

type approvalsRevokeParams struct {
	AppID string `json:"appId"`
	// ToolName is a tool's name, which forgets every answer about it, or
	// an answer's toolName, which forgets that one.
	ToolName   string `json:"toolName"`
	ServerName string `json:"serverName"`
}

type approvalsRevokeResult struct {
	Revoked bool `json:"revoked"`
	// Count is how many answers were forgotten.
	Count int `json:"count"`
}

func (s *Server) approvalsList(_ context.Context, _ *struct{}) (*approvalsListResult, error) {
	res := &approvalsListResult{Approvals: []approvalWire{}}
	for _, a := range s.opts.Approvals.List() {
		d := "reject"
		if a.Allow {
			d = "allow"
		}
		res.Approvals = append(res.Approvals, approvalWire{AppID: a.AppID, ToolName: a.Name(), ServerName: a.Server, Tool: a.Tool,
			Scope: a.Kind(), Broad: a.Broad, Command: a.Command, Path: a.Path, Directory: a.Directory, Domain: a.Domain, Covers: a.Covers(),
			DefinitionHash: a.DefinitionHash, Allow: a.Allow, Decision: d, Time: a.Time})
	}
	return res, nil
}

// approvalsRevoke forgets remembered answers: the next such call asks
// again. Revoking one that does not exist is not an error (revoked false).
func (s *Server) approvalsRevoke(_ context.Context, p *approvalsRevokeParams) (*approvalsRevokeResult, error) {
	if p.ToolName == "" {
		return nil, missing("toolName", "the tool (or the answer's toolName) whose remembered answers to revoke")
	}
	n, err := s.opts.Approvals.Revoke(p.AppID, p.ToolName, p.ServerName)
	if err != nil {
		return nil, err
	}
	return &approvalsRevokeResult{Revoked: n > 0, Count: n}, nil
}
