package mcp

import (
	"context"
	"time"

	"github.com/nexuscocreate/nexus/workspace"
)

// watchDebounce gathers the events of one save (editors write, rename and
// chmod) into one reload.
const watchDebounce = 250 * time.Millisecond

// Watch reloads the configuration when one of its files changes, and
// applies it: added, removed and changed servers only. Files and
// directories created later are seen (see [workspace.WatchFiles]), and
// files edited since the last [Hub.Reload] are reloaded once the watches
// are in place. A configuration that does not load is logged and not
// applied; the running servers go on. Watch returns when ctx ends.
func (h *Hub) Watch(ctx context.Context, getenv func(string) (string, bool)) error {
	h.mu.Lock()
	loaded := h.loaded
	h.mu.Unlock()
	return workspace.WatchFiles(ctx, workspace.FileWatchOptions{
		Files:    Files(h.opts.Workspace),
		Loaded:   loaded,
		Debounce: watchDebounce,
		OnChange: func() { h.Reload(getenv) },
		OnError: func(err error) {
			h.logger.Warn("watching the MCP configuration; events may be lost, so it is reloaded", "error", err.Error())
		},
	})
}

// Reload loads the configuration files again and applies them.
func (h *Hub) Reload(getenv func(string) (string, bool)) {
	snapshot := workspace.SnapshotFiles(Files(h.opts.Workspace))
	h.mu.Lock()
	h.loaded = snapshot
	h.mu.Unlock()
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
