package command

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// pidReserve is how many low PIDs the kernel skips once a namespace's PID
// allocation has wrapped around (RESERVED_PIDS); a namespace with
// pid_max = n+pidReserve always has room for n tasks, and never more than
// n+pidReserve.
const pidReserve = 300

// boundPIDs sets the pid_max of the calling process's PID namespace so
// that it holds at most about n tasks. It must only be called by PID 1 of
// a namespace of its own: from Linux 6.14 pid_max is per PID namespace and
// the write reaches that namespace only; before, it is global, so older
// kernels are refused.
func boundPIDs(n int) error {
	if !kernelAtLeast(6, 14) {
		return fmt.Errorf("pid_max is per PID namespace from Linux 6.14 only")
	}
	return os.WriteFile("/proc/sys/kernel/pid_max", []byte(strconv.Itoa(n+pidReserve)), 0)
}

// kernelAtLeast reports whether the running kernel's version is at least
// major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	release := unix.ByteSliceToString(u.Release[:])
	var ma, mi int
	if _, err := fmt.Sscanf(release, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// userTasks counts the tasks (threads) whose real user is uid, as
// RLIMIT_NPROC counts them.
func userTasks(uid int) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := strconv.Itoa(uid)
	total := 0
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var realUID string
		threads := 0
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					realUID = f[0]
				}
			} else if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				threads, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if realUID == want {
			total += threads
		}
	}
	return total
}
