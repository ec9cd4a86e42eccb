// Package redistest runs a real redis-server for tests and the benchmark: on
// a free loopback port, with its data in a directory of the caller's, and
// lets a test kill it with SIGKILL and start it again on the same port and
// data. Start with [New] in a test, or [Start] elsewhere.
//
// redis-server comes from Debian's redis-server package; scripts/redis.sh
// install puts it there (make test runs it). When it is missing, New runs
// that script, which needs root; a test is skipped only when that fails and
// NEXUS_SKIP_REDIS=1 says a missing Redis is acceptable.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuscocreate/nexus/internal/proctree"
)

// Server is one redis-server process, restartable on the same port and data.
type Server struct {
	path string // the redis-server binary
	dir  string
	port int
	conf []string

	// mu guards cmd and done: the process running now, if any.
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Durable is the configuration of a server that keeps every acknowledged
// write across a kill -9: the append-only file, fsynced before each reply.
var Durable = []string{"appendonly yes", "appendfsync always"}

// New starts a redis-server for the test t with the extra configuration
// lines conf (as in redis.conf) and stops it when t ends.
func New(t testing.TB, conf ...string) *Server {
	t.Helper()
	path, err := Find()
	if err != nil {
		if os.Getenv("NEXUS_SKIP_REDIS") == "1" {
			t.Skipf("%v (NEXUS_SKIP_REDIS=1)", err)
		}
		t.Fatal(err)
	}
	s, err := StartWith(path, t.TempDir(), conf...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

// Find returns the redis-server to run: from PATH, else after
// scripts/redis.sh install has put it there.
func Find() (string, error) {
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	script, err := installScript()
	if err != nil {
		return "", fmt.Errorf("redis-server is not on PATH and %v", err)
	}
	out, err := exec.Command("bash", script, "install").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("redis-server is not on PATH and %s install failed: %v\n%s", script, err, out)
	}
	return exec.LookPath("redis-server")
}

// installScript finds scripts/redis.sh from this source file's directory.
func installScript() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("the repository (for scripts/redis.sh) cannot be found")
	}
	p := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "redis.sh")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("scripts/redis.sh cannot be found: %v", err)
	}
	return p, nil
}

// Start runs the redis-server found by Find with its data in dir.
func Start(dir string, conf ...string) (*Server, error) {
	path, err := Find()
	if err != nil {
		return nil, err
	}
	return StartWith(path, dir, conf...)
}

// StartWith runs the redis-server at path on a free loopback port with its
// data in dir, and waits until it answers.
func StartWith(path, dir string, conf ...string) (*Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &Server{path: path, dir: dir, conf: conf}
	// A port that was free a moment ago may be taken by the time Redis
	// binds it; then try another.
	var err error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
		if err = s.start(); err == nil {
			return s, nil
		}
		if !strings.Contains(err.Error(), "Address already in use") {
			return nil, err
		}
	}
	return nil, err
}

// Restart starts the server again, on the same port and data, after Kill or
// Stop.
func (s *Server) Restart() error { return s.start() }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("redis-server on port %d is running already", s.port)
	}
	lines := append([]string{
		"bind 127.0.0.1",
		"port " + strconv.Itoa(s.port),
		"dir " + s.dir,
		"daemonize no",
		"save \"\"",
		"logfile \"\"",
		"protected-mode yes",
	}, s.conf...)
	confPath := filepath.Join(s.dir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	cmd := exec.Command(s.path, confPath)
	cmd.Dir = s.dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	// Killed with the tests on Linux and Windows (proctree).
	if _, err := proctree.Start(cmd, proctree.Options{}); err != nil {
		return fmt.Errorf("start %s: %w", s.path, err)
	}
	// Redis logs "Ready to accept connections" once it listens and has
	// loaded its data; the log is kept to explain a failed start.
	ready := make(chan struct{})
	done := make(chan struct{})
	var logMu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if strings.Contains(sc.Text(), "Ready to accept connections") {
				once.Do(func() { close(ready) })
			}
		}
		cmd.Wait()
		close(done)
	}()
	select {
	case <-ready:
		s.cmd, s.done = cmd, done
		return nil
	case <-done:
		logMu.Lock()
		defer logMu.Unlock()
		return fmt.Errorf("redis-server on port %d exited before it was ready:\n%s", s.port, log.String())
	}
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is the redis:// URL of the server's database 0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Dir is the server's data directory.
func (s *Server) Dir() string { return s.dir }

// Pause stops the server (SIGSTOP): its connections stay open and nothing
// answers, as on a network that drops packets. Resume continues it. Not
// on Windows, which has no such signal.
func (s *Server) Pause() error { return s.signal(sigStop) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.signal(sigCont) }

func (s *Server) signal(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("redis-server on port %d is not running", s.port)
	}
	if sig == nil {
		return fmt.Errorf("redistest: pausing redis-server needs SIGSTOP and SIGCONT, which %s has not", runtime.GOOS)
	}
	return s.cmd.Process.Signal(sig)
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it.
func (s *Server) Kill() error { return s.end(os.Kill) }

// Stop ends the server with SIGTERM (a clean shutdown; on Windows, which
// has none, a kill) and waits for it.
func (s *Server) Stop() error { return s.end(sigTerm) }

func (s *Server) end(sig os.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	if err := s.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal redis-server: %w", err)
	}
	if sigCont != nil {
		s.cmd.Process.Signal(sigCont) // a paused server cannot act on SIGTERM
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd, s.done = nil, nil
	return nil
}
