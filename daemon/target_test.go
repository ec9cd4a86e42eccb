package daemon

import (
	"net/url"
	"testing"
)

// TestUnixTarget: the daemon's gRPC target parses as a URL whose path is the
// socket, for a unix path and a Windows one alike.
func TestUnixTarget(t *testing.T) {
	for sock, want := range map[string]string{
		"/ws/.nexus/run/nexusd.sock":       "/ws/.nexus/run/nexusd.sock",
		`C:\ws\.nexus\run\nexusd.sock`:     `C:\ws\.nexus\run\nexusd.sock`,
		`C:\Users\me\AppData\nexus-1.sock`: `C:\Users\me\AppData\nexus-1.sock`,
	} {
		u, err := url.Parse(unixTarget(sock))
		if err != nil {
			t.Errorf("%s: %v", sock, err)
			continue
		}
		got := u.Path
		if u.Opaque != "" {
			got = u.Opaque
		}
		if u.Scheme != "unix" || got != want {
			t.Errorf("%s: target %q is scheme %q path %q", sock, unixTarget(sock), u.Scheme, got)
		}
	}
}
