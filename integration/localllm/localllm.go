// Package localllm starts llama.cpp's llama-server with the tiny
// random-weight model of scripts/local-llm.sh for tests: a real server of
// the OpenAI Chat Completions, Responses and Anthropic Messages APIs,
// offline. See testdata/README.md for what it does and does not do.
package localllm

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

var (
	installOnce sync.Once
	installErr  error
	installLog  []byte
)

// Repo is the repository's root.
func Repo() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Install builds the chroot and the model once per process (the script
// reuses its cache in ~/.cache/nexus/local-llm). It needs root: without it
// the test is skipped, saying so.
func Install(tb testing.TB) {
	tb.Helper()
	if errNotHere != nil {
		tb.Skip(errNotHere)
	}
	if os.Geteuid() != 0 {
		tb.Skip("llama-server runs in a chroot that needs root (scripts/local-llm.sh); run the tests as root")
	}
	if err := install(); err != nil {
		tb.Fatal(err)
	}
}

func install() error {
	installOnce.Do(func() {
		cmd := exec.Command("bash", filepath.Join(Repo(), "scripts", "local-llm.sh"), "install")
		installLog, installErr = cmd.CombinedOutput()
	})
	if installErr != nil {
		return fmt.Errorf("scripts/local-llm.sh install: %v\n%s", installErr, installLog)
	}
	return nil
}

// Start starts a llama-server for the test and returns its base URL
// (http://127.0.0.1:PORT, without /v1); it is stopped when the test ends.
func Start(tb testing.TB) string {
	tb.Helper()
	Install(tb)
	base, stop, err := Serve()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return base
}

// Serve installs (cached) and starts a llama-server outside a test (the
// bench): its base URL, and a stop that waits for it to exit.
func Serve() (base string, stop func(), err error) {
	if errNotHere != nil {
		return "", nil, errNotHere
	}
	if os.Geteuid() != 0 {
		return "", nil, fmt.Errorf("llama-server runs in a chroot that needs root (scripts/local-llm.sh)")
	}
	if err := install(); err != nil {
		return "", nil, err
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	var out bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(Repo(), "scripts", "local-llm.sh"), "serve", fmt.Sprint(port))
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = serverAttr()
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() {
		_ = cmd.Process.Signal(stopSignal)
		<-exited
	}
	base = fmt.Sprintf("http://127.0.0.1:%d", port)
	for {
		select {
		case err := <-exited:
			return "", nil, fmt.Errorf("llama-server exited before it was ready (%v):\n%s", err, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, stop, nil
			}
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
