package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// platform is the Linux state of a Runner: the helper, and whether
// namespaces can be made.
type platform struct {
	helperPath string
	helperErr  error
	// kernelABI returns the kernel's Landlock ABI; tests replace it.
	kernelABI func() (int, error)

	nsMu sync.Mutex
	// noNamespaces is set once creating namespaces failed for lack of
	// permission or support (or by tests): from then on only the
	// process group is killed.
	noNamespaces bool
}

func (p *platform) init(opts RunnerOptions) {
	p.helperPath, p.kernelABI = opts.HelperPath, kernelABI
	if p.helperPath == "" {
		p.helperPath, p.helperErr = os.Executable()
	}
}

// run runs the command through the helper (HelperMain).
func (r *Runner) run(ctx context.Context, spec Spec) (Result, error) {
	if r.helperErr != nil {
		return Result{}, fmt.Errorf("command: finding the helper executable: %w", r.helperErr)
	}
	var abi int
	if spec.Mode != Off {
		kernel, kerr := r.kernelABI()
		var err error
		if abi, err = sandboxABI(spec.Mode, spec.Network, kernel, kerr); err != nil {
			return Result{}, err
		}
	}
	if spec.Mode == WorkspaceWrite {
		if fi, err := os.Stat(spec.Workspace); err != nil {
			return Result{}, fmt.Errorf("command: workspace: %w", err)
		} else if !fi.IsDir() {
			return Result{}, fmt.Errorf("command: workspace %s is not a directory", spec.Workspace)
		}
	}
	hs := &helperSpec{
		Argv:      spec.argv(),
		Env:       spec.Env,
		Mode:      spec.Mode,
		Workspace: spec.Workspace,
		TempDir:   os.TempDir(),
		Network:   spec.Network,
		MaxProcs:  spec.maxProcs(),
		ABI:       abi,
	}
	if v := spec.view(); v != nil {
		// The temporary directories are the command's own tmpfs.
		hs.View, hs.Dir, hs.TempDir = v, spec.Dir, "/tmp"
		hs.Writable = v.writablePaths(spec.Workspace)
	}
	if hs.Env == nil {
		hs.Env = []string{}
	}

	start := time.Now()
	p, err := r.start(&spec)
	if err != nil {
		return Result{}, err
	}
	out := newCapture(spec.OutputLimit)
	var readers sync.WaitGroup
	readers.Go(func() { drain(p.stdout, func(b []byte) { out.write(0, b) }) })
	readers.Go(func() { drain(p.stderr, func(b []byte) { out.write(1, b) }) })
	// The status pipe ends when the helper has reported how the command
	// ended, or has died.
	var statusBytes []byte
	reported := make(chan struct{})
	go func() {
		statusBytes, _ = io.ReadAll(io.LimitReader(p.status, maxStatusBytes))
		close(reported)
	}()

	var timedOut, cancelled bool
	if err := p.send(hs, start.Add(spec.Timeout)); err != nil {
		// The helper died before reading the command; it says why on
		// the status pipe.
		r.logger.Debug("command: sending the command to the helper", "err", err)
	}
	timer := time.NewTimer(spec.Timeout - time.Since(start))
	select {
	case <-reported:
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		cancelled = true
	}
	timer.Stop()
	// Kill what is left: after a report only processes the command left
	// behind (the helper would end them by exiting, but need not be
	// waited for); else the whole tree.
	p.kill()
	p.waitExited()
	// The helper has exited but is not reaped yet, so its process group
	// ID cannot have been reused: end whatever is left in the group.
	p.killGroup()
	waitErr := p.cmd.Wait()
	dur := time.Since(start)

	deadline := time.Now().Add(outputGrace)
	p.stdout.SetReadDeadline(deadline)
	p.stderr.SetReadDeadline(deadline)
	p.status.SetReadDeadline(deadline)
	readers.Wait()
	<-reported
	p.close()

	// The last status the helper wrote.
	var st helperStatus
	started := false
	for dec := json.NewDecoder(bytes.NewReader(statusBytes)); ; {
		var next helperStatus
		if err := dec.Decode(&next); err != nil {
			if err != io.EOF {
				r.logger.Warn("command: bad status from the sandbox helper", "err", err)
			}
			break
		}
		st, started = next, true
	}
	for _, w := range st.Warnings {
		r.logger.Warn("command: " + w)
	}
	switch st.State {
	case stateSandbox:
		return Result{}, fmt.Errorf("%w: %s", ErrSandboxUnavailable, st.Message)
	case stateFailed:
		return Result{}, fmt.Errorf("command: sandbox helper: %s", st.Message)
	}

	if st.State == stateExited {
		// The command exited on its own, however close to the deadline.
		timedOut, cancelled = false, false
	}
	res := Result{TimedOut: timedOut, Cancelled: cancelled, Duration: dur}
	res.Stdout, res.Stderr, res.Truncated = out.result()
	switch st.State {
	case stateExited:
		res.ExitCode = st.Code
	case stateSignaled:
		res.ExitCode = -1
		res.Signal = syscall.Signal(st.Code).String()
	default:
		// The helper ended without a final word: killed, by us on
		// timeout or cancel or by someone else, or dead (a Go runtime
		// that cannot start a thread among a fork bomb's processes), or
		// it is not a helper at all.
		ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case !ok:
			return Result{}, fmt.Errorf("command: sandbox helper: %v", waitErr)
		case !started:
			return Result{}, fmt.Errorf("command: the sandbox helper %s ended (%v) without reading the command (does its main call HelperMain?); stderr: %.200q",
				r.helperPath, p.cmd.ProcessState, res.Stderr)
		case ws.Signaled():
			res.ExitCode = -1
			res.Signal = ws.Signal().String()
		default:
			r.logger.Warn("command: the sandbox helper died", "status", p.cmd.ProcessState.String())
			res.ExitCode = ws.ExitStatus()
		}
	}
	return res, nil
}

