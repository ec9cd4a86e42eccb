package command

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Securebits (linux/securebits.h) that keep capabilities from coming back
// to the command: an exec as uid 0 grants none (noroot), no ambient
// capability can be raised, and keep-caps stays off; each is locked.
const (
	secbitNoRoot                 = 1 << 0
	secbitNoRootLocked           = 1 << 1
	secbitKeepCapsLocked         = 1 << 5
	secbitNoCapAmbientRaise      = 1 << 6
	secbitNoCapAmbientRaiseLockd = 1 << 7

	commandSecurebits = secbitNoRoot | secbitNoRootLocked | secbitKeepCapsLocked |
		secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLockd
)

// dropCapabilities leaves the calling thread, and every process it forks
// afterwards, without any capability: the securebits above, an empty
// bounding set, no ambient capabilities, and empty effective, permitted
// and inheritable sets. A daemon running as root thus runs its commands
// as a uid 0 that can do only what file permissions, Landlock and the
// mount view let any user do.
//
// A thread that lacks CAP_SETPCAP cannot empty its bounding set or set
// securebits; it is accepted only when it holds no capability and is not
// root, so that no exec can give it any (no_new_privs is set already).
// Anything else fails, and the command does not run.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[0].Effective&(1<<unix.CAP_SETPCAP) != 0 {
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, commandSecurebits, 0, 0, 0); err != nil {
			return fmt.Errorf("prctl(PR_SET_SECUREBITS): %w", err)
		}
		for c := 0; ; c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
				if errors.Is(err, unix.EINVAL) && c > unix.CAP_SETPCAP {
					break // past the kernel's last capability
				}
				return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		// EINVAL: a kernel before 4.3, which has no ambient set.
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return checkNoCapabilities()
}

// checkNoCapabilities verifies what dropCapabilities did: no capability in
// any set, and either an empty bounding set with noroot locked, or a
// thread that is not root.
func checkNoCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return fmt.Errorf("capabilities left after dropping them: %+v", data)
		}
	}
	bits, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0)
	if err != nil {
		return fmt.Errorf("prctl(PR_GET_SECUREBITS): %w", err)
	}
	if bits&commandSecurebits == commandSecurebits {
		for c := 0; ; c++ {
			in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
			if errors.Is(err, unix.EINVAL) && c > unix.CAP_SETPCAP {
				return nil
			}
			if err != nil {
				return fmt.Errorf("prctl(PR_CAPBSET_READ, %d): %w", c, err)
			}
			if in != 0 {
				return fmt.Errorf("capability %d is still in the bounding set", c)
			}
		}
	}
	if unix.Getuid() == 0 || unix.Geteuid() == 0 {
		return errors.New("running as root without CAP_SETPCAP: the capability bounding set cannot be emptied")
	}
	return nil
}
