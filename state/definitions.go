// Package state stores definition files with their git history and runtime
// values with their TTLs, and publishes every change on the event bus. Start
// with [OpenDefinitions], and for runtime values the [Runtime] interface:
// [OpenRuntime] (bbolt) or [OpenRedisRuntime] (a shared Redis).
package state

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nexuscocreate/nexus/events"
)

// Authors of commits that do not come from an app.
const (
	AuthorCLI    = "cli"
	AuthorEditor = "editor"
	AuthorDisk   = "disk"
)

// AppAuthor is the commit author of writes by an app.
func AppAuthor(appID string) string { return "app:" + appID }

const authorEmail = "nexus@localhost"

// DefaultMaxFileSize is the largest definition file accepted by default.
const DefaultMaxFileSize = 10 << 20

// ExpectAbsent, as an expected revision, makes a write succeed only when the
// path does not exist.
const ExpectAbsent = "none"

// DefinitionsOptions configure OpenDefinitions. Zero values get defaults.
type DefinitionsOptions struct {
	// Dir is the definitions root; HistoryDir the bare repository. Both are
	// created when missing.
	Dir, HistoryDir string
	// IndexFile is the per-path history index; default
	// HistoryDir/nexus-history.idx.
	IndexFile   string
	Bus         *events.Bus
	MaxFileSize int64
	Logger      *slog.Logger
	Now         func() time.Time
}

// DefinitionChange is published on the bus for every commit, once per path.
type DefinitionChange struct {
	Path     string
	Revision string
	Author   string
	Change   ChangeType
	Message  string
	Time     time.Time
}

// WriteOptions describe who writes and under which condition.
type WriteOptions struct {
	// Author is AppAuthor(id), AuthorCLI, AuthorEditor or AuthorDisk.
	Author string
	// Message is the commit message; a default naming the change is used
	// when it is empty.
	Message string
	// ExpectedRevision, when set, makes the write a compare-and-swap against
	// the path's current revision (or ExpectAbsent).
	ExpectedRevision string
}

// File is the content of a definition file at a revision.
type File struct {
	Content []byte
	// Revision is the commit that last changed the path.
	Revision string
}

// Entry is one entry of a directory listing.
type Entry struct {
	Name string
	Path string
	Dir  bool
	Size int64
}

// HistoryEntry is one commit that changed a path.
type HistoryEntry struct {
	Revision string
	Author   string
	Message  string
	Time     time.Time
	Change   ChangeType
}

type fileState struct {
	blob plumbing.Hash
	size int64
	rev  plumbing.Hash
}

// Definitions is the store of definition files. Every write is one commit,
// durable before it is acknowledged; reads never block on writes.
type Definitions struct {
	dir    string
	root   *os.Root
	repo   *repo
	opts   DefinitionsOptions
	logger *slog.Logger

	// queueMu guards the writes waiting for the committer (see
	// groupcommit.go), which alone changes the snapshot below.
	queueMu  sync.Mutex
	queue    []*writeOp
	stopping bool          // Close has begun: writes are refused
	wake     chan struct{} // a write was queued (one signal is enough)
	stop     chan struct{} // closed by Close
	stopped  chan struct{} // closed when the committer has returned

	// mu guards the snapshot of HEAD below.
	mu     sync.RWMutex
	closed bool
	head   plumbing.Hash
	files  map[string]fileState
	trees  map[string][]object.TreeEntry // directory → entries, in git order
	index  *historyIndex

	// ckpt syncs the working files that groups wrote (checkpoint.go).
	ckpt *checkpointer

	// stats spares scans the reading of files that did not change.
	stats     *statCache
	firstSave sync.WaitGroup // the stat cache's save after the open

	// changes stores workspace checkpoints (changes.go).
	changesOnce sync.Once
	changes     *Changes
}

