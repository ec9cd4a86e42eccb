package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
)

func BenchmarkExecute(b *testing.B) {
	m, err := NewManager(Options{Gate: allowAll, AuditFile: filepath.Join(b.TempDir(), "audit.jsonl")})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	m.Register(echoTool)
	args := json.RawMessage(`{"text":"hi"}`)
	for b.Loop() {
		if c := m.Execute(context.Background(), ExecuteRequest{ToolName: "echo", Arguments: args}); c.Status != StatusCompleted {
			b.Fatal(c.Error)
		}
	}
}
