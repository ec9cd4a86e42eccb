package state

import (
	"errors"
	"strings"
)

// CheckName refuses a path component (one name) that Windows would read
// as something else than the name given: a backslash (a separator
// there), a colon (a drive, or a file's stream), a trailing dot or space
// (which Win32 drops, so ".nexus." opens .nexus), and what looks like a
// short-name alias ("~" and a digit: NEXUS~1 may open .nexus). On unix
// every name is fine. Reserved device names (NUL, COM1) are refused by
// os.Root.
func CheckName(c string) error {
	switch {
	case strings.ContainsAny(c, `\:`):
		return errors.New(`a name on Windows may hold no "\" or ":"`)
	case strings.HasSuffix(c, ".") && c != "." && c != "..", strings.HasSuffix(c, " "):
		return errors.New("a name on Windows may not end in a dot or a space")
	}
	for i := 0; i+1 < len(c); i++ {
		if c[i] == '~' && c[i+1] >= '0' && c[i+1] <= '9' {
			return errors.New(`a name on Windows may hold no "~" and a digit, which may be the short name of another`)
		}
	}
	return nil
}
