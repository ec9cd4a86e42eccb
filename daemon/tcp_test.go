package daemon

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestTCPAddress(t *testing.T) {
	lookup := func(addrs ...string) lookupFunc {
		return func(_ context.Context, host string) ([]netip.Addr, error) {
			if !strings.EqualFold(host, "localhost") {
				return nil, errors.New("only localhost is looked up")
			}
			var out []netip.Addr
			for _, a := range addrs {
				out = append(out, netip.MustParseAddr(a))
			}
			return out, nil
		}
	}
	loopback := lookup("::1", "127.0.0.1")
	cases := []struct {
		name       string
		flag, conf string
		insecure   bool
		lookup     lookupFunc
		want       string // the address to listen on
		err        string // a part of the error; "" for none
	}{
		{name: "no TCP"},
		{name: "127.0.0.1", flag: "127.0.0.1:7777", insecure: true, want: "127.0.0.1:7777"},
		{name: "127.0.0.2", flag: "127.0.0.2:7777", insecure: true, want: "127.0.0.2:7777"},
		{name: "[::1]", flag: "[::1]:7777", insecure: true, want: "[::1]:7777"},
		{name: "port 0", flag: "127.0.0.1:0", insecure: true, want: "127.0.0.1:0"},
		{name: "localhost", flag: "localhost:7777", insecure: true, lookup: loopback, want: "127.0.0.1:7777"},
		{name: "localhost on IPv6 only", flag: "LOCALHOST:7777", insecure: true, lookup: lookup("::1"), want: "[::1]:7777"},
		{name: "localhost not on loopback", flag: "localhost:7777", insecure: true, lookup: lookup("127.0.0.1", "192.168.1.20"),
			err: "localhost resolves to 192.168.1.20, and --insecure-tcp serves plain TCP on a loopback address only"},
		{name: "0.0.0.0", flag: "0.0.0.0:7777", insecure: true, err: "--grpc-addr 0.0.0.0:7777: 0.0.0.0 is every interface, and --insecure-tcp serves plain TCP on a loopback address only (127.0.0.0/8, ::1 or localhost): bearer tokens would cross the network in clear; leave out --insecure-tcp to serve TLS"},
		{name: "[::]", flag: "[::]:7777", insecure: true, err: ":: is every interface"},
		{name: "no host", flag: ":7777", insecure: true, err: "no host means every interface"},
		{name: "a LAN address", flag: "192.168.1.20:7777", insecure: true, err: "192.168.1.20 is not a loopback address"},
		{name: "a host name", flag: "example.com:7777", insecure: true, err: `"example.com" is a host name`},
		{name: "no port", flag: "127.0.0.1", insecure: true, err: "not host:port"},
		// Without --insecure-tcp, any address is served with TLS.
		{name: "TLS on loopback", flag: "127.0.0.1:7777", want: "127.0.0.1:7777"},
		{name: "TLS on every interface", flag: "0.0.0.0:7777", want: "0.0.0.0:7777"},
		{name: "TLS with no host", flag: ":7777", want: ":7777"},
		{name: "TLS on a host name", flag: "example.com:7777", want: "example.com:7777"},
		{name: "TLS with no port", flag: "example.com", err: "--grpc-addr example.com: not host:port"},
		{name: "TLS from config", conf: "0.0.0.0:7777", want: "0.0.0.0:7777"},
		{name: "TLS from config, no port", conf: "0.0.0.0", err: `grpc.address "0.0.0.0" in .nexus/config.yaml: not host:port`},
		{name: "config with the flag", conf: "127.0.0.1:7777", insecure: true, want: "127.0.0.1:7777"},
		{name: "config off loopback with the flag", conf: "0.0.0.0:7777", insecure: true, err: `grpc.address "0.0.0.0:7777" in .nexus/config.yaml: 0.0.0.0 is every interface`},
		{name: "the flag wins over config", flag: "127.0.0.1:1", conf: "0.0.0.0:7777", insecure: true, want: "127.0.0.1:1"},
		{name: "--insecure-tcp alone", insecure: true, err: "--insecure-tcp: there is no TCP address to serve"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lk := c.lookup
			if lk == nil {
				lk = func(context.Context, string) ([]netip.Addr, error) {
					t.Errorf("%s looked up a name", c.name)
					return nil, errors.New("no lookup")
				}
			}
			got, err := tcpAddress(context.Background(), c.flag, c.conf, c.insecure, lk)
			switch {
			case c.err == "" && (err != nil || got != c.want):
				t.Errorf("= %q, %v; want %q", got, err, c.want)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("= %q, %v; want an error containing %q", got, err, c.err)
			}
		})
	}
}

// The system's localhost, whatever this machine resolves it to, is
// accepted only on loopback.
func TestTCPAddressRealLocalhost(t *testing.T) {
	got, err := tcpAddress(context.Background(), "localhost:0", "", true, lookupHost)
	if err != nil {
		t.Skipf("localhost does not resolve to loopback only here: %v", err)
	}
	if got != "127.0.0.1:0" && got != "[::1]:0" {
		t.Errorf("localhost:0 = %q", got)
	}
}

func TestMCPHTTPAddress(t *testing.T) {
	loopback := func(_ context.Context, _ string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.1")}, nil
	}
	for _, tc := range []struct{ flag, conf, want, err string }{
		{},
		{flag: "127.0.0.1:7777", want: "127.0.0.1:7777"},
		{conf: "localhost:7777", want: "127.0.0.1:7777"},
		{flag: "0.0.0.0:7777", err: "--mcp-addr 0.0.0.0:7777: 0.0.0.0 is every interface; the MCP gateway serves HTTP on a loopback address only"},
		{conf: ":7777", err: `mcp.http.address ":7777" in .nexus/config.yaml: no host means every interface`},
		{flag: "example.com:7777", err: `"example.com" is a host name`},
	} {
		got, err := mcpHTTPAddress(context.Background(), tc.flag, tc.conf, loopback)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q/%q: error %v, want %q", tc.flag, tc.conf, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q/%q = %q, %v; want %q", tc.flag, tc.conf, got, err, tc.want)
		}
	}
}
