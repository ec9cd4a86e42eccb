package integration

import (
	"encoding/json"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

var escapeOnce sync.Once

// escapeProgram builds integration/escape, the hostile command of the
// escape corpus, once.
func escapeProgram(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, "escape")
	escapeOnce.Do(func() {
		out, err := exec.Command("go", "build", "-o", bin, "./escape").CombinedOutput()
		if err != nil {
			t.Fatalf("build the escape program: %v\n%s", err, out)
		}
	})
	return bin
}

// TestSandboxRootEscapes is the root escape corpus (CI runs it as root,
// where it matters most; it runs as any user): an app's execute_command,
// in each sandboxed mode, runs integration/escape, which tries one way out
// per cell — files by handle through the root mount (the "shocker" escape),
// /proc/<pid>/root and /proc/self/fd tricks, mount, ptrace of the daemon
// and of the sandbox's init, new namespaces, the daemon's sockets, the
// admin token, the pre-commit hook by other paths, the disks, a root-only
// socket of a system daemon in /run (as docker.sock is), and the kernel's
// own calls. Every attempt must be refused, no secret may appear
// in any output, and nothing may change.
func TestSandboxRootEscapes(t *testing.T) {
	prog := escapeProgram(t)
	for _, tc := range []struct {
		name, mode string
		// runtimeDir: a workspace path too long for .nexus/run/nexusd.sock,
		// so the daemon's sockets are in $XDG_RUNTIME_DIR, outside .nexus
		// and outside the temporary directories.
		runtimeDir bool
	}{{"workspace-write", "workspace-write", false}, {"read-only", "read-only", false}, {"sockets-in-runtime-dir", "workspace-write", true}} {
		t.Run(tc.name, func(t *testing.T) {
			mode := tc.mode
			ws, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if tc.runtimeDir {
				home, err := os.UserHomeDir()
				if err != nil {
					t.Fatal(err)
				}
				os.MkdirAll(filepath.Join(home, ".cache", "nexus"), 0o755)
				rt, err := os.MkdirTemp(filepath.Join(home, ".cache", "nexus"), "runtime-")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(rt) })
				t.Setenv("XDG_RUNTIME_DIR", rt)
				ws = filepath.Join(ws, strings.Repeat("w", 100))
			}
			config := "apps:\n  - id: alpha\n    grants:\n      tools: {allow: [execute_command]}\ntools:\n  sandbox: " + mode + "\n"
			if err := os.MkdirAll(filepath.Join(ws, ".nexus"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, ".nexus", "config.yaml"), []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			for rel, content := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/hooks/README": "hooks\n", "scratch/.keep": ""} {
				os.MkdirAll(filepath.Dir(filepath.Join(ws, rel)), 0o755)
				if err := os.WriteFile(filepath.Join(ws, rel), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(prog)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, "escape"), data, 0o755); err != nil {
				t.Fatal(err)
			}
			d := startDaemon(t, ws)
			var info struct {
				MCPSocket string `json:"mcpSocket"`
			}
			if b, err := os.ReadFile(filepath.Join(ws, ".nexus", "run", "daemon.json")); err != nil || json.Unmarshal(b, &info) != nil || info.MCPSocket == "" {
				t.Fatalf("daemon.json has no mcpSocket: %v %s", err, b)
			}
			if inRun := strings.HasPrefix(info.MCPSocket, filepath.Join(ws, ".nexus", "run")+"/"); inRun == tc.runtimeDir {
				t.Fatalf("the MCP socket is %s", info.MCPSocket)
			}
			// A root-only socket of a system daemon, as docker.sock is: where
			// /run is writable (as root), one of the test's own.
			sockets := []string{strings.TrimPrefix(d.info.GRPCAddress, "unix://"), info.MCPSocket}
			sysSock := "/run/nexus-escape-" + strconv.Itoa(os.Getpid()) + "-" + tc.name + ".sock"
			if ln, err := net.Listen("unix", sysSock); err == nil {
				os.Chmod(sysSock, 0o600)
				t.Cleanup(func() { ln.Close() })
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						c.Close()
					}
				}()
				sockets = append(sockets, sysSock)
			} else {
				t.Logf("no system socket of the test's own in /run (%v): the connect cell tries the daemon's only", err)
			}
			secrets := []string{d.admin, d.appToken("alpha")}
			protected := []string{".git/HEAD", ".git/hooks/README", ".nexus/run/admin.token", ".nexus/run/apps/alpha.token", ".nexus/config.yaml"}
			before := fileContents(ws, protected)
			alpha := as(d.appToken("alpha"))

			run := func(t *testing.T, probe string) string {
				t.Helper()
				argv := []string{"./escape", "-ws", ws, "-pid", strconv.Itoa(d.info.PID)}
				for _, s := range sockets {
					argv = append(argv, "-socket", s)
				}
				args, _ := json.Marshal(map[string]any{"argv": append(argv, probe)})
				r, err := d.framework().ExecuteTool(alpha, &nexusv1.ExecuteToolRequest{ToolName: "execute_command", ArgumentsJson: string(args)})
				if err != nil {
					t.Fatalf("execute_command: %v", err)
				}
				if r.ErrorCode == "sandbox_unavailable" {
					t.Skipf("the kernel cannot enforce mode %s here: %s", mode, r.Message)
				}
				var res struct {
					ExitCode int    `json:"exitCode"`
					Stdout   string `json:"stdout"`
					Stderr   string `json:"stderr"`
				}
				if !r.Success || json.Unmarshal([]byte(r.OutputJson), &res) != nil || res.ExitCode != 0 {
					t.Fatalf("escape %s did not run to its end: %v %s %s %s", probe, r.Success, r.ErrorCode, r.Message, r.OutputJson)
				}
				out := res.Stdout + res.Stderr
				t.Logf("escape %s:\n%s", probe, out)
				for _, s := range secrets {
					if strings.Contains(out, s) {
						t.Errorf("escape %s read a token", probe)
					}
				}
				return out
			}

			t.Run("status", func(t *testing.T) {
				out := run(t, "status")
				for _, want := range []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
					"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
					if !strings.Contains(out, want+"\n") {
						t.Errorf("the command's status has no %q", want)
					}
				}
			})
			for _, probe := range []string{"handle", "proc-root", "proc-fd", "mount", "ptrace", "namespaces", "connect",
				"read-token", "write-hook", "block-device", "kernel"} {
				t.Run(probe, func(t *testing.T) {
					out := run(t, probe)
					if !strings.Contains(out, "blocked: ") {
						t.Errorf("escape %s tried nothing", probe)
					}
					for line := range strings.SplitSeq(out, "\n") {
						if strings.HasPrefix(line, "ESCAPED") {
							t.Errorf("%s", line)
						}
					}
				})
			}

			if after := fileContents(ws, protected); !maps.Equal(before, after) {
				t.Errorf("protected files changed:\nbefore %v\nafter  %v", before, after)
			}
			for _, rel := range []string{".git/hooks/pre-commit", "scratch/disk", "scratch/readme", "scratch/hooks"} {
				if _, err := os.Lstat(filepath.Join(ws, rel)); err == nil {
					t.Errorf("%s exists", rel)
				}
			}
			if _, err := d.framework().LogMessage(as(d.admin), &nexusv1.LogMessageRequest{Level: "info", Message: "still here"}); err != nil {
				t.Errorf("the daemon after the corpus: %v", err)
			}
		})
	}
}

func fileContents(ws string, rels []string) map[string]string {
	out := map[string]string{}
	for _, rel := range rels {
		b, err := os.ReadFile(filepath.Join(ws, rel))
		if err != nil {
			out[rel] = "missing: " + err.Error()
			continue
		}
		out[rel] = string(b)
	}
	return out
}
