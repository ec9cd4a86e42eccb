package rpc

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// AnswerPermissions attaches the person's terminal as an answerer of the
// policy's questions (policy.Approvers.Attach) for as long as the stream
// lasts: each question goes out as a PermissionQuestion, each
// PermissionAnswer answers one. Only the admin token attaches: the
// answerer answers for the person, and an app never answers.
func (s *toolService) AnswerPermissions(stream nexusv1.ToolManager_AnswerPermissionsServer) error {
	ctx := stream.Context()
	c, err := s.apps.caller(ctx, "")
	if err != nil {
		return err
	}
	if err := policy.MayAnswer(c.party); err != nil {
		return status.Errorf(codes.PermissionDenied, "%v; the person answers with the admin token (nexus calls --watch --answer) or in the editor", err)
	}
	if s.approvers == nil {
		return status.Error(codes.FailedPrecondition, "this daemon asks no one: it has no permission policy")
	}
	t := &terminal{out: make(chan *nexusv1.PermissionQuestion, 16), done: make(chan struct{}), open: map[string]chan policy.Answer{}}
	detach := s.approvers.Attach(policy.Approver{Who: c.party, Ask: t.ask})
	defer close(t.done) // after detach: a question asked from now on fails at once
	defer detach()
	if err := live(stream); err != nil {
		return err
	}
	received := make(chan error, 1)
	go func() {
		for {
			a, err := stream.Recv()
			if err == nil {
				err = t.take(a)
			}
			if err != nil {
				received <- err
				return
			}
		}
	}()
	for {
		select {
		case q := <-t.out:
			if err := stream.Send(q); err != nil {
				return err
			}
		case err := <-received:
			if errors.Is(err, io.EOF) {
				return nil // the terminal stopped answering
			}
			return err
		case <-ctx.Done():
			return nil
		}
	}
}

// terminal is one attached answerer: its questions waiting to be sent, and
// the open ones waiting for its answer.
type terminal struct {
	out  chan *nexusv1.PermissionQuestion
	done chan struct{} // closed when the stream has ended

	openMu sync.Mutex
	open   map[string]chan policy.Answer // by request id
}

// ask is the approver's AskFunc: it sends the question and waits for the
// answer. When ctx ends first (the policy's timeout, or the call was
// cancelled), the terminal is told the question is withdrawn; when the
// stream ends first, the question is not answered, and the policy denies
// the call.
func (t *terminal) ask(ctx context.Context, call tools.Call, record policy.ICERC) (policy.Answer, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	answer := make(chan policy.Answer, 1)
	t.openMu.Lock()
	t.open[id.String()] = answer
	t.openMu.Unlock()
	defer func() {
		t.openMu.Lock()
		delete(t.open, id.String())
		t.openMu.Unlock()
	}()
	call.ICERC = &record
	q := &nexusv1.PermissionQuestion{RequestId: id.String(), ToolCall: toolCall(call), Options: permissionOptions}
	select {
	case t.out <- q:
	case <-t.done:
		return "", errTerminalGone
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case a := <-answer:
		return a, nil
	case <-t.done:
		return "", errTerminalGone
	case <-ctx.Done():
		withdrawn := &nexusv1.PermissionQuestion{RequestId: q.RequestId, ToolCall: q.ToolCall, Withdrawn: true}
		select {
		case t.out <- withdrawn:
		default: // the terminal reads no more: it learns when it answers in vain
		}
		return "", ctx.Err()
	}
}

// errTerminalGone is the error of a question whose terminal detached
// before it answered.
var errTerminalGone = errors.New("the terminal that was asked stopped answering")

// take delivers an answer to its open question; an answer to a question
// no longer open (withdrawn, or answered) is dropped. An answer that is
// none of the options is an error, which ends the stream.
func (t *terminal) take(a *nexusv1.PermissionAnswer) error {
	ans := policy.Answer(a.GetAnswer())
	if !ans.Valid() {
		return status.Errorf(codes.InvalidArgument, "answer %q to %q is not one of %s", a.GetAnswer(), a.GetRequestId(), strings.Join(permissionOptions, ", "))
	}
	t.openMu.Lock()
	ch, ok := t.open[a.GetRequestId()]
	delete(t.open, a.GetRequestId())
	t.openMu.Unlock()
	if ok {
		ch <- ans // buffered, and the only send: the question left the map
	}
	return nil
}
