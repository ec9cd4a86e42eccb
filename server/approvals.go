package server

import (
	"context"
	"time"
)

// The person's remembered "always" answers, as gRPC's ListApprovals and
// RevokeApproval give them.

type approvalWire struct {
	AppID          string `json:"appId"`
	ToolName       string `json:"toolName"`
	ServerName     string `json:"serverName,omitempty"`
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
	AppID      string `json:"appId"`
	ToolName   string `json:"toolName"`
	ServerName string `json:"serverName"`
}

type approvalsRevokeResult struct {
	Revoked bool `json:"revoked"`
}

func (s *Server) approvalsList(_ context.Context, _ *struct{}) (*approvalsListResult, error) {
	res := &approvalsListResult{Approvals: []approvalWire{}}
	for _, a := range s.opts.Approvals.List() {
		d := "reject"
		if a.Allow {
			d = "allow"
		}
		res.Approvals = append(res.Approvals, approvalWire{AppID: a.AppID, ToolName: a.Tool, ServerName: a.Server,
			DefinitionHash: a.DefinitionHash, Allow: a.Allow, Decision: d, Time: a.Time})
	}
	return res, nil
}

// approvalsRevoke forgets a remembered answer: the next such call asks
// again. Revoking one that does not exist is not an error (revoked false).
func (s *Server) approvalsRevoke(_ context.Context, p *approvalsRevokeParams) (*approvalsRevokeResult, error) {
	if p.ToolName == "" {
		return nil, missing("toolName", "the tool whose remembered answer to revoke")
	}
	ok, err := s.opts.Approvals.Revoke(p.AppID, p.ToolName, p.ServerName)
	if err != nil {
		return nil, err
	}
	return &approvalsRevokeResult{Revoked: ok}, nil
}
