package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Windows has no mode bits: a private directory or file is one whose
// owner is this user and whose DACL is protected (nothing inherited from
// above) and grants this user alone full control. A directory's grant is
// inherited by what is made in it, so the files of a private directory
// are private too.

// userSID is the string form of the SID of the user this process runs as.
func userSID() (string, error) {
	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("the user of this process: %w", err)
	}
	return tu.User.Sid.String(), nil
}

// privateAttributes is a security descriptor owned by this user whose
// DACL grants this user alone (and, with inherit, what is made below).
func privateAttributes(inherit bool) (*windows.SecurityAttributes, error) {
	sid, err := userSID()
	if err != nil {
		return nil, err
	}
	flags := ""
	if inherit {
		flags = "OICI"
	}
	sd, err := windows.SecurityDescriptorFromString("O:" + sid + "D:P(A;" + flags + ";FA;;;" + sid + ")")
	if err != nil {
		return nil, err
	}
	sa := &windows.SecurityAttributes{SecurityDescriptor: sd}
	sa.Length = uint32(unsafe.Sizeof(*sa))
	return sa, nil
}

// MakePrivateDir makes dir, and the missing directories above it, and
// leaves it usable by this user alone: a protected ACL granting this user
// full control, inherited by what is made in it (mode 0700 on unix). An
// existing dir gets that ACL.
func MakePrivateDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	sa, err := privateAttributes(true)
	if err != nil {
		return err
	}
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return err
	}
	err = windows.CreateDirectory(p, sa)
	if err == nil {
		return nil
	}
	if !errors.Is(err, windows.ERROR_ALREADY_EXISTS) {
		return &os.PathError{Op: "mkdir", Path: dir, Err: err}
	}
	if fi, err := os.Lstat(dir); err != nil {
		return err
	} else if !fi.IsDir() || fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
		return fmt.Errorf("%s must be a directory (not a link or junction)", dir)
	}
	dacl, _, err := sa.SecurityDescriptor.DACL()
	if err != nil {
		return err
	}
	if err := windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		return fmt.Errorf("make %s private to this user: %w", dir, err)
	}
	return nil
}

// makeNexusDir makes .nexus private: a directory under C:\ inherits a
// grant to every authenticated user, and what .nexus holds (the audit log,
// the sign-ins of MCP servers, the agent's sessions) relies on its
// directories being private, which are made so by inheritance.
func makeNexusDir(dir string) error { return MakePrivateDir(dir) }

// CheckPrivateDir refuses a dir that is not a directory owned by this user
// (on unix: of this user with mode 0700), or is a link or junction.
func CheckPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() || fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
		return fmt.Errorf("%s must be a directory of this user (not a link or junction)", dir)
	}
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("owner of %s: %w", dir, err)
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return fmt.Errorf("owner of %s: %w", dir, err)
	}
	me, err := userSID()
	if err != nil {
		return err
	}
	if owner == nil || owner.String() != me {
		return fmt.Errorf("%s must be a directory owned by this user (%s), not %v", dir, me, owner)
	}
	return nil
}

// CheckPrivate refuses a path that is not a file or directory owned by
// this user whose ACL grants this user alone (and LocalSystem, the system
// itself, which no ACL keeps out), or is a link or junction (on unix: mode
// 0600, 0700 for a directory). An ACE inherited from above is one more
// grant, so a DACL that passes needs no protected flag to be private now.
func CheckPrivate(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
		return fmt.Errorf("%s must be a file or directory of this user, not a link or junction", path)
	}
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("security of %s: %w", path, err)
	}
	me, err := userSID()
	if err != nil {
		return err
	}
	sddl := sd.String()
	owner, _, err := sd.Owner()
	if err != nil || owner == nil || owner.String() != me {
		return fmt.Errorf("%s must be owned by this user (%s): %s", path, me, sddl)
	}
	_, dacl, ok := strings.Cut(sddl, "D:")
	if !ok {
		return fmt.Errorf("%s has no ACL: everyone may use it", path)
	}
	dacl, _, _ = strings.Cut(dacl, "S:") // the audit ACL, if shown
	for _, ace := range strings.Split(dacl, "(")[1:] {
		// type;flags;rights;object;inherited object;SID
		f := strings.Split(strings.TrimSuffix(ace, ")"), ";")
		if len(f) != 6 || f[0] != "D" && f[5] != me && f[5] != "SY" {
			return fmt.Errorf("%s must grant this user alone: %s", path, sddl)
		}
	}
	return nil
}

// createPrivateTemp creates a new file in dir, named pattern with its
// "*" replaced, made with an ACL granting this user alone: no moment
// exists when another user could open it.
func createPrivateTemp(dir, pattern string) (*os.File, error) {
	sa, err := privateAttributes(false)
	if err != nil {
		return nil, err
	}
	prefix, suffix, _ := strings.Cut(pattern, "*")
	for range 100 {
		var b [8]byte
		rand.Read(b[:])
		name := filepath.Join(dir, prefix+hex.EncodeToString(b[:])+suffix)
		p, err := windows.UTF16PtrFromString(name)
		if err != nil {
			return nil, err
		}
		h, err := windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE, 0, sa,
			windows.CREATE_NEW, windows.FILE_ATTRIBUTE_NORMAL, 0)
		if errors.Is(err, windows.ERROR_FILE_EXISTS) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "create", Path: name, Err: err}
		}
		return os.NewFile(uintptr(h), name), nil
	}
	return nil, &os.PathError{Op: "create", Path: filepath.Join(dir, pattern), Err: fs.ErrExist}
}
