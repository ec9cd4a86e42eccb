// Command slow is an MCP server on stdio for the gateway's tests: "wait"
// reports progress every 50ms until it is cancelled or its seconds pass,
// and "echo" returns its text.
package main

import (
	"context"
	"log"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type waitArgs struct {
	Seconds float64 `json:"seconds"`
}

type echoArgs struct {
	Text string `json:"text"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "waits, reporting progress"}, func(ctx context.Context, req *mcp.CallToolRequest, a waitArgs) (*mcp.CallToolResult, any, error) {
		end := time.Now().Add(time.Duration(a.Seconds * float64(time.Second)))
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for n := 1; time.Now().Before(end); n++ {
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-tick.C:
			}
			if tok := req.Params.GetProgressToken(); tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(n), Message: "waiting"})
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "waited"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "returns its text"}, func(ctx context.Context, req *mcp.CallToolRequest, a echoArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
