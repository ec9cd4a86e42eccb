package daemon

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// gRPC over TCP carries bearer tokens, so it is served with TLS (see
// tls.go), on any address. Plain TCP is served only on a loopback address,
// and only when the command line says --insecure-tcp: the configuration
// file is workspace content, which a tool call may have written, so it can
// name an address (grpc.address) but never allow plain TCP.

// lookupFunc resolves a host name to its addresses.
type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

func lookupHost(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// tcpAddress returns the address to serve gRPC on TCP ("" for none): the
// --grpc-addr flag, else grpc.address from the configuration, served with
// TLS, or as plain TCP with insecure (--insecure-tcp). It refuses an
// address that is not host:port, and with insecure an address that is not
// on loopback (127.0.0.0/8, ::1, or localhost when it resolves to loopback
// only) and --insecure-tcp without an address. Under insecure, localhost
// is replaced by the loopback address it resolves to, so that the name is
// resolved once.
func tcpAddress(ctx context.Context, flagAddr, configAddr string, insecure bool, lookup lookupFunc) (string, error) {
	addr, from := flagAddr, "--grpc-addr "+flagAddr
	if addr == "" {
		addr, from = configAddr, fmt.Sprintf("grpc.address %q in .nexus/config.yaml", configAddr)
	}
	switch {
	case addr == "" && insecure:
		return "", fmt.Errorf("--insecure-tcp: there is no TCP address to serve (give --grpc-addr 127.0.0.1:PORT)")
	case addr == "":
		return "", nil
	case !insecure:
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return "", fmt.Errorf("%s: not host:port: %v", from, err)
		}
		return addr, nil
	}
	notLoopback := func(what string) error {
		return fmt.Errorf("%s: %s, and --insecure-tcp serves plain TCP on a loopback address only (127.0.0.0/8, ::1 or localhost): "+
			"bearer tokens would cross the network in clear; leave out --insecure-tcp to serve TLS", from, what)
	}
	return loopbackAddress(ctx, addr, from, notLoopback, lookup)
}

// loopbackAddress checks that addr (named by from in errors) is a
// host:port on loopback: 127.0.0.0/8, ::1, or localhost when it resolves to
// loopback only, which is replaced by the address it resolves to (IPv4
// first, as net.Listen would) so that the name is resolved once. Any other
// address is notLoopback's error, which says why.
func loopbackAddress(ctx context.Context, addr, from string, notLoopback func(what string) error, lookup lookupFunc) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%s: not host:port: %v", from, err)
	}
	if host == "" {
		return "", notLoopback("no host means every interface")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Unmap().IsLoopback() {
			return addr, nil
		}
		if ip.IsUnspecified() {
			return "", notLoopback(host + " is every interface")
		}
		return "", notLoopback(host + " is not a loopback address")
	}
	if !strings.EqualFold(host, "localhost") {
		return "", notLoopback(fmt.Sprintf("%q is a host name (write 127.0.0.1, [::1] or localhost)", host))
	}
	ips, err := lookup(ctx, host)
	if err != nil {
		return "", fmt.Errorf("%s: %v", from, err)
	}
	var first netip.Addr
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return "", notLoopback(fmt.Sprintf("localhost resolves to %s", ip))
		}
		if !first.IsValid() || first.Is6() && ip.Unmap().Is4() { // IPv4 first, as net.Listen would
			first = ip.Unmap()
		}
	}
	if !first.IsValid() {
		return "", fmt.Errorf("%s: localhost resolves to no address", from)
	}
	return net.JoinHostPort(first.String(), port), nil
}
