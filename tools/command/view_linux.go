package command

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// tempDirs are made new, empty and private to the command: no other
// process's files, no other workspace, nothing left behind (the mount
// namespace and its tmpfs go with the command's last process).
var tempDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// runDir holds the machine's runtime sockets: systemd's, D-Bus's, Docker's
// and containerd's, and the user's agents' under /run/user. A command
// without network gets an empty one of its own, like the temporary
// directories: a daemon running as root would otherwise run commands that
// reach root-only sockets (docker.sock is a root shell on the machine),
// which Landlock refuses only from ABI 9.
const runDir = "/run"

// view is the spec's View where it applies.
func (s *Spec) view() *View {
	if s.Mode == Off {
		return nil
	}
	return s.View
}

// writablePaths are the paths Landlock must let the command write besides
// the workspace and the temporary directories: writable binds outside the
// workspace (a definitions root elsewhere).
func (v *View) writablePaths(workspace string) []string {
	var out []string
	for _, b := range v.Binds {
		if b.Writable && !under(b.Path, workspace) {
			out = append(out, b.Path)
		}
	}
	return out
}

// under reports whether p is dir or lies below it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/") || dir == "/"
}

// setupView builds the view in the helper's own mount namespace, then
// moves into dir: a working directory inherited from before would still
// see the file system as it was. Without network, /run is private too.
func setupView(v *View, workspace, dir string, network bool) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	// Copies of what is shown again, taken before anything is hidden.
	ws, err := cloneTree(workspace, false)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	defer unix.Close(ws)
	binds := slices.Clone(v.Binds)
	slices.SortFunc(binds, func(a, b Bind) int { return strings.Compare(a.Path, b.Path) })
	trees := make([]int, len(binds))
	for i, b := range binds {
		fd, err := cloneTree(b.Path, !b.Writable)
		if errors.Is(err, unix.ENOENT) {
			trees[i] = -1
			continue
		}
		if err != nil {
			closeAll(trees[:i])
			return fmt.Errorf("showing %s: %w", b.Path, err)
		}
		trees[i] = fd
	}
	defer closeAll(trees)

	covered := under(workspace, "/dev")
	if err := privateDev(); err != nil {
		return fmt.Errorf("a private /dev: %w", err)
	}
	private := tempDirs
	if !network {
		private = append(slices.Clip(private), runDir)
	}
	for _, d := range private {
		if !isDir(d) {
			continue
		}
		if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("a private %s: %w", d, err)
		}
		covered = covered || under(workspace, d)
	}
	for _, h := range v.Hide {
		covered = covered || under(workspace, h)
	}
	if covered {
		if err := attach(ws, workspace); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	var hidden []string
	for _, h := range v.Hide {
		if !isDir(h) {
			continue
		}
		if err := unix.Mount("tmpfs", h, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
		hidden = append(hidden, h)
	}
	// Mount points first, while the hiding tmpfs is writable; then it is
	// made read-only, and the trees are moved onto their points.
	var shown []int
	for i, b := range binds {
		if trees[i] < 0 || !slices.ContainsFunc(hidden, func(h string) bool { return under(b.Path, h) }) {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(trees[i], &st); err != nil {
			return fmt.Errorf("showing %s: %w", b.Path, err)
		}
		if err := mountPoint(b.Path, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
			return fmt.Errorf("showing %s: %w", b.Path, err)
		}
		shown = append(shown, i)
	}
	for _, h := range hidden {
		if err := unix.Mount("", h, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
	}
	for _, i := range shown {
		if err := unix.MoveMount(trees[i], "", unix.AT_FDCWD, binds[i].Path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("showing %s: %w", binds[i].Path, err)
		}
	}
	for _, p := range v.ReadOnly {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		fd, err := cloneTree(p, true)
		if err != nil {
			return fmt.Errorf("making %s read-only: %w", p, err)
		}
		err = unix.MoveMount(fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("making %s read-only: %w", p, err)
		}
	}
	// A /proc of the command's own PID namespace: no process of the
	// daemon's, and so no /proc/<pid>/environ of it.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("a /proc of the command's own: %w", err)
	}
	if err := unix.Chdir(dir); err != nil {
		return fmt.Errorf("working directory %s: %w", dir, err)
	}
	return nil
}

// devNodes are the devices a command sees in its /dev, the machine's own
// nodes mounted again; devLinks are the usual symbolic links beside them.
var (
	devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}
	devLinks = [][2]string{
		{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"},
		{"stderr", "/proc/self/fd/2"},
	}
)

// privateDev puts a /dev of a few character devices, like bubblewrap's
// --dev, over the machine's: a command running as root must not find the
// disks there (/dev/vda is root's, and reading it reads every file of the
// file system, .nexus included, past the view and Landlock's rules).
// /dev/shm is a mount point for the temporary directories' tmpfs; the
// rest is read-only.
func privateDev() error {
	if !isDir("/dev") {
		return nil
	}
	nodes := make([]int, len(devNodes))
	for i, name := range devNodes {
		fd, err := cloneTree("/dev/"+name, false)
		if err != nil {
			nodes[i] = -1
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			closeAll(nodes[:i])
			return fmt.Errorf("/dev/%s: %w", name, err)
		}
		nodes[i] = fd
	}
	defer closeAll(nodes)
	const flags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", flags, "mode=0755,size=64k"); err != nil {
		return err
	}
	for i, name := range devNodes {
		if nodes[i] < 0 {
			continue
		}
		p := "/dev/" + name
		if err := mountPoint(p, false); err != nil {
			return err
		}
		if err := unix.MoveMount(nodes[i], "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	for _, l := range devLinks {
		if err := os.Symlink(l[1], "/dev/"+l[0]); err != nil {
			return err
		}
	}
	if err := os.Mkdir("/dev/shm", 0o755); err != nil {
		return err
	}
	return unix.Mount("", "/dev", "", unix.MS_REMOUNT|unix.MS_RDONLY|flags, "")
}

// cloneTree returns a detached copy of the mount tree at path, read-only
// when readOnly, without following a symlink at path itself.
func cloneTree(path string, readOnly bool) (int, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return -1, err
	}
	if readOnly {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// attach mounts a detached directory tree at path, making the mount point
// first inside the tmpfs that covers it.
func attach(tree int, path string) error {
	if err := mountPoint(path, true); err != nil {
		return err
	}
	return unix.MoveMount(tree, "", unix.AT_FDCWD, path, unix.MOVE_MOUNT_F_EMPTY_PATH)
}

// mountPoint makes the directory, or the empty file, that a tree is
// mounted on.
func mountPoint(path string, dir bool) error {
	if dir {
		return os.MkdirAll(path, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

func closeAll(fds []int) {
	for _, fd := range fds {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}
