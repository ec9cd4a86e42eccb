package daemon

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/nexuscocreate/nexus/workspace"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func fingerprint(c tls.Certificate) [32]byte { return sha256.Sum256(c.Leaf.Raw) }

// The generated certificate is made once, 0600 in a 0700 directory, for
// the listen address's names, and kept across starts; it is made anew when
// it nears its expiry, no longer covers the address, or does not load.
func TestGeneratedCert(t *testing.T) {
	l := newLayout(t.TempDir())
	now := time.Now()
	loopback := namesFor("127.0.0.1", "box")
	first, err := ensureGeneratedCert(l, loopback, now, discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{l.TLSCert, l.TLSKey} {
		if err := workspace.CheckPrivate(f); err != nil {
			t.Error(err)
		}
	}
	if err := workspace.CheckPrivate(l.TLS); err != nil {
		t.Error(err)
	}
	leaf := first.Leaf
	if _, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || leaf.PublicKey.(*ecdsa.PublicKey).Curve != elliptic.P256() {
		t.Errorf("key %T, want ECDSA P-256", leaf.PublicKey)
	}
	for _, name := range []string{"127.0.0.1", "::1", "localhost", "box"} {
		if err := leaf.VerifyHostname(name); err != nil {
			t.Errorf("the certificate is not for %s: %v", name, err)
		}
	}
	if got := leaf.NotAfter.Sub(now); got < certLifetime-time.Minute || got > certLifetime {
		t.Errorf("valid for %v, want %v", got, certLifetime)
	}
	// It verifies as its own root, as grpcurl -cacert cert.pem does.
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1", CurrentTime: now}); err != nil {
		t.Errorf("verify against itself: %v", err)
	}

	same := func(name string, names certNames, at time.Time, want bool) tls.Certificate {
		t.Helper()
		c, err := ensureGeneratedCert(l, names, at, discard)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := fingerprint(c) == fingerprint(first); got != want {
			t.Errorf("%s: kept the certificate = %v, want %v", name, got, want)
		}
		return c
	}
	same("a restart", loopback, now, true)
	same("a restart on another loopback address it names", namesFor("::1", "box"), now, true)
	same("a month and a half later", loopback, now.Add(45*24*time.Hour), true)
	first = same("less than 30 days before expiry", loopback, leaf.NotAfter.Add(-29*24*time.Hour), false)
	first = same("another address", namesFor("192.0.2.7", "box"), now, false)
	if err := first.Leaf.VerifyHostname("192.0.2.7"); err != nil {
		t.Errorf("the new certificate: %v", err)
	}
	first = same("every interface on a machine it does not name", namesFor("0.0.0.0", "other-box"), now, false)
	if err := first.Leaf.VerifyHostname("other-box"); err != nil {
		t.Errorf("the new certificate: %v", err)
	}
	first = same("a host name", namesFor("nexus.example", "other-box"), now, false)
	if err := first.Leaf.VerifyHostname("nexus.example"); err != nil {
		t.Errorf("the new certificate: %v", err)
	}

	// A key that does not match, or a file that does not parse, is
	// replaced.
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(other)
	if err := os.WriteFile(l.TLSKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	first = same("a key that does not match", namesFor("nexus.example", "other-box"), now, false)
	if err := os.WriteFile(l.TLSCert, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	same("a certificate that does not parse", namesFor("nexus.example", "other-box"), now, false)
}

func TestNamesFor(t *testing.T) {
	n := namesFor("0.0.0.0", "Box")
	if !slices.Equal(n.need, []string{"box"}) || !slices.Contains(n.dns, "box") || !slices.Contains(n.dns, "localhost") {
		t.Errorf("every interface: %+v", n)
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ip, _, err := net.ParseCIDR(a.String()); err == nil && ip.IsGlobalUnicast() &&
			!slices.ContainsFunc(n.ips, func(x net.IP) bool { return x.Equal(ip) }) {
			t.Errorf("every interface: %s of this machine is not named: %v", ip, n.ips)
		}
	}
	if n := namesFor("", ""); !slices.Equal(n.need, []string{"localhost"}) {
		t.Errorf("no host, no host name: need %v", n.need)
	}
	if n := namesFor("::ffff:192.0.2.1", "box"); !slices.Equal(n.need, []string{"192.0.2.1"}) {
		t.Errorf("a mapped address: need %v", n.need)
	}
}

// writePair writes a self-signed certificate and its key as PEM files in
// dir and returns their paths.
func writePair(t *testing.T, dir, name string) (cert, key string) {
	t.Helper()
	l := newLayout(t.TempDir())
	if _, err := generateCert(l, namesFor("127.0.0.1", "box"), time.Now()); err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	for _, f := range [][2]string{{l.TLSCert, cert}, {l.TLSKey, key}} {
		data, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := workspace.WriteFileAtomic(f[1], data); err != nil { // 0600, or an ACL of the user alone
			t.Fatal(err)
		}
	}
	return cert, key
}

func TestTLSSettings(t *testing.T) {
	ws := t.TempDir()
	l := newLayout(ws)
	conf := workspace.TLSConfig{Cert: "tls/a.crt", Key: "tls/a.key", ClientCA: "/etc/ca.pem"}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// An absolute path of the flags or the config is one of the current
	// drive on Windows (/c is Z:\c under wine).
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cases := []struct {
		name string
		opts Options
		conf workspace.TLSConfig
		addr string
		want tlsSources
		warn string
		err  string
	}{
		{name: "no TCP"},
		{name: "generated", addr: "0.0.0.0:1"},
		{name: "from the flags", opts: Options{TLSCert: "/c", TLSKey: "/k", TLSClientCA: "/ca"}, addr: "0.0.0.0:1",
			want: tlsSources{cert: abs("/c"), key: abs("/k"), clientCA: abs("/ca"), certFrom: "--tls-cert /c", keyFrom: "--tls-key /k", clientCAFrom: "--tls-client-ca /ca"}},
		{name: "from the config, relative to the workspace", conf: conf, addr: "0.0.0.0:1",
			want: tlsSources{cert: filepath.Join(ws, "tls/a.crt"), key: filepath.Join(ws, "tls/a.key"), clientCA: l.Resolve("/etc/ca.pem"),
				certFrom: "grpc.tls.cert in .nexus/config.yaml", keyFrom: "grpc.tls.key in .nexus/config.yaml", clientCAFrom: "grpc.tls.clientCA in .nexus/config.yaml"}},
		{name: "flags relative to the current directory", opts: Options{TLSCert: "c.pem", TLSKey: "k.pem", TLSClientCA: "ca.pem"}, addr: "0.0.0.0:1",
			want: tlsSources{cert: filepath.Join(wd, "c.pem"), key: filepath.Join(wd, "k.pem"), clientCA: filepath.Join(wd, "ca.pem"),
				certFrom: "--tls-cert c.pem", keyFrom: "--tls-key k.pem", clientCAFrom: "--tls-client-ca ca.pem"}},
		{name: "the flags win", opts: Options{TLSCert: "/c", TLSKey: "/k"}, conf: conf, addr: "0.0.0.0:1",
			want: tlsSources{cert: abs("/c"), key: abs("/k"), clientCA: l.Resolve("/etc/ca.pem"), certFrom: "--tls-cert /c", keyFrom: "--tls-key /k", clientCAFrom: "grpc.tls.clientCA in .nexus/config.yaml"}},
		{name: "a certificate without its key", opts: Options{TLSCert: "/c"}, addr: "0.0.0.0:1", err: "--tls-cert and --tls-key go together"},
		{name: "a key without its certificate", opts: Options{TLSKey: "/k"}, addr: "0.0.0.0:1", err: "--tls-cert and --tls-key go together"},
		{name: "TLS flags and --insecure-tcp", opts: Options{TLSCert: "/c", TLSKey: "/k", InsecureTCP: true}, addr: "127.0.0.1:1",
			err: "--insecure-tcp serves plain TCP, without TLS, and --tls-cert/--tls-client-ca set up TLS"},
		{name: "a client CA and --insecure-tcp", opts: Options{TLSClientCA: "/ca", InsecureTCP: true}, addr: "127.0.0.1:1", err: "give one or the other"},
		{name: "TLS flags without an address", opts: Options{TLSCert: "/c", TLSKey: "/k"}, err: "there is no TCP address to serve"},
		{name: "the config's TLS under --insecure-tcp", opts: Options{InsecureTCP: true}, conf: conf, addr: "127.0.0.1:1",
			warn: "grpc.tls in .nexus/config.yaml is not used: --insecure-tcp serves plain TCP"},
		{name: "the config's TLS without an address", conf: conf},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var warned string
			got, err := tlsSettings(c.opts, c.conf, l, c.addr, func(s string) { warned = s })
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("error %v, want %q", err, c.err)
			case c.err == "" && (err != nil || got != c.want):
				t.Errorf("= %+v, %v; want %+v", got, err, c.want)
			}
			if warned != c.warn {
				t.Errorf("warned %q, want %q", warned, c.warn)
			}
		})
	}
}

