package checkpoints

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
)

// Recorded is everyone but the person's own direct calls: agents from
// every door, apps, gateway clients (an agent or an app), and MCP servers'
// own requests.
func recorded(party access.Party) bool { return !(party.IsPerson() && !party.IsAgent()) }

// Begin implements [tools.Recorder].
func (s *Store) Begin(ctx context.Context, c tools.Call, touch tools.Touch, party access.Party) (func(error), error) {
	if !recorded(party) || touch.Empty() {
		return nil, nil
	}
	cp := &Checkpoint{ID: c.ID, Kind: KindCall, ToolCallID: c.ID, ToolName: c.ToolName, ServerName: c.ServerName,
		Author: party.Author(), AppID: party.AppID(), Session: sessionOf(c.Session, party), Turn: c.Turn}
	if cp.ID == "" {
		return nil, errors.New("checkpoints: the call has no id")
	}
	if touch.All {
		return s.beginAll(ctx, cp)
	}
	return s.beginPaths(cp, touch.Paths)
}

// sessionOf is the session a call's checkpoint is grouped in: the call's,
// else the app's own, else its author's.
func sessionOf(session string, party access.Party) string {
	switch {
	case session != "":
		return session
	case party.App() != nil:
		return "app:" + party.AppID()
	}
	return party.Author()
}

// fileState is a file as a call that names it saw it.
type fileState struct {
	exists  bool
	content []byte
	blob    string
	exec    bool
	skip    string // why it is not recorded; "" when it is
	// linked: a directory on the way to it is a symlink, which nothing
	// is ever written through, forced or not.
	linked bool
}

func (f fileState) same(o fileState) bool {
	return f.exists == o.exists && f.blob == o.blob && f.exec == o.exec && f.skip == o.skip
}

// readPath reads a file of the workspace for a call that names it,
// without following a symlink.
func (s *Store) readPath(p string) (fileState, error) {
	parts := strings.Split(p, "/")
	var info fs.FileInfo
	for i := 1; i <= len(parts); i++ {
		sub, last := strings.Join(parts[:i], "/"), i == len(parts)
		var err error
		info, err = s.root.Lstat(filepath.FromSlash(sub))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fileState{}, nil
		case err != nil:
			return fileState{}, err
		case !last && info.Mode()&fs.ModeSymlink != 0:
			return fileState{skip: "not a regular file (under the symlink " + sub + ")", linked: true}, nil
		case !last && !info.IsDir():
			return fileState{}, nil
		}
	}
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		return fileState{exists: true, skip: "not a regular file (a symlink)"}, nil
	case !info.Mode().IsRegular():
		return fileState{exists: true, skip: "not a regular file (" + fileType(info.Mode()) + ")"}, nil
	case info.Size() > s.opts.MaxFileSize:
		return fileState{exists: true, skip: s.overCap(info.Size())}, nil
	}
	content, err := readRegular(s.root, p, s.opts.MaxFileSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileState{}, nil
	case errors.Is(err, errTooLarge):
		return fileState{exists: true, skip: s.overCap(s.opts.MaxFileSize + 1)}, nil
	case errors.Is(err, errChanged):
		return fileState{exists: true, skip: "not a regular file"}, nil
	case err != nil:
		return fileState{}, err
	}
	return fileState{exists: true, content: content, blob: state.BlobID(content), exec: info.Mode()&0o111 != 0}, nil
}

// plainDirs refuses a path of root one of whose directories is a symlink,
// just before it is written: root itself follows a symlink that stays in
// the workspace, and one into .nexus/ or .git/ does.
func plainDirs(root *os.Root, p string) error {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		info, err := root.Lstat(filepath.FromSlash(d))
		if err == nil && info.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink now: nothing is written through it", d)
		}
	}
	return nil
}

// checkPath refuses a path that is not a clean relative one.
func checkPath(p string) error {
	if p == "" || !filepath.IsLocal(filepath.FromSlash(p)) || p != filepath.ToSlash(filepath.Clean(filepath.FromSlash(p))) || strings.Contains(p, "\\") {
		return fmt.Errorf("checkpoints: %q is not a clean path relative to the workspace", p)
	}
	return nil
}

