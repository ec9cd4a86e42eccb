package bytesize

import "testing"

func TestString(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 1536: "1.5 KiB",
		2 << 20: "2 MiB", 14<<20 + 1<<19: "14.5 MiB", 1 << 30: "1 GiB", 3<<30 + 1<<29: "3.5 GiB"} {
		if got := String(n); got != want {
			t.Errorf("String(%d) = %q, want %q", n, got, want)
		}
	}
}
