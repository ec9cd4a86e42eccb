// Command bench measures Nexus against its anchors in one run and prints
// each figure beside its anchor as a ratio: durable writes against
// `git add && git commit`, history against `git log -- path`, diffs against
// `git diff A B -- path`, gRPC reads against a health check (the
// cheapest RPC) on the same socket, and the Redis runtime backend's reads
// against a bare go-redis GET on the same redis-server.
//
//	go run ./bench [-commits 10000] [-files 500]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/nexuscocreate/nexus/daemon"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools/command"
)

func main() {
	// The daemon runs in this process and re-executes it as the sandbox of
	// execute_command.
	if len(os.Args) > 1 && os.Args[1] == command.HelperArg {
		os.Exit(command.HelperMain(os.Args[2:]))
	}
	commits := flag.Int("commits", 10000, "commits of history in the large workspace")
	small := flag.Int("small", 1000, "commits of history in the small workspace (to show history stays flat)")
	files := flag.Int("files", 500, "files in the history")
	writes := flag.Int("writes", 200, "writes to time for set")
	only := flag.String("only", "", "run only this part: state (with gRPC reads), definitions (durable writes only), redis, tools (with MCP), mcp, editor, agent (with subagent), subagent or checkpoints")
	large := flag.String("large", "", "the workspace of 1,000 files and 10k commits for the editor's start (made when missing, and kept)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (daemon included) to this file")
	flag.Parse()
	var err error
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	switch *only {
	case "":
		if err = run(*commits, *small, *files, *writes); err == nil {
			err = withTemp(benchRedis)
		}
		if err == nil {
			err = withTemp(benchCheckpoints)
		}
		if err == nil {
			if err = runTools(); err == nil {
				if err = withTemp(func(tmp string) error { return runEditor(tmp, filepath.Join(tmp, "large")) }); err == nil {
					fmt.Println()
					err = benchAgent()
				}
			}
		}
	case "state":
		err = run(*commits, *small, *files, *writes)
	case "definitions":
		err = runDefinitions(*small, *files, *writes)
	case "redis":
		err = withTemp(benchRedis)
	case "tools":
		err = runTools()
	case "editor":
		err = withTemp(func(tmp string) error {
			if *large == "" {
				*large = filepath.Join(tmp, "large")
			}
			return runEditor(tmp, *large)
		})
	case "agent":
		err = benchAgent()
	case "subagent":
		err = benchSubagent()
	case "checkpoints":
		err = withTemp(benchCheckpoints)
	case "mcp":
		var tmp string
		if tmp, err = os.MkdirTemp("", "nexus-bench-"); err == nil {
			err = benchMCP(tmp)
			os.RemoveAll(tmp)
		}
	default:
		err = fmt.Errorf("-only %q is not state, definitions, redis, tools, mcp, editor, agent, subagent or checkpoints", *only)
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(commits, small, files, writes int) error {
	tmp, err := os.MkdirTemp("", "nexus-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Printf("nexus bench: %d and %d commits over %d files; anchors measured in the same run\n\n", small, commits, files)

	wsSmall := filepath.Join(tmp, "small")
	wsLarge := filepath.Join(tmp, "large")
	for _, c := range []struct {
		ws      string
		commits int
	}{{wsSmall, small}, {wsLarge, commits}} {
		t := time.Now()
		if err := makeHistory(c.ws, c.commits, files); err != nil {
			return err
		}
		fmt.Printf("setup: %d commits with git fast-import in %v\n", c.commits, time.Since(t).Round(time.Millisecond))
	}

	stores := map[string]*state.Definitions{}
	for _, ws := range []string{wsSmall, wsLarge} {
		t := time.Now()
		s, err := state.OpenDefinitions(state.DefinitionsOptions{
			Dir: filepath.Join(ws, ".nexus", "definitions"), HistoryDir: filepath.Join(ws, ".nexus", "history.git")})
		if err != nil {
			return err
		}
		fmt.Printf("setup: first open of %s (index built from the repository) in %v\n", filepath.Base(ws), time.Since(t).Round(time.Millisecond))
		s.Close()
		t = time.Now()
		if s, err = state.OpenDefinitions(state.DefinitionsOptions{
			Dir: filepath.Join(ws, ".nexus", "definitions"), HistoryDir: filepath.Join(ws, ".nexus", "history.git")}); err != nil {
			return err
		}
		fmt.Printf("setup: reopen of %s (index read and verified) in %v\n", filepath.Base(ws), time.Since(t).Round(time.Millisecond))
		stores[ws] = s
	}
	fmt.Println()

	large := stores[wsLarge]
	if err := benchSet(large, wsLarge, tmp, writes, files); err != nil {
		return err
	}
	for _, ws := range []string{wsSmall, wsLarge} {
		if err := benchHistory(stores[ws], ws); err != nil {
			return err
		}
	}
	if err := benchDiff(large, wsLarge); err != nil {
		return err
	}
	for _, s := range stores {
		s.Close()
	}
	return benchGRPC(wsLarge)
}

// runTools measures tool calls and their event stream.
func runTools() error {
	tmp, err := os.MkdirTemp("", "nexus-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Println()
	if err := benchTools(tmp); err != nil {
		return err
	}
	if err := benchHugeArguments(tmp); err != nil {
		return err
	}
	if err := benchEvents(tmp); err != nil {
		return err
	}
	fmt.Println()
	return benchMCP(tmp)
}

func withTemp(fn func(tmp string) error) error {
	tmp, err := os.MkdirTemp("", "nexus-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	return fn(tmp)
}

func filePath(i int) string { return fmt.Sprintf("app%02d/flows/file%03d.yaml", i%20, i) }

func fileContent(i, version int) string {
	return fmt.Sprintf("name: file %d\nversion: %d\nsteps:\n  - plan\n  - build %d\n  - review\nnotes: |\n  %s\n",
		i, version, version*7, strings.Repeat("lorem ipsum ", 10))
}

// makeHistory writes a workspace whose history has n commits over files
// files (the first adds them all, each later one changes one), and checks
// the newest version out into the definitions root.
func makeHistory(ws string, n, files int) error {
	hist := filepath.Join(ws, ".nexus", "history.git")
	defs := filepath.Join(ws, ".nexus", "definitions")
	if err := os.MkdirAll(defs, 0o755); err != nil {
		return err
	}
	if err := gitRun("", "init", "-q", "--bare", "-b", "main", hist); err != nil {
		return err
	}
	var b bytes.Buffer
	when := int64(1_700_000_000)
	commit := func(msg string) {
		fmt.Fprintf(&b, "commit refs/heads/main\ncommitter bench <nexus@localhost> %d +0000\ndata %d\n%s\n", when, len(msg), msg)
		when++
	}
	commit("initial")
	for i := range files {
		c := fileContent(i, 0)
		fmt.Fprintf(&b, "M 100644 inline %s\ndata %d\n%s\n", filePath(i), len(c), c)
	}
	for k := 1; k < n; k++ {
		i := (k * 7919) % files
		commit(fmt.Sprintf("change %d", k))
		c := fileContent(i, k)
		fmt.Fprintf(&b, "M 100644 inline %s\ndata %d\n%s\n", filePath(i), len(c), c)
	}
	cmd := gitCmd(hist, "fast-import", "--quiet")
	cmd.Stdin = &b
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("fast-import: %v: %s", err, out)
	}
	archive := gitCmd(hist, "archive", "main")
	tar := exec.Command("tar", "-x", "-C", defs)
	pipe, _ := archive.StdoutPipe()
	tar.Stdin = pipe
	if err := tar.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		return err
	}
	return tar.Wait()
}

func gitCmd(gitDir string, args ...string) *exec.Cmd {
	if gitDir != "" {
		args = append([]string{"--git-dir", gitDir}, args...)
	}
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=b@x",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=b@x")
	return cmd
}

func gitRun(gitDir string, args ...string) error {
	if out, err := gitCmd(gitDir, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("git %v: %v: %s", args, err, out)
	}
	return nil
}

// timeIt returns the median duration of n runs of fn.
func timeIt(n int, fn func() error) (time.Duration, error) {
	ds := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if err := fn(); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

func report(name string, ours, anchor time.Duration, anchorName, target string) {
	fmt.Printf("%-44s %10v   %-34s %10v   ratio %.4f×   (target %s)\n",
		name, ours.Round(time.Microsecond/10), "vs "+anchorName, anchor.Round(time.Microsecond/10),
		float64(ours)/float64(anchor), target)
}

// benchSet measures durable writes against `git add && git commit` in a
// loop: one writer's median write, then the throughput of 1, 4 and 16
// concurrent writers (the store's group commit lets concurrent writes share
// their fsync rounds; git cannot commit concurrently in one repository).
func benchSet(s *state.Definitions, ws, tmp string, writes, files int) error {
	i := 0
	ours, err := timeIt(writes, func() error {
		i++
		_, err := s.Set(filePath(i%files), []byte(fileContent(i%files, 1_000_000+i)), state.WriteOptions{Author: "bench"})
		return err
	})
	if err != nil {
		return err
	}
	commits := len(strings.Fields(gitOut(ws, "rev-list", "HEAD")))
	// The anchor: a clone of the same history with a work tree.
	anchor, loop, err := gitLoop(ws, tmp, writes, files)
	if err != nil {
		return err
	}
	report(fmt.Sprintf("set, durable (fsync), p50 at %d commits", commits), ours, anchor, "git add && git commit", "≤ 0.5×")

	gitRate := float64(writes) / loop.Seconds()
	var runs []writersRun
	for k, n := range []int{1, 4, 16} {
		r, err := benchWriters(s, n, writes, files, 3_000_000+k*100_000)
		if err != nil {
			return fmt.Errorf("%d writers: %w", n, err)
		}
		runs = append(runs, r)
		name := "durable writes/s, 1 writer"
		if n > 1 {
			name = fmt.Sprintf("durable writes/s, %d concurrent writers", n)
		}
		reportRate(name, r.rate, gitRate, "git add && git commit loop", "≥ 2×")
	}
	reportRate("durable writes/s, 16 writers vs 1", runs[2].rate, runs[0].rate, "1 writer (same run)", "≥ 8×")
	report("set, durable, 1 writer of the run above, p50", runs[0].p50, ours, "set, durable (fsync), p50 above", "≤ 1×")
	return nil
}

func gitOut(ws string, args ...string) string {
	out, _ := gitCmd(filepath.Join(ws, ".nexus", "history.git"), args...).Output()
	return string(out)
}

func benchHistory(s *state.Definitions, ws string) error {
	p := filePath(123)
	var n int
	ours, err := timeIt(200, func() error {
		h, _, err := s.History(p, 100000, "")
		n = len(h)
		return err
	})
	if err != nil {
		return err
	}
	hist := filepath.Join(ws, ".nexus", "history.git")
	anchor, err := timeIt(15, func() error {
		out, err := gitCmd(hist, "log", "--format=%H", "--", p).Output()
		if got := len(strings.Fields(string(out))); err == nil && got != n {
			return fmt.Errorf("history has %d entries, git log %d", n, got)
		}
		return err
	})
	if err != nil {
		return err
	}
	commits := len(strings.Fields(gitOut(ws, "rev-list", "HEAD")))
	report(fmt.Sprintf("history of one file (%d entries), %d commits", n, commits), ours, anchor, "git log --format=%H -- path", "≤ 0.05×, flat")
	return nil
}

func benchDiff(s *state.Definitions, ws string) error {
	p := filePath(123)
	h, _, err := s.History(p, 100000, "")
	if err != nil || len(h) < 3 {
		return fmt.Errorf("history for diff: %d entries, %v", len(h), err)
	}
	a, b := h[len(h)-1].Revision, h[0].Revision
	var ours string
	d, err := timeIt(200, func() error {
		ours, err = s.Diff(p, "", a, b)
		return err
	})
	if err != nil {
		return err
	}
	hist := filepath.Join(ws, ".nexus", "history.git")
	var theirs []byte
	anchor, err := timeIt(50, func() error {
		theirs, err = gitCmd(hist, "diff", a, b, "--", p).Output()
		return err
	})
	if err != nil {
		return err
	}
	same := "same output as git"
	if ours != string(theirs) {
		same = "OUTPUT DIFFERS from git"
		ol, tl := strings.Split(ours, "\n"), strings.Split(string(theirs), "\n")
		for i := range min(len(ol), len(tl)) {
			if ol[i] != tl[i] {
				same += fmt.Sprintf(" at line %d: %q vs git %q", i+1, ol[i], tl[i])
				break
			}
		}
	}
	report("diff of one file between two revisions", d, anchor, "git diff A B -- path", "≤ 0.3×")
	fmt.Printf("%44s (%s)\n", "", same)
	return nil
}

// daemonClient starts the daemon in this process on ws and returns a
// connection to its socket with the admin token in ctx.
func daemonClient(ws string) (*grpc.ClientConn, context.Context, func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	devnull, _ := os.Open(os.DevNull)
	go func() {
		done <- daemon.Run(ctx, daemon.Options{Workspace: ws, LogLevel: "error", Stderr: devnull, Version: "bench"})
	}()
	stop := func() { cancel(); <-done }
	var info struct{ GRPCAddress, AdminTokenFile string }
	deadline := time.Now().Add(60 * time.Second)
	for {
		data, err := os.ReadFile(filepath.Join(ws, ".nexus", "run", "daemon.json"))
		if err == nil && jsonUnmarshal(data, &info) == nil {
			break
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nil, nil, fmt.Errorf("daemon not ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	tok, err := os.ReadFile(info.AdminTokenFile)
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	conn, err := grpc.NewClient(info.GRPCAddress, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	actx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+strings.TrimSpace(string(tok)))
	return conn, actx, func() { conn.Close(); stop() }, nil
}

// benchGRPC measures reads over the daemon's socket against a health check
// (the cheapest RPC it serves) on the same socket.
func benchGRPC(ws string) error {
	conn, actx, stop, err := daemonClient(ws)
	if err != nil {
		return err
	}
	defer stop()
	health := healthpb.NewHealthClient(conn)
	cf := nexusv1.NewCoreFrameworkClient(conn)
	if _, err := cf.SetRuntimeValue(actx, &nexusv1.SetRuntimeValueRequest{Namespace: "bench", Key: "k", Value: "a small value"}); err != nil {
		return err
	}
	const n = 5000
	calls := []namedCall{
		{"echo", func() error { _, err := health.Check(actx, &healthpb.HealthCheckRequest{}); return err }},
		{"GetRuntimeValue", func() error {
			_, err := cf.GetRuntimeValue(actx, &nexusv1.GetRuntimeValueRequest{Namespace: "bench", Key: "k"})
			return err
		}},
		{"GetDefinitionFileContent", func() error {
			_, err := cf.GetDefinitionFileContent(actx, &nexusv1.GetDefinitionFileContentRequest{Path: filePath(123)})
			return err
		}},
	}
	p50, err := interleavedP50(calls, n)
	if err != nil {
		return err
	}
	report("GetRuntimeValue over gRPC, p50", p50[1], p50[0], "health check on the same socket", "≤ 1.5×")
	report("GetDefinitionFileContent over gRPC, p50", p50[2], p50[0], "health check on the same socket", "≤ 1.5×")
	return nil
}

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// namedCall is one of the calls interleavedP50 times.
type namedCall struct {
	name string
	fn   func() error
}

// interleavedP50 warms each call up, then times n rounds of all of them in
// turn, so that the machine's noise falls on all alike, and returns each
// one's median.
func interleavedP50(calls []namedCall, n int) ([]time.Duration, error) {
	for _, c := range calls {
		for range 500 {
			if err := c.fn(); err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
		}
	}
	samples := make([][]time.Duration, len(calls))
	for range n {
		for i, c := range calls {
			t := time.Now()
			if err := c.fn(); err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			samples[i] = append(samples[i], time.Since(t))
		}
	}
	p50 := make([]time.Duration, len(calls))
	for i, s := range samples {
		slices.Sort(s)
		p50[i] = s[len(s)/2]
	}
	return p50, nil
}
