package command

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The command's seccomp filter, for each architecture, is assembled from
// deniedSyscalls and cloneNamespaceFlags by go-seccomp-bpf (its system call
// tables and its assembler) and checked in as commandFilter in
// zseccomp_linux_GOARCH.go, so that the helper neither builds the tables
// nor assembles the filter each time it starts: TestSeccompFilterGenerated
// fails when it is stale, and -update writes it again. The filter:
//
//   - kills the process on a system call of another ABI (i386 through int
//     0x80 on amd64, arm32 on arm64): the deny list is in this ABI's
//     numbers, so another ABI would walk around it;
//   - answers ENOSYS to x32 calls on amd64;
//   - answers ENOSYS to clone3, whose flags are in memory a filter cannot
//     read: libc then falls back to clone, as under Docker;
//   - answers EPERM to clone with a namespace flag and to every
//     deniedSyscalls entry, so that a program sees a plain "Operation not
//     permitted";
//   - allows everything else.

// deniedSyscalls are the system calls a sandboxed command gets EPERM for,
// after Docker's default seccomp profile: what only an administrator or a
// container runtime needs, and what reaches around the mount view, the
// process tree or the kernel's own boundaries. A name the running
// architecture does not have is skipped (iopl exists on amd64 only);
// TestDeniedSyscallsKnown checks every name against both tables.
var deniedSyscalls = []string{
	// Files by handle: reopening any inode through the root mount, past
	// the mount view (the "shocker" escape).
	"open_by_handle_at", "name_to_handle_at",
	// Mounts, old and new API: changing the view itself.
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "open_tree_attr",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	// Namespaces: leaving or making them (clone is filtered by its flags).
	"unshare", "setns",
	// Other processes' memory and descriptors.
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	// Kernel code, kernel memory and the kernel's keys.
	"bpf", "perf_event_open", "userfaultfd",
	"init_module", "finit_module", "delete_module", "create_module", "query_module", "get_kernel_syms",
	"kexec_load", "kexec_file_load",
	"keyctl", "add_key", "request_key",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// The machine: clock, swap, accounting, quotas, power, ports, logs.
	"settimeofday", "clock_settime", "clock_adjtime",
	"swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "reboot",
	"iopl", "ioperm", "syslog", "vhangup", "lookup_dcookie", "fanotify_init",
	"nfsservctl", "_sysctl", "sysfs", "ustat", "uselib",
}

// cloneNamespaceFlags are clone(2)'s flags that make new namespaces:
// CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
// CLONE_NEWPID and CLONE_NEWNET (Docker's mask).
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// installFilter installs the command's seccomp filter on the calling
// thread, which then forks the command: it inherits the filter, and so do
// its children. no_new_privs must be set already. An architecture without
// a filter fails, and so the command does not run.
func installFilter() error {
	if len(commandFilter) == 0 {
		return fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	prog := unix.SockFprog{Len: uint16(len(commandFilter)), Filter: &commandFilter[0]}
	// Without SECCOMP_FILTER_FLAG_TSYNC: only this thread, like Landlock
	// (see restrict).
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	return nil
}
