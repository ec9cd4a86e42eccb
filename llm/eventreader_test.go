package llm

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// An event is the bytes between two blank lines, whatever the line ends
// ("\n", "\r\n", "\r"): a stream of small events passes whole, one larger
// than the limit fails at it.
func TestEventReader(t *testing.T) {
	lim := Limits{Answer: 1, ToolCall: 1} // events of at most 2*(1+4)+eventSlack bytes
	most := lim.event()
	small := strings.Repeat("x", most/2)
	for _, eol := range []string{"\n", "\r\n", "\r"} {
		ok := strings.Repeat("data: "+small+eol+"data: x"+eol+eol, 40)
		r := limitEvents(io.NopCloser(strings.NewReader(ok)), "p", lim)
		if b, err := io.ReadAll(r); err != nil || len(b) != len(ok) {
			t.Errorf("%q: %d of %d bytes, %v", eol, len(b), len(ok), err)
		}
		// Two lines of one event, together over the limit.
		big := "data: " + small + eol + "data: " + small + eol + eol
		r = limitEvents(io.NopCloser(strings.NewReader(big)), "p", lim)
		b, err := io.ReadAll(r)
		if !errors.Is(err, ErrAnswerTooLarge) || len(b) > most+len(eol)+6 {
			t.Errorf("%q: read %d bytes, %v; want the error within %d", eol, len(b), err, most)
		}
	}
}

// The thought signatures a provider keeps are bounded in bytes as well as
// in number.
func TestSignaturesBounded(t *testing.T) {
	g := &geminiProvider{signatures: map[string]string{}}
	sig := strings.Repeat("s", 1<<20)
	for i := range 64 {
		g.keepSignature(strings.Repeat("k", i+1), sig)
	}
	n := 0
	for k, v := range g.signatures {
		n += len(k) + len(v)
	}
	if n != g.sigBytes || n > 16<<20 {
		t.Errorf("%d signatures of %d bytes (counted %d), want at most 16 MiB", len(g.signatures), n, g.sigBytes)
	}
}
