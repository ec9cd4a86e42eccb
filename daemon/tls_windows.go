package daemon

import (
	"fmt"
	"strings"

	"golang.org/x/sys/windows"
)

// checkKeyPrivate refuses a private key file whose ACL grants a group of
// every user access (Everyone, Authenticated Users, Users, Interactive,
// Guests), the ACL's counterpart of a mode with group or other bits.
func checkKeyPrivate(key string) error {
	sd, err := windows.GetNamedSecurityInfo(key, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("the ACL of the private key %s: %w", key, err)
	}
	sddl := sd.String()
	_, dacl, ok := strings.Cut(sddl, "D:")
	if !ok {
		return fmt.Errorf("the private key %s has no ACL: every user may read it", key)
	}
	for _, ace := range strings.Split(dacl, "(")[1:] {
		f := strings.Split(strings.TrimSuffix(strings.Split(ace, ")")[0], ")"), ";")
		if len(f) == 6 && f[0] == "A" {
			switch f[5] {
			case "WD", "AU", "BU", "IU", "BG":
				return fmt.Errorf("the private key may be read or written by other users (%s): icacls %s /inheritance:r /grant:r %%USERNAME%%:F", sddl, key)
			}
		}
	}
	return nil
}
