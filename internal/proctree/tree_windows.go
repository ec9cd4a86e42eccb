package proctree

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// killedExitCode is the exit code of the processes Kill ends.
const killedExitCode = 1

// Tree is a started process and its descendants: on Windows, a Job Object
// that kills its processes when its last handle is closed.
type Tree struct {
	jobMu sync.Mutex
	job   windows.Handle // 0 once released
}

// Start starts cmd as the root of a new tree: suspended, assigned to a new
// Job Object, then resumed, so that every process it starts is in the job
// too. The job kills its processes when the tree is released or when this
// process dies. With opts.MaxProcesses > 0, the job holds at most that
// many processes. The other fields of cmd.SysProcAttr are kept; the root
// gets no console window of its own.
func Start(cmd *exec.Cmd, opts Options) (*Tree, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("proctree: creating a job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if opts.MaxProcesses > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
		info.BasicLimitInformation.ActiveProcessLimit = uint32(opts.MaxProcesses)
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("proctree: setting the job's limits: %w", err)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED | windows.CREATE_NO_WINDOW
	if err := cmd.Start(); err != nil {
		windows.CloseHandle(job)
		return nil, err
	}
	t := &Tree{job: job}
	if err := assignAndResume(job, uint32(cmd.Process.Pid)); err != nil {
		// Never let it run outside the job.
		cmd.Process.Kill()
		cmd.Wait()
		t.Release()
		return nil, fmt.Errorf("proctree: %w", err)
	}
	return t, nil
}

// assignAndResume puts the suspended process pid in job and resumes its
// thread. The caller holds the process (exec.Cmd keeps a handle), so pid
// cannot have been reused.
func assignAndResume(job windows.Handle, pid uint32) error {
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, pid)
	if err != nil {
		return fmt.Errorf("opening process %d: %w", pid, err)
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(job, p); err != nil {
		return fmt.Errorf("assigning process %d to its job: %w", pid, err)
	}
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("listing the threads of process %d: %w", pid, err)
	}
	defer windows.CloseHandle(snap)
	resumed := 0
	e := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	for err = windows.Thread32First(snap, &e); err == nil; err = windows.Thread32Next(snap, &e) {
		if e.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, e.ThreadID)
		if err != nil {
			return fmt.Errorf("opening thread %d of process %d: %w", e.ThreadID, pid, err)
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("resuming thread %d of process %d: %w", e.ThreadID, pid, err)
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return fmt.Errorf("listing the threads of process %d: %w", pid, err)
	}
	if resumed == 0 {
		return fmt.Errorf("process %d has no thread to resume", pid)
	}
	return nil
}

// Terminate returns ErrNoTerminate: a process without a console of its own
// cannot be sent Ctrl+Break, and Windows has no other request to end.
// Close what the tree reads (its stdin) to ask it, then Kill.
func (t *Tree) Terminate() error { return ErrNoTerminate }

// Kill ends every process of the tree now.
func (t *Tree) Kill() error {
	t.jobMu.Lock()
	defer t.jobMu.Unlock()
	if t.job == 0 {
		return nil
	}
	if err := windows.TerminateJobObject(t.job, killedExitCode); err != nil {
		return fmt.Errorf("proctree: terminating the job: %w", err)
	}
	return nil
}

// Release closes the job, which kills what is left in it.
func (t *Tree) Release() {
	t.jobMu.Lock()
	defer t.jobMu.Unlock()
	if t.job != 0 {
		windows.CloseHandle(t.job)
		t.job = 0
	}
}

// stillActive is GetExitCodeProcess's code of a process that runs.
const stillActive = 259

// Exists reports whether a process pid runs: one of another user does
// (opening it is denied, not invalid); one that has exited does not,
// even while a handle keeps its object.
func Exists(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_ACCESS_DENIED)
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) != nil || code == stillActive
}