// beginPaths reads the files a call names before it runs; its end reads
// them again and records what differs.
func (s *Store) beginPaths(cp *Checkpoint, paths []string) (func(error), error) {
	for _, p := range paths {
		if err := checkPath(p); err != nil {
			return nil, err
		}
	}
	before := make([]fileState, len(paths))
	for i, p := range paths {
		var err error
		if before[i], err = s.readPath(p); err != nil {
			return nil, fmt.Errorf("checkpoints: read %s before the call: %w", p, err)
		}
	}
	s.scan.claim(paths)
	return func(error) {
		contents := map[string][]byte{}
		for i, p := range paths {
			after, err := s.readPath(p)
			if err != nil {
				cp.Skipped = append(cp.Skipped, Skipped{Path: p, Reason: "could not be read after the call: " + err.Error()})
				continue
			}
			b := before[i]
			switch {
			case b.same(after):
				continue
			case b.skip != "" || after.skip != "":
				reason := after.skip
				if reason == "" {
					reason = b.skip + ", before the call"
				}
				cp.Skipped = append(cp.Skipped, Skipped{Path: p, Reason: reason})
				continue
			}
			f := FileChange{Path: p, Action: Modified, Before: b.blob, After: after.blob, BeforeExec: b.exec, AfterExec: after.exec}
			switch {
			case !b.exists:
				f.Action = Added
			case !after.exists:
				f.Action = Deleted
			}
			cp.Files = append(cp.Files, f)
			if b.exists {
				contents[b.blob] = b.content
			}
			if after.exists {
				contents[after.blob] = after.content
			}
		}
		if len(cp.Files)+len(cp.Skipped) == 0 {
			s.scan.unclaim(paths)
			return
		}
		cp.Time = time.Now().UTC()
		// Recorded by the recorder, in order, with the checkpoints of
		// calls ending meanwhile (one pack, one ref update); it refreshes
		// the baseline for the paths and releases them. The call ends
		// once its checkpoint is durable.
		p := &pendingRecord{cp: cp, contents: contents, settle: paths, done: make(chan error, 1)}
		if !s.rec.enqueue(p) {
			s.scan.unclaim(paths)
			s.logger.Error("a call's changes were not recorded (the store is closed); they cannot be undone", "call", cp.ID)
			return
		}
		if err := <-p.done; err != nil {
			s.logger.Error("a call's changes were not recorded; they cannot be undone", "call", cp.ID, "err", err)
		}
	}, nil
}

// beginAll refreshes the baseline before a call that may change any file;
// its end scans the workspace again and records what differs.
func (s *Store) beginAll(ctx context.Context, cp *Checkpoint) (func(error), error) {
	sc := s.scan
	if err := sc.wait(ctx); err != nil {
		return nil, err
	}
	sc.lock()
	defer sc.unlock()
	end := func(error) {
		if err := s.endAll(cp); err != nil {
			s.logger.Error("a command's changes were not recorded; they cannot be undone", "call", cp.ID, "error", err.Error())
		}
	}
	if sc.unchanged() {
		return end, nil
	}
	// A first scan that failed is tried again: this walk reads every
	// file when there is no baseline.
	res, err := sc.walk(sc.base)
	if err != nil {
		return nil, fmt.Errorf("checkpoints: scan the workspace before the call: %w", err)
	}
	if !res.tooMany {
		if err := sc.store(res); err != nil {
			return nil, fmt.Errorf("checkpoints: store the workspace's contents before the call: %w", err)
		}
		sc.adopt(res)
	}
	return end, nil
}

// endAll records what a command changed.
func (s *Store) endAll(cp *Checkpoint) error {
	sc := s.scan
	sc.lock()
	defer sc.unlock()
	res, err := sc.walk(sc.base)
	if err != nil {
		return fmt.Errorf("scan the workspace after the call: %w", err)
	}
	if res.tooMany {
		cp.Skipped = []Skipped{{Path: ".", Reason: fmt.Sprintf("the workspace has more than %d files (checkpoints.maxFiles): a command's changes are not compared", s.opts.MaxFiles)}}
	} else {
		cp.Files, cp.Skipped = sc.compare(sc.base, res.entries)
	}
	if !res.tooMany {
		// The baseline moves on now, the checkpoint is recorded in the
		// background: contents read but not part of it (a claimed path's)
		// are stored first.
		extra := make([][]byte, 0)
		for id, c := range res.contents {
			if !slices.Contains(cp.afterIDs(), id) {
				extra = append(extra, c)
			}
		}
		if len(extra) > 0 {
			if err := s.changes.Put(extra); err != nil {
				return err
			}
		}
		sc.adopt(res)
	}
	if len(cp.Files)+len(cp.Skipped) == 0 {
		return nil
	}
	cp.Time = time.Now().UTC()
	p := &pendingRecord{cp: cp, contents: res.contents, storeOnFailure: true, done: make(chan error, 1)}
	if !s.rec.enqueue(p) {
		return errors.New("the store is closed")
	}
	return <-p.done
}

// afterIDs are the contents a checkpoint's files hold after it.
func (cp *Checkpoint) afterIDs() []string {
	ids := make([]string, 0, len(cp.Files))
	for _, f := range cp.Files {
		ids = append(ids, f.After)
	}
	return ids
}

// adopt makes a scan the baseline, but for the claimed paths, which stay
// as they were. The caller holds mu.
func (sc *scanner) adopt(res scanResult) {
	for p := range sc.claims {
		if e, ok := sc.base[p]; ok {
			res.entries[p] = e
		} else {
			delete(res.entries, p)
		}
	}
	sc.base = res.entries
	sc.dirty = true
	sc.current = len(sc.claims) == 0 // a claimed path's entry is older than the scan
}

// claim marks paths as being changed by a call that names them; release
// (or settleAndRelease) undoes it.
func (sc *scanner) claim(paths []string) {
	sc.lock()
	defer sc.unlock()
	for _, p := range paths {
		sc.claims[p]++
	}
}

// release drops claims. The caller holds mu.
func (sc *scanner) release(paths []string) {
	for _, p := range paths {
		if sc.claims[p]--; sc.claims[p] <= 0 {
			delete(sc.claims, p)
		}
	}
}

// unclaim releases claims without a refresh.
func (sc *scanner) unclaim(paths []string) {
	sc.lock()
	defer sc.unlock()
	sc.release(paths)
}
