package rpc

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/events"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools"
)

// sizeServer serves a manager whose tool "echo" returns its arguments
// twice, with 1 MiB of arguments at most and 2 MiB per message.
func sizeServer(t *testing.T) (*grpc.ClientConn, context.Context) {
	t.Helper()
	bus := events.New()
	m, err := tools.NewManager(tools.Options{Bus: bus, MaxArguments: 1 << 20,
		Gate: func(context.Context, *tools.GateRequest, func(tools.ICERC)) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	err = m.Register(tools.Tool{Definition: tools.Definition{Name: "echo", Risk: tools.RiskLow},
		Handler: func(_ context.Context, _ *tools.Invocation, args json.RawMessage) (json.RawMessage, error) {
			return json.Marshal([]json.RawMessage{args, args})
		}})
	if err != nil {
		t.Fatal(err)
	}
	const token = "size-test-admin-token"
	srv := NewServer(Config{Bus: bus, Tools: m, MaxMessageSize: 2 << 20, Auth: NewAuthenticator(token, nil, nil, nil)})
	sock := filepath.Join(t.TempDir(), "s.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20), grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

func argsOf(n int) string {
	return `{"text":"` + strings.Repeat("x", n-len(`{"text":""}`)) + `"}`
}

// A request over the message limit is refused by gRPC itself, before it
// is read, at every door that runs a tool.
func TestRequestOverTheMessageLimit(t *testing.T) {
	conn, ctx := sizeServer(t)
	cf, tm := nexusv1.NewCoreFrameworkClient(conn), nexusv1.NewToolManagerClient(conn)
	req := &nexusv1.ExecuteToolRequest{ToolName: "echo", ArgumentsJson: argsOf(3 << 20)}
	check := func(door string, err error) {
		t.Helper()
		if st, _ := status.FromError(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "larger than max (3145739 vs. 2097152)") {
			t.Errorf("%s: %v", door, err)
		}
	}
	_, err := cf.ExecuteTool(ctx, req)
	check("CoreFramework.ExecuteTool", err)
	_, err = tm.ExecuteTool(ctx, req)
	check("ToolManager.ExecuteTool", err)
	stream, err := cf.ExecuteToolStream(ctx, req)
	if err == nil {
		_, err = stream.Recv()
	}
	check("ExecuteToolStream", err)
}

func TestArgumentsOverTheToolLimit(t *testing.T) {
	conn, ctx := sizeServer(t)
	resp, err := nexusv1.NewCoreFrameworkClient(conn).ExecuteTool(ctx, &nexusv1.ExecuteToolRequest{ToolName: "echo", ArgumentsJson: argsOf(3 << 19)})
	if err != nil || resp.Success || resp.ErrorCode != tools.CodeInvalidArguments ||
		resp.Message != "arguments are 1.5 MiB, over the limit of 1.0 MiB (tools.maxArgumentsSize)" {
		t.Errorf("%v %v", resp, err)
	}
}

func TestToolCallsAreCut(t *testing.T) {
	conn, ctx := sizeServer(t)
	cf, tm := nexusv1.NewCoreFrameworkClient(conn), nexusv1.NewToolManagerClient(conn)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch, err := tm.WatchToolCalls(wctx, &nexusv1.WatchToolCallsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Header(); err != nil {
		t.Fatal(err)
	}
	args := argsOf(200 << 10)
	resp, err := cf.ExecuteTool(ctx, &nexusv1.ExecuteToolRequest{ToolName: "echo", ArgumentsJson: args})
	if err != nil || !resp.Success || resp.OutputJson != "["+args+","+args+"]" {
		t.Fatalf("the caller does not get the whole result: %d bytes, %v", len(resp.GetOutputJson()), err)
	}
	check := func(where string, c *nexusv1.ToolCall) {
		t.Helper()
		if !c.ArgumentsTruncated || c.ArgumentsSize != int64(len(args)) || len(c.ArgumentsJson) > tools.KeptSize || !json.Valid([]byte(c.ArgumentsJson)) {
			t.Errorf("%s: arguments truncated %v, size %d, %d bytes", where, c.ArgumentsTruncated, c.ArgumentsSize, len(c.ArgumentsJson))
		}
		if c.Status == tools.StatusCompleted && (!c.ResultTruncated || c.ResultSize != int64(len(resp.OutputJson)) ||
			len(c.ResultJson) > tools.KeptSize || !json.Valid([]byte(c.ResultJson))) {
			t.Errorf("%s: result truncated %v, size %d, %d bytes", where, c.ResultTruncated, c.ResultSize, len(c.ResultJson))
		}
	}
	for {
		c, err := watch.Recv()
		if err != nil {
			t.Fatal(err)
		}
		check("WatchToolCalls "+c.Status, c)
		if c.Status == tools.StatusCompleted {
			break
		}
	}
	list, err := tm.ListToolCalls(ctx, &nexusv1.ListToolCallsRequest{})
	if err != nil || len(list.ToolCalls) != 1 {
		t.Fatalf("ListToolCalls: %v %v", list, err)
	}
	check("ListToolCalls", list.ToolCalls[0])
}