// proc is a started helper and the daemon's ends of its pipes.
type proc struct {
	cmd            *exec.Cmd
	spec           *os.File // write end
	status         *os.File // read end
	stdout, stderr *os.File // read ends
}

// start starts the helper for spec, in new PID (and, for a sandboxed
// command without network, network) namespaces when it can.
func (r *Runner) start(spec *Spec) (*proc, error) {
	if spec.view() != nil {
		// A view needs its namespaces: without them the command would see
		// what the view hides. Fail closed.
		flags := uintptr(unix.CLONE_NEWPID | unix.CLONE_NEWNS)
		if !spec.Network {
			flags |= unix.CLONE_NEWNET
		}
		p, err := r.startHelper(spec, flags)
		if err != nil && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS)) {
			return nil, fmt.Errorf("%w: mode %s needs mount and PID namespaces to hide the daemon's state from the command, and the kernel refused them: %v",
				ErrSandboxUnavailable, spec.Mode, err)
		}
		return p, err
	}
	r.nsMu.Lock()
	useNS := !r.noNamespaces
	r.nsMu.Unlock()
	if !useNS {
		return r.startHelper(spec, 0)
	}
	flags := uintptr(unix.CLONE_NEWPID)
	if spec.Mode != Off && !spec.Network {
		flags |= unix.CLONE_NEWNET
	}
	p, err := r.startHelper(spec, flags)
	if err == nil || !(errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS)) {
		return p, err
	}
	p, err2 := r.startHelper(spec, 0)
	if err2 != nil {
		return nil, err
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS) {
		// Out of namespaces for now; try again next time.
		r.logger.Warn("command: cannot create a PID namespace, killing by process group only", "err", err)
		return p, nil
	}
	r.nsMu.Lock()
	if !r.noNamespaces {
		r.noNamespaces = true
		r.logger.Warn("command: PID namespaces unavailable, killing commands by process group only (setsid children can escape)", "err", err)
	}
	r.nsMu.Unlock()
	return p, nil
}

func (r *Runner) startHelper(spec *Spec, cloneflags uintptr) (*proc, error) {
	var parent, child []*os.File // [spec, status, stdout, stderr]
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	for i := range 4 {
		pr, pw, err := os.Pipe()
		if err != nil {
			closeAll(parent)
			closeAll(child)
			return nil, fmt.Errorf("command: %w", err)
		}
		if i == 0 { // the helper reads the spec
			parent, child = append(parent, pw), append(child, pr)
		} else {
			parent, child = append(parent, pr), append(child, pw)
		}
	}
	cmd := &exec.Cmd{
		Path:       r.helperPath,
		Args:       []string{r.helperPath, HelperArg},
		Env:        []string{}, // not the daemon's, not the command's
		Dir:        spec.Dir,
		Stdout:     child[2],
		Stderr:     child[3],
		ExtraFiles: []*os.File{child[0], child[1]}, // specFD, statusFD
		SysProcAttr: &syscall.SysProcAttr{
			// A new session: a process group of its own to kill, and no
			// controlling terminal.
			Setsid:     true,
			Pdeathsig:  syscall.SIGKILL,
			Cloneflags: cloneflags,
		},
	}
	if cloneflags&unix.CLONE_NEWNS != 0 && os.Geteuid() != 0 {
		// Without root, a user namespace is what lets the helper make its
		// mounts. The user is root in it (uid 0 mapped to the user's own):
		// a process that is not keeps no capability across the helper's
		// exec. Outside, the command is still only the user; Landlock and
		// no_new_privs apply as always.
		cmd.SysProcAttr.Cloneflags |= unix.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	if spec.Stdin != nil {
		// The helper's standard input is the command's.
		stdin, err := feed(spec.Stdin, time.Now().Add(spec.Timeout+outputGrace))
		if err != nil {
			closeAll(parent)
			closeAll(child)
			return nil, err
		}
		cmd.Stdin = stdin
		child = append(child, stdin)
	}
	err := cmd.Start()
	closeAll(child)
	if err != nil {
		closeAll(parent)
		return nil, fmt.Errorf("command: starting the sandbox helper: %w", err)
	}
	return &proc{cmd: cmd, spec: parent[0], status: parent[1], stdout: parent[2], stderr: parent[3]}, nil
}

// send writes the helper's spec and closes the pipe.
func (p *proc) send(hs *helperSpec, deadline time.Time) error {
	defer p.spec.Close()
	b, err := json.Marshal(hs)
	if err != nil {
		return err
	}
	p.spec.SetWriteDeadline(deadline)
	_, err = p.spec.Write(b)
	return err
}

// waitExited returns once the helper has exited, without reaping it.
func (p *proc) waitExited() {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// kill kills the helper and its process group. In a PID namespace,
// killing the helper (its init) kills every process in it.
func (p *proc) kill() {
	p.killGroup()
	p.cmd.Process.Kill()
}

func (p *proc) killGroup() {
	unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
}

func (p *proc) close() {
	p.status.Close()
	p.stdout.Close()
	p.stderr.Close()
}
