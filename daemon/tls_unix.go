//go:build unix

package daemon

import (
	"fmt"
	"os"
)

// checkKeyPrivate refuses a private key file that other users may read or
// write.
func checkKeyPrivate(key string) error {
	fi, err := os.Stat(key)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("the private key may be read or written by other users (mode %04o): chmod 600 %s", perm, key)
	}
	return nil
}
