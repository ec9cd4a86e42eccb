package daemon

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nexuscocreate/nexus/access"
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
// start. started is the file's snapshot from when the daemon read it.
func watchConfig(ctx context.Context, file, started string, logger *slog.Logger) {
	last := started
	err := workspace.WatchFiles(ctx, workspace.FileWatchOptions{
		Files:    []string{file},
		Debounce: 250 * time.Millisecond,
		Loaded:   started,
		OnChange: func() {
			snapshot := workspace.SnapshotFiles([]string{file})
			if snapshot == last {
				return // touched, or saved as it was
			}
			last = snapshot
			if _, err := workspace.LoadConfig(file, nil); err != nil {
				logger.Error("the edited configuration is invalid; the daemon goes on with the one it started with, and will refuse to start with this one",
					"file", file, "error", strings.ReplaceAll(err.Error(), "\n", "; "))
				return
			}
			if snapshot == started {
				logger.Info("the configuration is again the one the daemon runs with", "file", file)
				return
			}
			logger.Warn("the configuration changed; restart nexusd to apply it", "file", file)
		},
	})
	if err != nil {
		logger.Warn("the configuration file is not watched", "error", err.Error())
	}
}

func appIDs(apps map[string]*access.App) []string {
	return slices.Sorted(maps.Keys(apps))
}