// A configured pair loads; a wrong one is an error that names the file
// and says what is wrong with it.
func TestLoadKeyPair(t *testing.T) {
	dir := t.TempDir()
	cert, key := writePair(t, dir, "a")
	cert2, key2 := writePair(t, dir, "b")
	src := func(cert, key string) tlsSources {
		return tlsSources{cert: cert, key: key, certFrom: "--tls-cert " + cert, keyFrom: "--tls-key " + key}
	}
	if _, err := loadKeyPair(src(cert, key)); err != nil {
		t.Fatalf("a good pair: %v", err)
	}
	garbage := filepath.Join(dir, "garbage.pem")
	workspace.WriteFileAtomic(garbage, []byte("not PEM"))
	badDER := filepath.Join(dir, "bad-der.pem")
	os.WriteFile(badDER, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")}), 0o600)
	open := filepath.Join(dir, "open.key")
	data, _ := os.ReadFile(key)
	os.WriteFile(open, data, 0o644)
	os.Chmod(open, 0o644)
	for _, c := range []struct {
		name      string
		cert, key string
		err       string
	}{
		{"a missing certificate", filepath.Join(dir, "none.crt"), key, "--tls-cert " + filepath.Join(dir, "none.crt") + ": open"},
		{"a certificate that is not PEM", garbage, key, "--tls-cert " + garbage + ": no PEM CERTIFICATE block in it"},
		{"a certificate that does not parse", badDER, key, "--tls-cert " + badDER + ": its certificate does not parse"},
		{"a missing key", cert, filepath.Join(dir, "none.key"), "--tls-key " + filepath.Join(dir, "none.key") + ":"},
		{"a key others may read", cert, open, "--tls-key " + open + ": the private key may be read or written by other users ("},
		{"a key that is not PEM", cert, garbage, "--tls-key " + garbage + ": failed to find any PEM data in key input"},
		{"a certificate as the key", cert, cert, "--tls-key " + cert + ": found a certificate rather than a key"},
		{"the key of another certificate", cert, key2, "--tls-key " + key2 + ": the private key does not match the certificate of --tls-cert " + cert},
		{"the certificate of another key", cert2, key, "--tls-key " + key + ": the private key does not match the certificate of --tls-cert " + cert2},
	} {
		if _, err := loadKeyPair(src(c.cert, c.key)); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
}

// openTLS serves TLS 1.3 at least, with the configured pair or the
// generated one, and requires client certificates with a client CA.
func TestOpenTLS(t *testing.T) {
	dir := t.TempDir()
	l := newLayout(t.TempDir())
	cert, key := writePair(t, dir, "server")
	door, err := openTLS(tlsSources{cert: cert, key: key}, l, "0.0.0.0:1", discard)
	if err != nil {
		t.Fatal(err)
	}
	if door.generated || door.certFile != cert || door.clientCerts || door.config.MinVersion != tls.VersionTLS13 {
		t.Errorf("configured pair: %+v", door)
	}
	if _, err := os.Stat(l.TLS); err == nil {
		t.Error("a configured certificate generated one too")
	}
	ca, _ := writePair(t, dir, "ca")
	door, err = openTLS(tlsSources{clientCA: ca, clientCAFrom: "--tls-client-ca " + ca}, l, "127.0.0.1:1", discard)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(l.TLSCert, l.TLSKey)
	if err != nil {
		t.Fatal(err)
	}
	if !door.generated || door.certFile != l.TLSCert || door.fingerprint != fingerprint(pair) ||
		!door.clientCerts || door.config.ClientAuth != tls.RequireAndVerifyClientCert || door.config.ClientCAs == nil {
		t.Errorf("generated, with a client CA: %+v", door)
	}
	if _, err := openTLS(tlsSources{clientCA: cert + ".missing", clientCAFrom: "grpc.tls.clientCA in .nexus/config.yaml"}, l, "127.0.0.1:1", discard); err == nil ||
		!strings.Contains(err.Error(), "grpc.tls.clientCA in .nexus/config.yaml: open") {
		t.Errorf("a missing client CA: %v", err)
	}
	if _, err := openTLS(tlsSources{clientCA: key, clientCAFrom: "--tls-client-ca " + key}, l, "127.0.0.1:1", discard); err == nil ||
		!strings.Contains(err.Error(), "--tls-client-ca "+key+": no PEM certificate in it") {
		t.Errorf("a key as the client CA: %v", err)
	}
}

// doorCreds serves TLS on a TCP connection as the listener gives it (a
// bare *net.TCPConn, on which gRPC sets TCP_USER_TIMEOUT as on plain TCP),
// nothing on the unix socket, and refuses any other kind of connection.
func TestDoorCreds(t *testing.T) {
	door, err := openTLS(tlsSources{}, newLayout(t.TempDir()), "127.0.0.1:1", discard)
	if err != nil {
		t.Fatal(err)
	}
	creds := &doorCreds{tls: credentials.NewTLS(door.config)}

	// accept dials lis and returns both ends: the server's as the
	// listener gives it.
	accept := func(lis net.Listener) (server, client net.Conn) {
		t.Helper()
		client, err := net.Dial(lis.Addr().Network(), lis.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		if server, err = lis.Accept(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { server.Close() })
		return server, client
	}

	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	server, client := accept(tl)
	if _, ok := server.(*net.TCPConn); !ok {
		t.Fatalf("the TCP listener gives a %T", server)
	}
	handshaken := make(chan struct{})
	go func() {
		defer close(handshaken)
		tls.Client(client, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}).Handshake()
	}()
	if _, info, err := creds.ServerHandshake(server); err != nil || info.AuthType() != "tls" {
		t.Errorf("a TCP connection: %v, %v; want TLS", info, err)
	}
	client.Close()
	<-handshaken

	ul, err := net.Listen("unix", filepath.Join(t.TempDir(), "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	server, _ = accept(ul)
	if _, info, err := creds.ServerHandshake(server); err != nil || info.AuthType() != "insecure" {
		t.Errorf("the unix socket: %v, %v; want no TLS", info, err)
	}

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, _, err := creds.ServerHandshake(a); err == nil || !strings.Contains(err.Error(), "which nexusd does not serve") {
		t.Errorf("a pipe: %v, want refused", err)
	}
}
