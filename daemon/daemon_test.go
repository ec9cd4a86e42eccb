package daemon

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/workspace"
)

func quiet(ws string) Options {
	return Options{Workspace: ws, Stderr: io.Discard, LogLevel: "error", Version: "test"}
}

// TestOpenClose: Open takes the lock and opens every part; a second Open
// of the same workspace is refused while the first holds it; Close releases
// it (twice is harmless), and a failed Open releases what it took.
func TestOpenClose(t *testing.T) {
	ws := t.TempDir()
	p, err := Open(context.Background(), quiet(ws))
	if err != nil {
		t.Fatal(err)
	}
	if p.Config == nil || p.Definitions == nil || p.Runtime == nil || p.Tools == nil || p.MCP == nil || p.Bus == nil || p.Approvers == nil {
		t.Fatalf("Open left parts out: %+v", p)
	}
	if _, err := Open(context.Background(), quiet(ws)); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("a second Open: %v", err)
	}
	p.Close()
	p.Close()

	// An invalid configuration fails Open, and leaves the workspace free.
	cfg := filepath.Join(ws, ".nexus", "config.yaml")
	if err := os.WriteFile(cfg, []byte("tools:\n  sandbox: nowhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), quiet(ws)); err == nil || !strings.Contains(err.Error(), "config.yaml:2") {
		t.Errorf("Open with an invalid config: %v", err)
	}
	os.Remove(cfg)
	p, err = Open(context.Background(), quiet(ws))
	if err != nil {
		t.Fatalf("Open after a failed one: %v", err)
	}
	p.Close()
}

// TestServe: the parts serve until the context ends, publishing daemon.json
// meanwhile, and Serve returns nil for a cancelled context.
func TestServe(t *testing.T) {
	ws := t.TempDir()
	p, err := Open(context.Background(), quiet(ws))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx) }()
	name := filepath.Join(ws, filepath.FromSlash(workspace.DaemonFile))
	var info Info
	for {
		b, err := os.ReadFile(name)
		if err == nil && json.Unmarshal(b, &info) == nil && info.PID == os.Getpid() {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Serve ended before it published daemon.json: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if !strings.HasPrefix(info.GRPCAddress, "unix://") || info.AdminTokenFile == "" {
		t.Errorf("daemon.json: %+v", info)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
	if _, err := os.Stat(name); err == nil {
		t.Error("daemon.json outlived Serve")
	}
}
