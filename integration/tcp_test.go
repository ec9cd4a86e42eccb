package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nexusd serves plain TCP only on loopback and only with --insecure-tcp on
// its command line; otherwise it refuses to start, says why, and that TLS
// is coming.
func TestPlainTCPRefused(t *testing.T) {
	cases := []struct {
		name   string
		config string
		args   []string
		want   []string
	}{
		{"every interface", "", []string{"--grpc-addr", "0.0.0.0:0"},
			[]string{"--grpc-addr 0.0.0.0:0: gRPC over TCP needs TLS", "--tls-cert/--tls-key, coming in a later issue", "--insecure-tcp"}},
		{"every interface with --insecure-tcp", "", []string{"--grpc-addr", "0.0.0.0:0", "--insecure-tcp"},
			[]string{"0.0.0.0 is every interface", "loopback address only", "--tls-cert/--tls-key"}},
		{"loopback without --insecure-tcp", "", []string{"--grpc-addr", "127.0.0.1:0"},
			[]string{"needs TLS", "--insecure-tcp on the command line"}},
		{"an address from the config", "grpc:\n  address: 0.0.0.0:0\n", nil,
			[]string{`grpc.address "0.0.0.0:0" in .nexus/config.yaml: gRPC over TCP needs TLS`}},
		{"a loopback address from the config", "grpc:\n  address: 127.0.0.1:0\n", nil,
			[]string{`grpc.address "127.0.0.1:0" in .nexus/config.yaml: gRPC over TCP needs TLS`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := newWorkspace(t, c.config)
			_, stderr, exit := runNexusd(t, append([]string{"--workspace", ws}, c.args...)...)
			if exit != 1 {
				t.Errorf("exit code %d, want 1", exit)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(ws, ".nexus", "run", "daemon.json")); err == nil {
				t.Error("daemon.json written by a daemon that refused to start")
			}
		})
	}
}
