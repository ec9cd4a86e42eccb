package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/agent"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// agentService is the Agent API: a thin adapter from protobuf to the
// agent.Service, acting for the caller's party (the person for the admin
// token, the app for an app token).
type agentService struct {
	nexusv1.UnimplementedAgentServer

	agent *agent.Service
	apps  apps

	// asksMu guards asks: the permission requests of prompts started with
	// ask_permissions that wait for AnswerPermission, by request id.
	asksMu sync.Mutex
	asks   map[string]*pendingAsk
	// questions are the MCP servers' questions of prompts started with
	// ask_elicitation, shared with ExecuteToolStream's.
	questions *questions
}

var _ nexusv1.AgentServer = (*agentService)(nil)

// pendingAsk is a permission request waiting for its answer.
type pendingAsk struct {
	session string
	appID   string // of the party that prompted; "" for the person
	answer  chan policy.Answer
}

func newAgentService(svc *agent.Service, known apps, qs *questions) *agentService {
	return &agentService{agent: svc, apps: known, asks: map[string]*pendingAsk{}, questions: qs}
}

func (s *agentService) NewSession(ctx context.Context, req *nexusv1.NewSessionRequest) (*nexusv1.NewSessionResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	info, err := s.agent.New(ctx, agent.NewSession{Owner: c.party, Profile: req.GetProfile()})
	if err != nil {
		return nil, agentStatus(err)
	}
	return &nexusv1.NewSessionResponse{Session: sessionInfo(info)}, nil
}

func (s *agentService) ListSessions(ctx context.Context, _ *nexusv1.ListSessionsRequest) (*nexusv1.ListSessionsResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	resp := &nexusv1.ListSessionsResponse{}
	for _, info := range s.agent.List(c.party) {
		resp.Sessions = append(resp.Sessions, sessionInfo(info))
	}
	return resp, nil
}

func (s *agentService) LoadSession(ctx context.Context, req *nexusv1.LoadSessionRequest) (*nexusv1.LoadSessionResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	if req.GetSessionId() == "" {
		return nil, status.Error(codes.InvalidArgument, "session_id is required")
	}
	info, updates, err := s.agent.Load(c.party, req.GetSessionId())
	if err != nil {
		return nil, agentStatus(err)
	}
	resp := &nexusv1.LoadSessionResponse{Session: sessionInfo(info)}
	for _, u := range updates {
		b, err := json.Marshal(u)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "encode update: %v", err)
		}
		resp.UpdatesJson = append(resp.UpdatesJson, string(b))
	}
	return resp, nil
}

func (s *agentService) DeleteSession(ctx context.Context, req *nexusv1.DeleteSessionRequest) (*nexusv1.DeleteSessionResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	if req.GetSessionId() == "" {
		return nil, status.Error(codes.InvalidArgument, "session_id is required")
	}
	if err := s.agent.Delete(c.party, req.GetSessionId()); err != nil {
		return nil, agentStatus(err)
	}
	return &nexusv1.DeleteSessionResponse{}, nil
}

func (s *agentService) Cancel(ctx context.Context, req *nexusv1.CancelRequest) (*nexusv1.CancelResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	if req.GetSessionId() == "" {
		return nil, status.Error(codes.InvalidArgument, "session_id is required")
	}
	ok, err := s.agent.Cancel(c.party, req.GetSessionId())
	if err != nil {
		return nil, agentStatus(err)
	}
	return &nexusv1.CancelResponse{Cancelled: ok}, nil
}

// Prompt runs the prompt with the stream's context: a client that goes
// away cancels the turn. Updates come from the turn and from its parallel
// tool calls; one mutex keeps the stream's sends apart.
func (s *agentService) Prompt(req *nexusv1.PromptRequest, stream nexusv1.Agent_PromptServer) error {
	ctx := stream.Context()
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return err
	}
	if req.GetSessionId() == "" {
		return status.Error(codes.InvalidArgument, "session_id is required")
	}
	if err := mayAnswer(c.party, "ask_permissions", req.GetAskPermissions()); err != nil {
		return err
	}
	if err := mayAnswer(c.party, "ask_elicitation", req.GetAskElicitation()); err != nil {
		return err
	}
	var (
		sendMu  sync.Mutex
		sendErr error
	)
	send := func(m *nexusv1.PromptResponse) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		if sendErr == nil {
			sendErr = stream.Send(m)
		}
		return sendErr
	}
	// Nothing is sent once the handler returns (a question withdrawn as
	// the prompt's calls end).
	defer func() {
		sendMu.Lock()
		if sendErr == nil {
			sendErr = errNoStream
		}
		sendMu.Unlock()
	}()
	sendUpdate := func(u agent.Update) error {
		b, err := json.Marshal(u)
		if err != nil {
			return err
		}
		return send(&nexusv1.PromptResponse{UpdateJson: string(b)})
	}
	opts := agent.PromptOptions{OnUpdate: func(u agent.Update) { _ = sendUpdate(u) }}
	if req.GetAskPermissions() {
		opts.Ask = s.asker(req.GetSessionId(), c.party, sendUpdate)
	}
	if req.GetAskElicitation() {
		opts.Elicit = s.questions.elicitor(owner(ctx), req.GetSessionId(), func(q *tools.Elicitation, withdrawn bool) error {
			kind := "elicitation_request"
			if withdrawn {
				kind = "elicitation_withdrawn"
			}
			u := agent.Update{SessionUpdate: kind, Elicitation: q}
			if q.Call != nil {
				u.ToolCallID = q.Call.ID
			}
			return sendUpdate(u)
		})
	}
	res, err := s.agent.Prompt(ctx, c.party, req.GetSessionId(), req.GetText(), opts)
	if err != nil {
		return agentStatus(err)
	}
	out := promptResult(res)
	out.SessionId = req.GetSessionId()
	return send(&nexusv1.PromptResponse{Result: out})
}

