package daemon

import (
	"context"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/nexuscocreate/nexus/rpc"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/workspace"
)

// watchDefinitions records edits made on disk under the definitions root,
// by a person or any program, as "disk" commits, until ctx ends.
func watchDefinitions(ctx context.Context, defs *state.Definitions, root string, debounce time.Duration, logger *slog.Logger) {
	err := workspace.Watch(ctx, workspace.WatchOptions{
		Root:     root,
		Debounce: debounce,
		Ignore:   state.IsTempName,
		OnChange: func(paths []string) {
			if err := defs.SyncFromDisk(paths); err != nil {
				logger.Warn("edits made on disk not recorded", "error", err.Error())
			}
		},
		OnRescan: func() {
			logger.Warn("file events were lost (too many at once); comparing the whole definitions root with the history")
			if err := defs.Rescan(); err != nil {
				logger.Warn("definitions rescan failed", "error", err.Error())
			}
		},
		OnError: func(err error) { logger.Warn("definitions watcher", "error", err.Error()) },
		// Edits made between the store's open and the watches being in
		// place are found by one comparison of the whole tree.
		OnReady: func() {
			if err := defs.Rescan(); err != nil {
				logger.Warn("definitions rescan failed", "error", err.Error())
			}
		},
		Logger: logger,
	})
	if err != nil {
		logger.Warn("edits made on disk are not watched: they are recorded at the next start", "error", err.Error())
	}
}

// watchConfig reports edits of .nexus/config.yaml: a file that no longer
// loads is an error the person sees at once (in the editor, through the
// log), rather than at the next start; a valid one is applied at the next
// start.
func watchConfig(ctx context.Context, file string, logger *slog.Logger) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		logger.Warn("the configuration file is not watched", "error", err.Error())
		return
	}
	defer w.Close()
	dir := filepath.Dir(file)
	if err := w.Add(dir); err != nil {
		logger.Warn("the configuration file is not watched", "error", err.Error())
		return
	}
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Name == file {
				timer = time.After(250 * time.Millisecond)
			}
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
		case <-timer:
			timer = nil
			if _, err := workspace.LoadConfig(file, nil); err != nil {
				logger.Error("the edited configuration is invalid; the daemon goes on with the one it started with, and will refuse to start with this one",
					"file", file, "error", strings.ReplaceAll(err.Error(), "\n", "; "))
				continue
			}
			logger.Warn("the configuration changed; restart nexusd to apply it", "file", file)
		}
	}
}

func appIDs(apps map[string]*rpc.App) []string {
	return slices.Sorted(maps.Keys(apps))
}
