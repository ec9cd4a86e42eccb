package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The last run's figures. Some targets are "no slower than before": the
// bench keeps each such figure — a ratio to its anchor in the same run, so
// that a busier or quieter machine moves both — in a file, and the next run
// prints its own beside it. The file is .cache/bench/last.json in the
// checkout ($NEXUS_BENCH_LAST to choose another); a run that finds none says
// so and starts one.

// lastRun holds the figures of the last run, by name, and this run's.
type lastRun struct {
	path string
	prev map[string]float64
	now  map[string]float64
}

// openLastRun reads the last run's figures; a missing file is a first run.
func openLastRun() (*lastRun, error) {
	path := os.Getenv("NEXUS_BENCH_LAST")
	if path == "" {
		path = filepath.Join(".cache", "bench", "last.json")
	}
	l := &lastRun{path: path, prev: map[string]float64{}, now: map[string]float64{}}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return l, nil
	case err != nil:
		return nil, fmt.Errorf("the last run's figures: %w", err)
	}
	if err := json.Unmarshal(data, &l.prev); err != nil {
		return nil, fmt.Errorf("the last run's figures in %s: %w (delete the file to start anew)", path, err)
	}
	return l, nil
}

// compare prints this run's ratio for name beside the last run's, with the
// change between them against target (≤ 1.1×: at most 10% slower), and
// keeps it for the next run.
func (l *lastRun) compare(name string, ratio float64, target float64) {
	l.now[name] = ratio
	prev, ok := l.prev[name]
	if !ok {
		fmt.Printf("%-44s %10.4f×   %-34s %10s    (first run: kept in %s for the next)\n", name, ratio, "vs last run", "none", l.path)
		return
	}
	fmt.Printf("%-44s %10.4f×   %-34s %10.4f×   change %.4f×   (target ≤ %.2f×)\n", name, ratio, "vs last run", prev, ratio/prev, target)
}

// save writes this run's figures over the last run's (those it did not
// measure are kept).
func (l *lastRun) save() error {
	all := map[string]float64{}
	for k, v := range l.prev {
		all[k] = v
	}
	for k, v := range l.now {
		all[k] = v
	}
	data, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
		return err
	}
	tmp := l.path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, l.path)
}