// permissionOptions are the answers a permission request offers.
var permissionOptions = []string{string(policy.AllowOnce), string(policy.AllowAlways), string(policy.RejectOnce), string(policy.RejectAlways)}

// asker is the approver of a prompt started with ask_permissions by
// party (the person's terminal): it puts a permission_request update in
// the prompt's stream and waits for AnswerPermission. A request that
// cannot be sent, or whose prompt ends first, is not answered: the policy
// denies the call.
func (s *agentService) asker(session string, party access.Party, send func(agent.Update) error) policy.Approver {
	appID := party.AppID()
	return policy.Approver{Who: party, Ask: func(ctx context.Context, call tools.Call, record policy.ICERC) (policy.Answer, error) {
		id, err := uuid.NewV7()
		if err != nil {
			return "", err
		}
		p := &pendingAsk{session: session, appID: appID, answer: make(chan policy.Answer, 1)}
		s.asksMu.Lock()
		s.asks[id.String()] = p
		s.asksMu.Unlock()
		defer func() {
			s.asksMu.Lock()
			delete(s.asks, id.String())
			s.asksMu.Unlock()
		}()
		err = send(agent.Update{SessionUpdate: "permission_request", ToolCallID: call.ID, Permission: &agent.PermissionRequest{
			RequestID: id.String(), Call: call, ICERC: record, Options: permissionOptions}})
		if err != nil {
			return "", err
		}
		select {
		case a := <-p.answer:
			return a, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}}
}

func (s *agentService) AnswerPermission(ctx context.Context, req *nexusv1.AnswerPermissionRequest) (*nexusv1.AnswerPermissionResponse, error) {
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return nil, err
	}
	answer := policy.Answer(req.GetAnswer())
	if !answer.Valid() {
		return nil, status.Errorf(codes.InvalidArgument, "answer %q is not one of %s", req.GetAnswer(), strings.Join(permissionOptions, ", "))
	}
	s.asksMu.Lock()
	p, ok := s.asks[req.GetRequestId()]
	if ok && (p.session != req.GetSessionId() || p.appID != c.party.AppID()) {
		ok = false // someone else's request is as unknown as none
	}
	if ok {
		delete(s.asks, req.GetRequestId())
	}
	s.asksMu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no open permission request %q in session %q: unknown, already answered, or its prompt ended",
			req.GetRequestId(), req.GetSessionId())
	}
	p.answer <- answer // buffered: the only send, as the request left the map
	return &nexusv1.AnswerPermissionResponse{}, nil
}

// agentStatus maps the agent's errors to gRPC statuses by agent.ErrorCode,
// the classification every door shares, keeping their messages (a missing
// key's names the variable to set).
func agentStatus(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	code, ok := map[agent.Code]codes.Code{
		agent.CodeNotFound:           codes.NotFound,
		agent.CodeFailedPrecondition: codes.FailedPrecondition,
		agent.CodeUnavailable:        codes.Unavailable,
		agent.CodeAborted:            codes.Aborted,
		agent.CodeInvalidArgument:    codes.InvalidArgument,
		agent.CodeCanceled:           codes.Canceled,
	}[agent.ErrorCode(err)]
	if !ok {
		code = codes.Internal
	}
	return status.Error(code, err.Error())
}

func sessionInfo(i agent.SessionInfo) *nexusv1.AgentSession {
	return &nexusv1.AgentSession{
		SessionId: i.ID, Title: i.Title, Profile: i.Profile, Model: i.Model, AppId: i.AppID,
		CreatedAt: timestamppb.New(i.Created), UpdatedAt: timestamppb.New(i.Updated),
		Messages: int32(i.Messages), Usage: agentUsage(i.Usage), Cost: agentCost(i.Cost), Running: i.Running,
	}
}

func promptResult(r agent.PromptResult) *nexusv1.PromptResult {
	return &nexusv1.PromptResult{StopReason: r.StopReason, Usage: agentUsage(r.Usage), Cost: agentCost(r.Cost), Quit: r.Quit, Resume: r.Resume}
}

func agentUsage(u agent.Use) *nexusv1.AgentUsage {
	return &nexusv1.AgentUsage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens),
		CachedTokens: int64(u.CachedTokens), Requests: int64(u.Requests)}
}

func agentCost(c *agent.Cost) *nexusv1.AgentCost {
	if c == nil {
		return nil
	}
	return &nexusv1.AgentCost{Amount: c.Amount, Currency: c.Currency}
}
