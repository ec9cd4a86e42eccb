// Package bytesize prints byte counts for people.
package bytesize

import "fmt"

// String prints n in the largest binary unit it reaches: "2 MiB" for an
// exact multiple, "1.5 MiB" otherwise, "512 bytes" below a KiB.
func String(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		switch {
		case n >= u.size && n%u.size == 0:
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		case n >= u.size:
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
