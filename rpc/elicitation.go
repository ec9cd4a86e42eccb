package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/access"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// questions are the questions of MCP servers put to gRPC callers that
// answer them themselves (ExecuteToolStream and Prompt with
// ask_elicitation), waiting for AnswerElicitation.
type questions struct {
	mu   sync.Mutex
	open map[string]*openQuestion
}

// openQuestion is a question waiting for its answer: only the caller that
// was asked (its app, and for a prompt its session) may answer it.
type openQuestion struct {
	q       *tools.Elicitation
	appID   string
	session string
	answer  chan tools.ElicitResult
}

func newQuestions() *questions { return &questions{open: map[string]*openQuestion{}} }

// elicitor returns the elicitor of one caller: it sends each question,
// waits for AnswerElicitation, and sends its withdrawal when ctx ends
// first. A question that cannot be sent is not answered: declined.
func (qs *questions) elicitor(appID, session string, send func(q *tools.Elicitation, withdrawn bool) error) tools.Elicitor {
	return func(ctx context.Context, q *tools.Elicitation) (tools.ElicitResult, error) {
		oq := &openQuestion{q: q, appID: appID, session: session, answer: make(chan tools.ElicitResult, 1)}
		qs.mu.Lock()
		qs.open[q.ID] = oq
		qs.mu.Unlock()
		defer func() {
			qs.mu.Lock()
			delete(qs.open, q.ID)
			qs.mu.Unlock()
		}()
		if err := send(q, false); err != nil {
			return tools.ElicitResult{}, err
		}
		select {
		case a := <-oq.answer:
			return a, nil
		case <-ctx.Done():
			_ = send(q, true)
			return tools.ElicitResult{}, ctx.Err()
		}
	}
}

// answer answers an open question of the caller, once it is complete and
// matches the requested schema; the question stays open otherwise.
func (qs *questions) answer(appID, session string, req *nexusv1.AnswerElicitationRequest) (*nexusv1.AnswerElicitationResponse, error) {
	res := tools.ElicitResult{Action: req.GetAction()}
	if c := strings.TrimSpace(req.GetContentJson()); c != "" {
		if err := json.Unmarshal([]byte(c), &res.Content); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "content_json is not a JSON object: %v", err)
		}
	}
	qs.mu.Lock()
	oq, ok := qs.open[req.GetRequestId()]
	if ok && (oq.appID != appID || oq.session != session) {
		ok = false // someone else's question is as unknown as none
	}
	if !ok {
		qs.mu.Unlock()
		return nil, status.Errorf(codes.NotFound, "no open question %q: unknown, already answered, or withdrawn", req.GetRequestId())
	}
	checked, err := oq.q.Check(res)
	if err != nil {
		qs.mu.Unlock()
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	delete(qs.open, req.GetRequestId())
	qs.mu.Unlock()
	oq.answer <- checked // buffered: the only send, as the question left the map
	out := &nexusv1.AnswerElicitationResponse{}
	if checked.Content != nil {
		b, err := json.Marshal(checked.Content)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "encode content: %v", err)
		}
		out.ContentJson = string(b)
	}
	return out, nil
}

// mayAnswer refuses a request that asks, by option (set), to answer the
// daemon's questions itself, when its caller is not the person: an app's
// token answers no question (policy.MayAnswer); its calls are asked of
// the person in the editor.
func mayAnswer(party access.Party, option string, set bool) error {
	if !set {
		return nil
	}
	if err := policy.MayAnswer(party); err != nil {
		return status.Errorf(codes.PermissionDenied, "%s: %v; leave it unset, and the person is asked in the editor", option, err)
	}
	return nil
}

// owner names the token of a request: "" for the admin, else its app.
func owner(ctx context.Context) string {
	if a := identityFrom(ctx).App; a != nil {
		return a.ID
	}
	return ""
}

// elicitation is the protobuf form of a question.
func elicitation(q *tools.Elicitation, withdrawn bool) *nexusv1.Elicitation {
	return &nexusv1.Elicitation{RequestId: q.ID, Server: q.Server, Mode: q.Mode, Message: q.Message,
		RequestedSchemaJson: string(q.Schema), Url: q.URL, ElicitationId: q.ElicitationID, Withdrawn: withdrawn}
}

// errNoStream is the error of a question whose stream is gone.
var errNoStream = errors.New("the caller's stream has ended")

// AnswerElicitation answers a question of the caller's ExecuteToolStream.
func (s *frameworkService) AnswerElicitation(ctx context.Context, req *nexusv1.AnswerElicitationRequest) (*nexusv1.AnswerElicitationResponse, error) {
	if _, err := s.apps.caller(ctx, ""); err != nil {
		return nil, err
	}
	return s.tools.questions.answer(owner(ctx), "", req)
}

// AnswerElicitation answers an elicitation_request of the caller's prompt.
func (s *agentService) AnswerElicitation(ctx context.Context, req *nexusv1.AnswerElicitationRequest) (*nexusv1.AnswerElicitationResponse, error) {
	if _, err := s.apps.caller(ctx, ""); err != nil {
		return nil, err
	}
	if req.GetSessionId() == "" {
		return nil, status.Error(codes.InvalidArgument, "session_id is required")
	}
	return s.questions.answer(owner(ctx), req.GetSessionId(), req)
}
