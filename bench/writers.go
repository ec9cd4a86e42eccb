package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/nexuscocreate/nexus/state"
)

// runDefinitions measures only the durable writes of the definitions store
// (-only definitions): one writer's p50 and the throughput of 1, 4 and 16
// concurrent writers, on a workspace of small commits over files files.
func runDefinitions(small, files, writes int) error {
	return withTemp(func(tmp string) error {
		fmt.Printf("nexus bench: durable definition writes on %d commits over %d files; anchors measured in the same run\n\n", small, files)
		ws := filepath.Join(tmp, "small")
		if err := makeHistory(ws, small, files); err != nil {
			return err
		}
		s, err := state.OpenDefinitions(state.DefinitionsOptions{
			Dir: filepath.Join(ws, ".nexus", "definitions"), HistoryDir: filepath.Join(ws, ".nexus", "history.git")})
		if err != nil {
			return err
		}
		defer s.Close()
		return benchSet(s, ws, tmp, writes, files)
	})
}

// gitLoop times n rounds of `git add && git commit` of one changed file in
// a clone of ws's history with a work tree: the median round and the whole
// loop.
func gitLoop(ws, tmp string, n, files int) (p50, total time.Duration, err error) {
	clone := filepath.Join(tmp, "anchor")
	if err := os.RemoveAll(clone); err != nil {
		return 0, 0, err
	}
	if err := gitRun("", "clone", "-q", filepath.Join(ws, ".nexus", "history.git"), clone); err != nil {
		return 0, 0, err
	}
	j := 0
	start := time.Now()
	p50, err = timeIt(n, func() error {
		j++
		p := filePath(j % files)
		if err := os.WriteFile(filepath.Join(clone, p), []byte(fileContent(j%files, 2_000_000+j)), 0o644); err != nil {
			return err
		}
		cmd := exec.Command("sh", "-c", "git add -- \"$1\" && git commit -q -m bench", "sh", p)
		cmd.Dir = clone
		cmd.Env = gitCmd("").Env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	return p50, time.Since(start), err
}

// writersRun is one measurement of concurrent writers.
type writersRun struct {
	writers int
	rate    float64       // acknowledged writes per second, all writers together
	p50     time.Duration // of one write, from the call to its acknowledgement
}

// benchWriters times writes durable writes to s split among n concurrent
// writers, each on its own files (writer w writes the files i with
// i%n == w), so that no two writers write the same path.
func benchWriters(s *state.Definitions, n, writes, files, version int) (writersRun, error) {
	per := max(1, writes/n)
	lat := make([][]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range n {
		wg.Go(func() {
			for k := range per {
				i := (w + n*k) % files
				t := time.Now()
				_, err := s.Set(filePath(i), []byte(fileContent(i, version+w*per+k)), state.WriteOptions{Author: "bench"})
				if err != nil {
					errs[w] = err
					return
				}
				lat[w] = append(lat[w], time.Since(t))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for w := range n {
		if errs[w] != nil {
			return writersRun{}, errs[w]
		}
		all = append(all, lat[w]...)
	}
	slices.Sort(all)
	return writersRun{writers: n, rate: float64(len(all)) / elapsed.Seconds(), p50: all[len(all)/2]}, nil
}

// reportRate prints a throughput beside its anchor; the ratio is ours over
// the anchor's, so higher is better.
func reportRate(name string, ours, anchor float64, anchorName, target string) {
	fmt.Printf("%-44s %8.0f/s   %-34s %8.0f/s   ratio %.2f×   (target %s)\n",
		name, ours, "vs "+anchorName, anchor, ours/anchor, target)
}
