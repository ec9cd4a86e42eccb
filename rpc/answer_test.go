package rpc_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// TestAnswerPermissions: the admin token's AnswerPermissions stream is
// asked an app's question, with the call's record, and its answer decides
// it; a call cancelled while asked is withdrawn; an answer that is none of
// the options ends the stream and denies the call; an app's token cannot
// attach; with the stream gone, the question is denied again.
func TestAnswerPermissions(t *testing.T) {
	d := startAgentDaemon(t)
	tm := nexusv1.NewToolManagerClient(d.conn)
	planner := d.as(d.appToken("planner"))
	write := func(ctx context.Context, path string) (*nexusv1.ExecuteToolResponse, error) {
		return tm.ExecuteTool(ctx, &nexusv1.ExecuteToolRequest{ToolName: "write_file",
			ArgumentsJson: `{"path":"` + path + `","content":"plan\n"}`, Intent: "save the plan"})
	}
	type result struct {
		r   *nexusv1.ExecuteToolResponse
		err error
	}
	writeAsync := func(ctx context.Context, path string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			r, err := write(ctx, path)
			ch <- result{r, err}
		}()
		return ch
	}

	// An app's token is refused: only the person answers.
	appStream, err := tm.AnswerPermissions(planner)
	if err == nil {
		_, err = appStream.Recv()
	}
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "only the person answers") {
		t.Fatalf("app token: %v", err)
	}

	ctx, cancel := context.WithCancel(d.as(d.admin))
	defer cancel()
	stream, err := tm.AnswerPermissions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Header(); err != nil {
		t.Fatal(err)
	}

	done := writeAsync(planner, "plan.md")
	q, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	call := q.GetToolCall()
	if q.GetWithdrawn() || call.GetToolName() != "write_file" || call.GetAppId() != "planner" || call.GetIcerc().GetIntent() != "save the plan" ||
		!strings.Contains(call.GetIcerc().GetAsker(), "planner") || len(q.GetOptions()) != 4 {
		t.Fatalf("question: %v", q)
	}
	if err := stream.Send(&nexusv1.PermissionAnswer{RequestId: q.GetRequestId(), Answer: "allow_once"}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || !r.r.GetSuccess() {
		t.Fatalf("approved call: %v %v", r.r, r.err)
	}

	// A call cancelled while asked: its question is withdrawn, and a late
	// answer to it is dropped.
	cctx, ccancel := context.WithCancel(planner)
	done = writeAsync(cctx, "cancelled.md")
	q, err = stream.Recv()
	if err != nil || q.GetWithdrawn() {
		t.Fatalf("second question: %v %v", q, err)
	}
	ccancel()
	if w, err := stream.Recv(); err != nil || !w.GetWithdrawn() || w.GetRequestId() != q.GetRequestId() {
		t.Fatalf("withdrawal: %v %v", w, err)
	}
	<-done
	if err := stream.Send(&nexusv1.PermissionAnswer{RequestId: q.GetRequestId(), Answer: "allow_once"}); err != nil {
		t.Fatal(err)
	}

	// An answer that is not an option ends the stream; its call is denied.
	done = writeAsync(planner, "refused.md")
	q, err = stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&nexusv1.PermissionAnswer{RequestId: q.GetRequestId(), Answer: "sure"}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `answer "sure"`) {
		t.Fatalf("bad answer: %v", err)
	}
	if r := <-done; r.err != nil || r.r.GetSuccess() || r.r.GetErrorCode() != "permission_denied" {
		t.Fatalf("call of the bad answer: %v %v", r.r, r.err)
	}

	// No terminal attached (nor an editor): denied, saying how to attach one.
	r, err := write(planner, "alone.md")
	if err != nil || r.GetSuccess() || !strings.Contains(r.GetMessage(), "nexus calls --watch --answer") {
		t.Fatalf("no answerer: %v %v", r, err)
	}
}
