package command

import (
	"fmt"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

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

// commandFilter assembles the seccomp filter of a sandboxed command for the
// running architecture:
//
//   - a system call of another ABI (i386 through int 0x80 on amd64, arm32
//     on arm64) kills the process: the deny list is in this ABI's numbers,
//     so another ABI would walk around it;
//   - x32 calls on amd64 get ENOSYS (go-seccomp-bpf adds that check);
//   - clone3 gets ENOSYS, since its flags are in memory a filter cannot
//     read: libc then falls back to clone, as under Docker;
//   - clone with a namespace flag, and every deniedSyscalls entry, get
//     EPERM, so that a program sees a plain "Operation not permitted";
//   - everything else is allowed.
func commandFilter() ([]bpf.RawInstruction, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	var denied []string
	for _, name := range deniedSyscalls {
		if _, ok := info.SyscallNames[name]; ok {
			denied = append(denied, name)
		}
	}
	policy := seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
			{
				NamesWithCondtions: []seccomp.NameWithConditions{{
					Name:       "clone",
					Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: cloneNamespaceFlags}},
				}},
				Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM),
			},
			{Names: denied, Action: seccomp.ActionErrno | seccomp.Action(unix.EPERM)},
		},
	}
	body, err := policy.Assemble()
	if err != nil {
		return nil, err
	}
	// seccomp_data.arch is at offset 4. go-seccomp-bpf sends another
	// architecture to the default action, which is allow here: check it
	// first.
	prog := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
	}, body...)
	return bpf.Assemble(prog)
}

// installFilter installs the command's seccomp filter on the calling
// thread, which then forks the command: it inherits the filter, and so do
// its children. no_new_privs must be set already.
func installFilter() error {
	raw, err := commandFilter()
	if err != nil {
		return fmt.Errorf("seccomp filter: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, ins := range raw {
		filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	// Without SECCOMP_FILTER_FLAG_TSYNC: only this thread, like Landlock
	// (see restrict).
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	return nil
}