// OpenDefinitions opens (or creates) the store. It recovers from a torn
// previous run, checks the history index against the repository, and commits
// as "disk" the files that changed on disk while no daemon was running.
func OpenDefinitions(opts DefinitionsOptions) (*Definitions, error) {
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IndexFile == "" {
		opts.IndexFile = filepath.Join(opts.HistoryDir, "nexus-history.idx")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("definitions root: %w", err)
	}
	root, err := os.OpenRoot(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("definitions root: %w", err)
	}
	r, err := openRepo(opts.HistoryDir, opts.Logger)
	if err != nil {
		root.Close()
		return nil, err
	}
	cf, err := openCheckpoint(opts.HistoryDir)
	if err != nil {
		r.close()
		root.Close()
		return nil, err
	}
	s := &Definitions{dir: opts.Dir, root: root, repo: r, opts: opts, logger: opts.Logger,
		ckpt:  newCheckpointer(root, cf, opts.Logger),
		stats: newStatCache(filepath.Join(opts.HistoryDir, "nexus-stat.cache"))}
	s.startCommitter()
	if err := s.load(); err != nil {
		s.stopCommitter()
		s.ckpt.close()
		r.close()
		root.Close()
		return nil, err
	}
	s.firstSave.Go(s.saveStats)
	return s, nil
}

func (s *Definitions) load() error {
	s.index = newHistoryIndex(s.opts.IndexFile)
	rewrite, err := s.index.load()
	if err != nil {
		return fmt.Errorf("history index: %w", err)
	}
	head, err := s.recoverHead()
	if err != nil {
		return err
	}
	caught, err := s.index.catchUp(s.repo, head)
	if err != nil {
		return err
	}
	if rewrite || caught {
		if err := s.index.rewriteFile(); err != nil {
			return fmt.Errorf("history index: %w", err)
		}
	}
	s.head = head
	s.files = map[string]fileState{}
	s.trees = map[string][]object.TreeEntry{"": nil}
	if !head.IsZero() {
		c, err := s.repo.readCommit(head)
		if err != nil {
			return err
		}
		if err := s.loadTree(c.TreeHash, ""); err != nil {
			return err
		}
	}
	for p, ps := range s.index.byPath {
		if f, ok := s.files[p]; ok {
			f.rev = s.index.commits[ps[len(ps)-1]].hash
			s.files[p] = f
		}
	}
	return s.reconcileDisk()
}

// recoverHead returns the commit the branch points to. When the ref is
// missing, empty, garbage, or points to an incomplete commit (a torn write
// by another tool, a lost file system journal), it goes back through the
// reflog to the newest complete commit and points the ref there.
func (s *Definitions) recoverHead() (plumbing.Hash, error) {
	head, err := s.repo.readRef()
	if err == nil && head.IsZero() && len(s.repo.reflog()) == 0 {
		return head, nil // a new repository
	}
	if err == nil && !head.IsZero() {
		// A commit the index records was complete: the index is appended
		// only after the commit's objects were synced and the ref moved.
		if n := len(s.index.commits); n > 0 && s.index.commits[n-1].hash == head {
			return head, nil
		}
		if err = s.repo.commitComplete(head); err == nil {
			return head, nil
		}
	}
	if err == nil {
		err = errors.New("the ref is missing")
	}
	for _, h := range s.repo.reflog() {
		if s.repo.commitComplete(h) == nil {
			s.logger.Warn("history ref was damaged; recovered to the last complete commit",
				"problem", err.Error(), "commit", h.String())
			now := s.opts.Now().Unix()
			if _, werr := s.repo.writeRef(plumbing.ZeroHash, h, "nexusd", "recover: "+err.Error(), now); werr != nil {
				return plumbing.ZeroHash, werr
			}
			return h, nil
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("history repository %s is damaged (%v) and its reflog holds no complete commit; inspect it with git fsck", s.repo.dir, err)
}

func (s *Definitions) loadTree(h plumbing.Hash, dir string) error {
	t, err := s.repo.readTree(h)
	if err != nil {
		return err
	}
	entries := make([]object.TreeEntry, 0, len(t.Entries))
	for _, e := range t.Entries {
		p := joinPath(dir, e.Name)
		switch e.Mode {
		case filemode.Dir:
			if err := s.loadTree(e.Hash, p); err != nil {
				return err
			}
		case filemode.Regular, filemode.Executable, filemode.Deprecated:
			s.files[p] = fileState{blob: e.Hash, size: -1}
		default:
			continue // symlinks and submodules are not definition files
		}
		entries = append(entries, e)
	}
	s.trees[dir] = entries
	return nil
}

// Close lets the group of writes in progress finish, fails the writes
// still queued with ErrClosed, and closes the store.
func (s *Definitions) Close() error {
	if !s.stopCommitter() {
		return nil
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	ckptErr := s.ckpt.close() // syncs the last working files
	s.firstSave.Wait()
	s.saveStats()
	return errors.Join(ckptErr, s.repo.close(), s.root.Close())
}
