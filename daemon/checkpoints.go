package daemon

import (
	"fmt"
	"log/slog"

	"github.com/nexuscocreate/nexus/checkpoints"
	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/workspace"
)

// openCheckpoints opens the checkpoints store of the workspace, in the
// definitions' history repository; nil when checkpoints.enabled is false.
func openCheckpoints(ws string, cfg workspace.CheckpointsConfig, defs *state.Definitions, bus *events.Bus,
	logger *slog.Logger) (*checkpoints.Store, error) {
	if !cfg.Enabled {
		logger.Info("checkpoints are off (checkpoints.enabled: false): changes to the workspace are not recorded and cannot be undone")
		return nil, nil
	}
	s, err := checkpoints.Open(checkpoints.Options{
		Workspace:     ws,
		Definitions:   defs,
		Bus:           bus,
		Logger:        logger,
		MaxFileSize:   int64(cfg.MaxFileSize),
		MaxStoreBytes: int64(cfg.MaxStoreSize),
		MaxFiles:      cfg.MaxFiles,
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints (set checkpoints.enabled: false to run without them): %w", err)
	}
	return s, nil
}

// recorder is the tools' Recorder of s: none when checkpoints are off (a
// nil *Store in the interface would be called).
func recorder(s *checkpoints.Store) tools.Recorder {
	if s == nil {
		return nil
	}
	return s
}
