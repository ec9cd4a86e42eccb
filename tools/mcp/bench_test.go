package mcp

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/tools"
)

// server-everything's echo over stdio, called through the hub (the tool
// manager, the hub, the wire) and by a bare go-sdk client to a server of
// its own, in turns; the medians are reported as hub-µs and bare-µs.
func BenchmarkEchoStdio(b *testing.B) {
	everything := serverBin(b, "mcp-server-everything")
	th := newTestHub(b, Options{})
	th.applyTrusted(map[string]ServerConfig{"everything": stdio("everything", everything)})
	th.waitState(b, "everything", StateReady)
	req := tools.ExecuteRequest{ServerName: "everything", ToolName: "echo", Arguments: json.RawMessage(`{"message":"bench"}`)}
	hub := func() error {
		if c := th.m.Execute(b.Context(), req); c.Status != tools.StatusCompleted {
			return fmt.Errorf("%+v", c.Error)
		}
		return nil
	}
	bare, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).Connect(b.Context(), &sdk.CommandTransport{Command: exec.Command(everything)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bare.Close()
	params := &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "bench"}}
	calls := []func() error{
		hub,
		func() error { _, err := bare.CallTool(b.Context(), params); return err },
	}
	for range 300 { // V8 compiles the servers' hot paths
		for _, call := range calls {
			call()
		}
	}
	took := make([][]time.Duration, len(calls))
	for b.Loop() {
		for i, call := range calls {
			start := time.Now()
			if err := call(); err != nil {
				b.Fatal(err)
			}
			took[i] = append(took[i], time.Since(start))
		}
	}
	p50 := make([]time.Duration, len(calls))
	for i := range calls {
		slices.Sort(took[i])
		p50[i] = took[i][len(took[i])/2]
	}
	b.ReportMetric(float64(p50[0].Microseconds()), "hub-µs")
	b.ReportMetric(float64(p50[1].Microseconds()), "bare-µs")
	b.ReportMetric(float64(p50[0])/float64(p50[1]), "hub/bare")
}
