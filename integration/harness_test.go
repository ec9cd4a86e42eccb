// Package integration tests the real nexusd and nexus binaries: each test
// builds a workspace on disk, spawns the daemon, and drives it through the
// CLI and a gRPC client over the daemon's unix socket.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

var binDir string

func TestMain(m *testing.M) {
	if os.Getenv(browserEnv) == "1" { // this binary is $BROWSER: see browser
		os.Exit(browse(os.Args[1:]))
	}
	dir, err := os.MkdirTemp("", "nexus-bin-")
	if err != nil {
		panic(err)
	}
	build := exec.Command("go", "build", "-o", dir+"/", "../cmd/nexusd", "../cmd/nexus")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build binaries:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// daemonInfo is .nexus/run/daemon.json.
type daemonInfo struct {
	PID            int    `json:"pid"`
	Version        string `json:"version"`
	Workspace      string `json:"workspace"`
	GRPCAddress    string `json:"grpcAddress"`
	AdminTokenFile string `json:"adminTokenFile"`
	// With --grpc-addr: the TCP address and its certificate.
	GRPCTCPAddress string `json:"grpcTcpAddress"`
	TLSCertFile    string `json:"tlsCertFile"`
	TLSFingerprint string `json:"tlsFingerprint"`
}

type daemon struct {
	t      *testing.T
	ws     string
	cmd    *exec.Cmd
	info   daemonInfo
	admin  string
	conn   *grpc.ClientConn
	stderr *bytes.Buffer
	exited chan error
}

// newWorkspace makes a workspace directory with an optional config.yaml.
func newWorkspace(t *testing.T, config string) string {
	t.Helper()
	ws := t.TempDir()
	if config != "" {
		os.MkdirAll(filepath.Join(ws, ".nexus"), 0o755)
		if err := os.WriteFile(filepath.Join(ws, ".nexus", "config.yaml"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// startDaemon spawns nexusd on ws and waits until it answers health checks.
func startDaemon(t *testing.T, ws string, args ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, ws: ws, stderr: &bytes.Buffer{}, exited: make(chan error, 1)}
	d.cmd = exec.Command(filepath.Join(binDir, "nexusd"), append([]string{"--workspace", ws}, args...)...)
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() { d.stop() })
	d.waitReady()
	return d
}

// waitReady polls for daemon.json of this process and a SERVING health
// check. The deadline only guards against a hung daemon.
func (d *daemon) waitReady() {
	t := d.t
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-d.exited:
			t.Fatalf("nexusd exited before it was ready: %v\n%s", err, d.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nexusd not ready\n%s", d.stderr)
		}
		data, err := os.ReadFile(filepath.Join(d.ws, ".nexus", "run", "daemon.json"))
		if err == nil && json.Unmarshal(data, &d.info) == nil && d.info.PID == d.cmd.Process.Pid {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	tok, err := os.ReadFile(d.info.AdminTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	d.admin = strings.TrimSpace(string(tok))
	d.conn, err = grpc.NewClient(d.info.GRPCAddress, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(d.conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	if err != nil || resp.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health check: %v %v\n%s", resp, err, d.stderr)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (d *daemon) stop() {
	if d.conn != nil {
		d.conn.Close()
		d.conn = nil
	}
	if d.cmd.ProcessState != nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		if err != nil {
			d.t.Errorf("nexusd exited with %v after SIGTERM\n%s", err, d.stderr)
		}
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		d.t.Errorf("nexusd did not stop after SIGTERM\n%s", d.stderr)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (d *daemon) kill() {
	if d.conn != nil {
		d.conn.Close()
		d.conn = nil
	}
	d.cmd.Process.Kill()
	<-d.exited
}

func (d *daemon) framework() nexusv1.CoreFrameworkClient {
	return nexusv1.NewCoreFrameworkClient(d.conn)
}
func (d *daemon) tools() nexusv1.ToolManagerClient { return nexusv1.NewToolManagerClient(d.conn) }

// as returns a context that carries a bearer token.
func as(token string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

func (d *daemon) appToken(app string) string {
	d.t.Helper()
	data, err := os.ReadFile(filepath.Join(d.ws, ".nexus", "run", "apps", app+".token"))
	if err != nil {
		d.t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// nexus runs the CLI against the workspace and returns stdout, stderr and
// the exit code.
func nexus(t *testing.T, ws, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "nexus"), append([]string{"--workspace", ws}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// git runs the git CLI on the workspace's history repository.
func git(t *testing.T, ws string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"--git-dir", filepath.Join(ws, ".nexus", "history.git")}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}
