package checkpoints

import (
	"errors"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watcher tells a command's Begin whether anything changed in the
// workspace's directories since the last scan, by inotify: when nothing
// did, the baseline is the workspace and Begin needs no scan. The events
// of a write are queued before the write returns, so draining the queue
// (non-blocking) sees every change made before it. Any event, an overflow
// of the queue, or a directory that could not be watched makes the next
// Begin scan as without a watcher; the end of a command always scans.
// Writes through a shared mapping raise no event: a change made so by
// someone else between two commands is then seen by the second one's end,
// and recorded with it. Changes inside ignored directories raise none
// either (they are not watched); they are only ever listed as skipped.
type watcher struct {
	fd     int
	root   string
	wds    map[int32]string // watch → directory (relative, "" the root)
	dirs   map[string]int32
	broken bool // a watch could not be added (inotify's limits): no skip
}

const watchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_DONT_FOLLOW | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// newWatcher returns nil where inotify is unavailable.
func newWatcher(root string) *watcher {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	return &watcher{fd: fd, root: root, wds: map[int32]string{}, dirs: map[string]int32{}}
}

func (w *watcher) close() {
	if w != nil {
		unix.Close(w.fd)
	}
}

// drain reads the queued events and reports whether there were any.
func (w *watcher) drain() bool {
	changed := false
	var buf [64 << 10]byte
	for {
		n, err := unix.Read(w.fd, buf[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return changed // EAGAIN: the queue is empty
		}
		changed = true
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&unix.IN_IGNORED != 0 {
				if d, ok := w.wds[ev.Wd]; ok {
					delete(w.dirs, d)
					delete(w.wds, ev.Wd)
				}
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// watch watches the directories of a whole scan, and those alone.
func (w *watcher) watch(dirs []string) {
	walked := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		walked[d] = true
	}
	for d, wd := range w.dirs {
		if !walked[d] {
			unix.InotifyRmWatch(w.fd, uint32(wd))
			delete(w.dirs, d)
			delete(w.wds, wd)
		}
	}
	for _, d := range dirs {
		if _, ok := w.dirs[d]; ok {
			continue
		}
		wd, err := unix.InotifyAddWatch(w.fd, filepath.Join(w.root, filepath.FromSlash(d)), watchMask)
		switch {
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
			continue // gone, or replaced, since the scan: the change is an event of its parent
		case err != nil:
			w.broken = true
			continue
		}
		if old, ok := w.wds[int32(wd)]; ok && old != d {
			delete(w.dirs, old) // the same directory, renamed
		}
		w.dirs[d], w.wds[int32(wd)] = int32(wd), d
	}
}
