package workspace

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// inotifyFDs returns the inotify instances the process has open, by file
// descriptor: taken before a watcher starts, it tells the watcher's own
// from the others.
func inotifyFDs(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	fds := map[string]bool{}
	for _, e := range entries {
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && link == "anon_inode:inotify" {
			fds[e.Name()] = true
		}
	}
	return fds
}

// checkKernelWatches checks, against the kernel's own list
// (/proc/self/fdinfo), that the inotify instances opened since before watch
// exactly the directories of the tree at root, reached without following a
// symlink: no directory a symlink leads to, none missing. The names of the
// directories in also are given for what is watched and should not be.
func checkKernelWatches(t *testing.T, before map[string]bool, root string, also ...string) {
	t.Helper()
	key := func(info fs.FileInfo) string {
		st := info.Sys().(*syscall.Stat_t)
		// fdinfo shows the kernel's device number, major<<20 | minor.
		return fmt.Sprintf("%x:%x", uint64(unix.Major(st.Dev))<<20|uint64(unix.Minor(st.Dev)), st.Ino)
	}
	tree := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		tree[key(info)] = path
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, dir := range also {
		if info, err := os.Stat(dir); err == nil {
			names[key(info)] = dir
		}
	}
	watched := map[string]bool{}
	for fd := range inotifyFDs(t) {
		if before[fd] {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + fd)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(info)) {
			// "inotify wd:3ac ino:9c2ebf sdev:fe00000 mask:fc6 ...", in hex.
			var wd int
			var ino, sdev string
			if n, _ := fmt.Sscanf(line, "inotify wd:%x ino:%s sdev:%s", &wd, &ino, &sdev); n == 3 {
				watched[sdev+":"+ino] = true
			} else if strings.HasPrefix(line, "inotify") {
				t.Fatalf("fdinfo line not understood: %q", line)
			}
		}
	}
	for k := range watched {
		if tree[k] == "" {
			t.Errorf("the kernel watches %s, not a directory of the tree (%s)", k, names[k])
		}
	}
	var missing []string
	for k, path := range tree {
		if !watched[k] {
			missing = append(missing, path)
		}
	}
	slices.Sort(missing)
	for _, path := range missing {
		t.Errorf("%s is not watched", path)
	}
}
