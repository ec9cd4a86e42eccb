package mcp

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchDebounce gathers the events of one save (editors write, rename and
// chmod) into one reload.
const watchDebounce = 250 * time.Millisecond

// Watch reloads the configuration when one of its files changes, and
// applies it: added, removed and changed servers only. It watches the
// directories of the files, so that files created or replaced later are
// seen, and returns when ctx ends. A configuration that does not load is
// logged and not applied; the running servers go on.
func (h *Hub) Watch(ctx context.Context, getenv func(string) (string, bool)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	files := Files(h.opts.Workspace)
	watched := map[string]bool{}
	watchDirs := func() {
		for _, f := range files {
			dir := filepath.Dir(f)
			if watched[dir] {
				continue
			}
			if err := w.Add(dir); err == nil {
				watched[dir] = true
			}
		}
	}
	watchDirs()
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Has(fsnotify.Create) {
				if info, err := os.Stat(ev.Name); err == nil && info.IsDir() {
					watchDirs()                       // .vscode or .nexus created after the start,
					timer = time.After(watchDebounce) // perhaps with the file already in it
				}
			}
			if slices.Contains(files, ev.Name) {
				timer = time.After(watchDebounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			h.logger.Warn("watching the MCP configuration", "error", err.Error())
			timer = time.After(watchDebounce) // events may be lost: reload
		case <-timer:
			timer = nil
			h.Reload(getenv)
		}
	}
}

// Reload loads the configuration files again and applies them.
func (h *Hub) Reload(getenv func(string) (string, bool)) {
	cfgs, warnings, err := LoadConfig(h.opts.Workspace, getenv)
	for _, w := range warnings {
		h.logger.Warn("MCP configuration: " + w)
	}
	if err != nil {
		h.logger.Error("MCP configuration not applied; the servers keep running as they were", "error", err.Error())
		return
	}
	h.Apply(cfgs)
}
