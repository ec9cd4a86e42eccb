package daemon

import (
	"crypto/sha256"
	"encoding/hex"

	"golang.org/x/sys/windows"
)

// userName names this user in the shared socket directory: a hash of the
// user's SID (Windows has no uid; the SID is too long for a socket path).
func userName() string {
	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "unknown"
	}
	sum := sha256.Sum256([]byte(tu.User.Sid.String()))
	return hex.EncodeToString(sum[:6])
}

// restrictSocket leaves the socket as it is: Windows has no mode bits, and
// the socket file inherits the ACL of its private directory (.nexus/run,
// or the socket directory, both made by workspace.MakePrivateDir), which
// grants this user alone. Connecting to it needs write access to it.
func restrictSocket(string) error { return nil }
