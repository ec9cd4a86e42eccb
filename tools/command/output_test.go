package command

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestCaptureWithinLimit(t *testing.T) {
	for _, tc := range []struct {
		name           string
		limit          int
		stdout, stderr string
	}{
		{"empty", 10, "", ""},
		{"stdout fills the limit", 10, "0123456789", ""},
		{"stderr fills the limit", 10, "", "0123456789"},
		{"both fill the limit", 10, "0123", "456789"},
		{"mostly stderr", 10, "0", "123456789"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCapture(tc.limit)
			c.write(0, []byte(tc.stdout))
			c.write(1, []byte(tc.stderr))
			out, errOut, truncated := c.result()
			if out != tc.stdout || errOut != tc.stderr || truncated {
				t.Errorf("result() = %q, %q, %v; want %q, %q, false", out, errOut, truncated, tc.stdout, tc.stderr)
			}
		})
	}
}

func TestCaptureOverLimit(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		limit                  int
		writes                 []string // "1:..." is stdout, "2:..." stderr
		wantStdout, wantStderr string
	}{
		{
			name:       "stdout only",
			limit:      10,
			writes:     []string{"1:abcdefghijklmnopqrstuvwxyz"},
			wantStdout: "abcde\n…[16 bytes omitted]…\nvwxyz",
		},
		{
			name:       "in small writes",
			limit:      10,
			writes:     []string{"1:abc", "1:defgh", "1:ijklmnopq", "1:rstuvwxyz"},
			wantStdout: "abcde\n…[16 bytes omitted]…\nvwxyz",
		},
		{
			name:       "head shared first come, tails split",
			limit:      10,
			writes:     []string{"1:ab", "2:ABC", "1:cdefgh", "2:DEFGHIJ"},
			wantStdout: "ab\n…[4 bytes omitted]…\ngh",
			wantStderr: "ABC\n…[4 bytes omitted]…\nHIJ",
		},
		{
			name:       "one tail needs little",
			limit:      10,
			writes:     []string{"1:abcde", "2:X", "1:fghijklmnop"},
			wantStdout: "abcde\n…[7 bytes omitted]…\nmnop",
			wantStderr: "X",
		},
		{
			name:       "rune cut at both ends",
			limit:      10,
			writes:     []string{"1:abcdé" + strings.Repeat("x", 20) + "éfghi"},
			wantStdout: "abcd\n…[24 bytes omitted]…\nfghi",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCapture(tc.limit)
			for _, w := range tc.writes {
				c.write(int(w[0]-'1'), []byte(w[2:]))
			}
			out, errOut, truncated := c.result()
			if out != tc.wantStdout || errOut != tc.wantStderr || !truncated {
				t.Errorf("result() = %q, %q, %v; want %q, %q, true", out, errOut, truncated, tc.wantStdout, tc.wantStderr)
			}
		})
	}
}

// TestCaptureRandom checks heads, tails and omitted counts against the
// whole output kept aside, over random writes.
func TestCaptureRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 500 {
		limit := 1 + rng.IntN(200)
		c := newCapture(limit)
		var all [2]bytes.Buffer
		for range rng.IntN(30) {
			i := rng.IntN(2)
			p := make([]byte, rng.IntN(3*limit))
			for j := range p {
				p[j] = 'a' + byte(rng.IntN(26))
			}
			c.write(i, p)
			all[i].Write(p)
		}
		out, errOut, truncated := c.result()
		total := all[0].Len() + all[1].Len()
		if truncated != (total > limit) {
			t.Fatalf("iter %d: truncated = %v with %d bytes over a limit of %d", iter, truncated, total, limit)
		}
		kept := 0
		for i, got := range []string{out, errOut} {
			whole := all[i].String()
			head, tail, cut := strings.Cut(got, "\n…[")
			if !cut {
				if got != whole {
					t.Fatalf("iter %d stream %d: %q, want %q", iter, i, got, whole)
				}
				kept += len(got)
				continue
			}
			var omitted int
			n, _ := fmt.Sscanf(tail, "%d bytes omitted]…\n", &omitted)
			if n != 1 {
				t.Fatalf("iter %d stream %d: bad marker in %q", iter, i, got)
			}
			tail = tail[strings.Index(tail, "]…\n")+len("]…\n"):]
			if !strings.HasPrefix(whole, head) || !strings.HasSuffix(whole, tail) || len(head)+omitted+len(tail) != len(whole) {
				t.Fatalf("iter %d stream %d: head %q + %d omitted + tail %q is not %q", iter, i, head, omitted, tail, whole)
			}
			kept += len(head) + len(tail)
		}
		if kept > limit {
			t.Fatalf("iter %d: kept %d bytes over a limit of %d", iter, kept, limit)
		}
		for i := range c.streams {
			if len(c.streams[i].tail.buf) > limit {
				t.Fatalf("iter %d: ring of %d bytes for a limit of %d", iter, len(c.streams[i].tail.buf), limit)
			}
		}
	}
}
