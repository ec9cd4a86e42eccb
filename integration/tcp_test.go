package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// appToken is an app's token as per-RPC credentials: what a client over TLS
// sends with every call (the Go client of docs/beyond-one-machine.md).
type appToken string

func (b appToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (appToken) RequireTransportSecurity() bool { return true }

// pinned is a TLS client configuration that accepts the one certificate
// whose SHA-256 fingerprint is fp (as daemon.json writes it), whatever
// names it has (the Go client of docs/beyond-one-machine.md).
func pinned(fp string) *tls.Config {
	return &tls.Config{
		InsecureSkipVerify: true, // the pin below is the check
		VerifyPeerCertificate: func(rawCerts [][]byte, _ [][]*x509.Certificate) error {
			if len(rawCerts) == 0 {
				return fmt.Errorf("the server sent no certificate")
			}
			if got := fingerprintOf(rawCerts[0]); got != fp {
				return fmt.Errorf("the server's certificate is %s, not the pinned %s", got, fp)
			}
			return nil
		},
	}
}

// fingerprintOf is the SHA-256 fingerprint of a certificate's DER as
// daemon.json writes it: upper-case hex bytes joined by colons.
func fingerprintOf(der []byte) string {
	sum := sha256.Sum256(der)
	return strings.ReplaceAll(strings.ToUpper(fmt.Sprintf("% x", sum[:])), " ", ":")
}

// dialTCP connects to addr with transport credentials and, when token is
// set, a bearer token on every call.
func dialTCP(t *testing.T, addr string, creds credentials.TransportCredentials, token string) *grpc.ClientConn {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(appToken(token)))
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// guard bounds a call that should fail at once, so that a hung daemon
// fails the test rather than hanging it.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// nexusd refuses plain TCP off loopback, and TLS settings that do not go
// together, says why, and writes no daemon.json.
func TestTCPRefused(t *testing.T) {
	pems := t.TempDir()
	certA, keyA := writeCert(t, pems, "a", nil, nil)
	_, keyB := writeCert(t, pems, "b", nil, nil)
	notPEM := filepath.Join(pems, "not.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	cases := []struct {
		name   string
		config string
		args   []string
		want   []string
	}{
		{"every interface with --insecure-tcp", "", []string{"--grpc-addr", "0.0.0.0:0", "--insecure-tcp"},
			[]string{"--grpc-addr 0.0.0.0:0: 0.0.0.0 is every interface", "--insecure-tcp serves plain TCP on a loopback address only", "leave out --insecure-tcp to serve TLS"}},
		{"a LAN address with --insecure-tcp", "", []string{"--grpc-addr", "192.0.2.1:0", "--insecure-tcp"},
			[]string{"192.0.2.1 is not a loopback address"}},
		{"every interface from the config with --insecure-tcp", "grpc:\n  address: 0.0.0.0:0\n", []string{"--insecure-tcp"},
			[]string{`grpc.address "0.0.0.0:0" in .nexus/config.yaml: 0.0.0.0 is every interface`}},
		{"--insecure-tcp with --tls-cert", "", []string{"--grpc-addr", "127.0.0.1:0", "--insecure-tcp", "--tls-cert", certA, "--tls-key", keyA},
			[]string{"--insecure-tcp serves plain TCP, without TLS, and --tls-cert/--tls-client-ca set up TLS"}},
		{"--tls-cert without --tls-key", "", []string{"--grpc-addr", "127.0.0.1:0", "--tls-cert", certA},
			[]string{"--tls-cert and --tls-key go together"}},
		{"--tls-cert without an address", "", []string{"--tls-cert", certA, "--tls-key", keyA},
			[]string{"there is no TCP address to serve"}},
		{"a key of another certificate", "", []string{"--grpc-addr", "127.0.0.1:0", "--tls-cert", certA, "--tls-key", keyB},
			[]string{"--tls-key " + keyB + ": the private key does not match the certificate of --tls-cert " + certA}},
		{"a certificate that is not PEM", "", []string{"--grpc-addr", "127.0.0.1:0", "--tls-cert", notPEM, "--tls-key", keyA},
			[]string{"--tls-cert " + notPEM + ": no PEM CERTIFICATE block in it"}},
		{"a missing certificate from the config", "grpc:\n  address: 127.0.0.1:0\n  tls: {cert: tls/none.crt, key: tls/none.key}\n", nil,
			[]string{"grpc.tls.cert in .nexus/config.yaml: open ", "tls/none.crt: no such file"}},
		{"a client CA that is not PEM", "", []string{"--grpc-addr", "127.0.0.1:0", "--tls-client-ca", notPEM},
			[]string{"--tls-client-ca " + notPEM + ": no PEM certificate in it"}},
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

// --grpc-addr without a certificate serves TLS with a generated one, whose
// fingerprint daemon.json and the log give; a client that pins it, with an
// app's token, is that app; plain TCP, another pin and TLS 1.2 fail; the
// certificate is the same after a restart.
func TestTLSGeneratedCertificate(t *testing.T) {
	ws := newWorkspace(t, twoApps)
	d := startDaemon(t, ws, "--grpc-addr", "127.0.0.1:0")
	info := d.info
	if !strings.HasPrefix(info.GRPCTCPAddress, "127.0.0.1:") || info.TLSCertFile != filepath.Join(ws, ".nexus", "tls", "cert.pem") || len(info.TLSFingerprint) != 95 {
		t.Fatalf("daemon.json: %+v", info)
	}
	for _, f := range []string{"cert.pem", "key.pem"} {
		if fi, err := os.Stat(filepath.Join(ws, ".nexus", "tls", f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, fi, err)
		}
	}

	planner := d.appToken("planner")
	cf := nexusv1.NewCoreFrameworkClient(dialTCP(t, info.GRPCTCPAddress, credentials.NewTLS(pinned(info.TLSFingerprint)), planner))
	if _, err := cf.SetRuntimeValue(guard(t), &nexusv1.SetRuntimeValueRequest{AppId: "planner", Key: "k", Value: "over TLS"}); err != nil {
		t.Fatal(err)
	}
	got, err := d.framework().GetRuntimeValue(as(d.admin), &nexusv1.GetRuntimeValueRequest{Namespace: "planner", Key: "k"})
	if err != nil || got.Value != "over TLS" {
		t.Errorf("the value written over TLS: %v, %v", got, err)
	}
	if _, err := cf.GetRuntimeValue(guard(t), &nexusv1.GetRuntimeValueRequest{AppId: "planner", Namespace: "coder", Key: "k"}); code(err) != codes.PermissionDenied {
		t.Errorf("the planner's token over TLS reads the coder's namespace: %v", err)
	}
	noToken := nexusv1.NewCoreFrameworkClient(dialTCP(t, info.GRPCTCPAddress, credentials.NewTLS(pinned(info.TLSFingerprint)), ""))
	if _, err := noToken.GetRuntimeValue(guard(t), &nexusv1.GetRuntimeValueRequest{AppId: "planner", Key: "k"}); code(err) != codes.Unauthenticated {
		t.Errorf("no token over TLS: %v", err)
	}

	// The certificate file verifies as a root (grpcurl -cacert), for the
	// loopback address and localhost.
	for _, name := range []string{"", "localhost"} {
		creds, err := credentials.NewClientTLSFromFile(info.TLSCertFile, name)
		if err != nil {
			t.Fatal(err)
		}
		h := healthpb.NewHealthClient(dialTCP(t, info.GRPCTCPAddress, creds, ""))
		if _, err := h.Check(guard(t), &healthpb.HealthCheckRequest{}); err != nil {
			t.Errorf("the certificate file as the root, server name %q: %v", name, err)
		}
	}

	// What must fail.
	wrong := strings.Replace(info.TLSFingerprint, info.TLSFingerprint[:2], "00", 1)
	if wrong == info.TLSFingerprint {
		wrong = "11" + info.TLSFingerprint[2:]
	}
	tls12 := pinned(info.TLSFingerprint)
	tls12.MaxVersion = tls.VersionTLS12
	for _, c := range []struct {
		name  string
		creds credentials.TransportCredentials
		want  string
	}{
		{"plain TCP", insecure.NewCredentials(), ""},
		{"another pin", credentials.NewTLS(pinned(wrong)), "not the pinned " + wrong},
		{"TLS 1.2", credentials.NewTLS(tls12), "protocol version"},
		{"the system's roots", credentials.NewTLS(&tls.Config{}), "certificate signed by unknown authority"},
	} {
		h := healthpb.NewHealthClient(dialTCP(t, info.GRPCTCPAddress, c.creds, ""))
		_, err := h.Check(guard(t), &healthpb.HealthCheckRequest{})
		if code(err) != codes.Unavailable || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%s: %v, want Unavailable %q", c.name, err, c.want)
		}
	}

	// A restart keeps the certificate, so the pin holds.
	d.stop()
	if !strings.Contains(d.stderr.String(), "sha256="+info.TLSFingerprint) {
		t.Errorf("the log does not give the fingerprint:\n%s", d.stderr)
	}
	d = startDaemon(t, ws, "--grpc-addr", "127.0.0.1:0")
	if again := d.info; again.TLSFingerprint != info.TLSFingerprint {
		t.Errorf("after a restart the fingerprint is %s, was %s", again.TLSFingerprint, info.TLSFingerprint)
	}
}

// Every interface is served with TLS, and the certificate names the
// loopback addresses, so a local client verifies it with the file.
func TestTLSEveryInterface(t *testing.T) {
	ws := newWorkspace(t, twoApps)
	d := startDaemon(t, ws, "--grpc-addr", "0.0.0.0:0")
	info := d.info
	_, port, err := net.SplitHostPort(info.GRPCTCPAddress)
	if err != nil || info.TLSFingerprint == "" {
		t.Fatalf("daemon.json: %+v %v", info, err)
	}
	creds, err := credentials.NewClientTLSFromFile(info.TLSCertFile, "")
	if err != nil {
		t.Fatal(err)
	}
	cf := nexusv1.NewCoreFrameworkClient(dialTCP(t, net.JoinHostPort("127.0.0.1", port), creds, d.appToken("coder")))
	if _, err := cf.SetRuntimeValue(guard(t), &nexusv1.SetRuntimeValueRequest{AppId: "coder", Key: "k", Value: "v"}); err != nil {
		t.Error(err)
	}
	plain := healthpb.NewHealthClient(dialTCP(t, net.JoinHostPort("127.0.0.1", port), insecure.NewCredentials(), ""))
	if _, err := plain.Check(guard(t), &healthpb.HealthCheckRequest{}); code(err) != codes.Unavailable {
		t.Errorf("plain TCP on every interface: %v", err)
	}
}

// --tls-cert/--tls-key serve the given certificate, whose fingerprint
// daemon.json gives, and the log, and stderr when the log is in a file;
// none is generated.
func TestTLSConfiguredCertificate(t *testing.T) {
	cert, key := writeCert(t, t.TempDir(), "server", nil, nil)
	ws := newWorkspace(t, twoApps)
	logFile := filepath.Join(t.TempDir(), "nexusd.log")
	d := startDaemon(t, ws, "--grpc-addr", "localhost:0", "--tls-cert", cert, "--tls-key", key, "--log-file", logFile)
	info := d.info
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	if want := fingerprintOf(pair.Certificate[0]); info.TLSFingerprint != want || info.TLSCertFile != cert {
		t.Errorf("daemon.json: %+v; want the fingerprint %s of %s", info, want, cert)
	}
	if _, err := os.Stat(filepath.Join(ws, ".nexus", "tls")); err == nil {
		t.Error("a certificate was generated besides the configured one")
	}
	creds, err := credentials.NewClientTLSFromFile(cert, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	cf := nexusv1.NewCoreFrameworkClient(dialTCP(t, info.GRPCTCPAddress, creds, d.appToken("planner")))
	if _, err := cf.GetRuntimeValue(guard(t), &nexusv1.GetRuntimeValueRequest{AppId: "planner", Key: "k"}); err != nil {
		t.Error(err)
	}
	d.stop()
	if want := "with the configured certificate (" + cert + "), SHA-256 fingerprint " + info.TLSFingerprint; !strings.Contains(d.stderr.String(), want) {
		t.Errorf("stderr does not say %q:\n%s", want, d.stderr)
	}
	if log, err := os.ReadFile(logFile); err != nil || !strings.Contains(string(log), "sha256="+info.TLSFingerprint) {
		t.Errorf("the log does not give the fingerprint: %v\n%s", err, log)
	}
}

// With a client CA, a client must present a certificate it signed; the
// certificate of apps[].certificate is that app, whose grants apply; its
// token may come too, another app's may not; a certificate of no app needs
// a token.
func TestTLSClientCertificates(t *testing.T) {
	pems := t.TempDir()
	ca, caKey := newCA(t, "nexus test CA")
	caFile := filepath.Join(pems, "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}), 0o600)
	plannerCert, plannerKey := writeCert(t, pems, "planner", ca, caKey)
	strangerCert, strangerKey := writeCert(t, pems, "stranger", ca, caKey)
	otherCA, otherCAKey := newCA(t, "another CA")
	outsiderCert, outsiderKey := writeCert(t, pems, "outsider", otherCA, otherCAKey)

	pair, err := tls.LoadX509KeyPair(plannerCert, plannerKey)
	if err != nil {
		t.Fatal(err)
	}
	fp := sha256.Sum256(pair.Certificate[0])
	ws := newWorkspace(t, fmt.Sprintf(`
grpc:
  address: 127.0.0.1:0
  tls:
    clientCA: %s
apps:
  - id: planner
    certificate: %x
  - id: coder
`, caFile, fp))
	d := startDaemon(t, ws)
	info := d.info

	client := func(cert, key, token string) nexusv1.CoreFrameworkClient {
		cfg := pinned(info.TLSFingerprint)
		if cert != "" {
			pair, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		return nexusv1.NewCoreFrameworkClient(dialTCP(t, info.GRPCTCPAddress, credentials.NewTLS(cfg), token))
	}
	set := func(c nexusv1.CoreFrameworkClient, ns string) error {
		_, err := c.SetRuntimeValue(guard(t), &nexusv1.SetRuntimeValueRequest{Namespace: ns, Key: "k", Value: "by certificate"})
		return err
	}

	planner := client(plannerCert, plannerKey, "")
	if err := set(planner, "planner"); err != nil {
		t.Fatalf("the planner's certificate alone: %v", err)
	}
	if got, err := d.framework().GetRuntimeValue(as(d.admin), &nexusv1.GetRuntimeValueRequest{Namespace: "planner", Key: "k"}); err != nil || got.Value != "by certificate" {
		t.Errorf("the planner's value: %v %v", got, err)
	}
	if err := set(planner, "coder"); code(err) != codes.PermissionDenied {
		t.Errorf("the planner's certificate writes the coder's namespace: %v", err)
	}
	if _, err := planner.GetRuntimeValue(guard(t), &nexusv1.GetRuntimeValueRequest{AppId: "coder", Key: "k"}); code(err) != codes.PermissionDenied ||
		!strings.Contains(err.Error(), `the client certificate belongs to app "planner", the request names app "coder"`) {
		t.Errorf("the planner's certificate acting for the coder: %v", err)
	}
	if err := set(client(plannerCert, plannerKey, d.appToken("planner")), "planner"); err != nil {
		t.Errorf("the planner's certificate and token: %v", err)
	}
	if err := set(client(plannerCert, plannerKey, d.appToken("coder")), "coder"); code(err) != codes.Unauthenticated ||
		!strings.Contains(err.Error(), `the client certificate is app "planner"'s and the request carries the token of app "coder"`) {
		t.Errorf("the planner's certificate with the coder's token: %v", err)
	}
	if err := set(client(plannerCert, plannerKey, d.admin), "coder"); code(err) != codes.Unauthenticated {
		t.Errorf("the planner's certificate with the admin token: %v", err)
	}
	if err := set(client(strangerCert, strangerKey, ""), "coder"); code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "is no app's") {
		t.Errorf("a certificate of no app, alone: %v", err)
	}
	if err := set(client(strangerCert, strangerKey, d.appToken("coder")), "coder"); err != nil {
		t.Errorf("a certificate of no app with the coder's token: %v", err)
	}
	if err := set(client("", "", d.appToken("coder")), "coder"); code(err) != codes.Unavailable {
		t.Errorf("no client certificate: %v", err)
	}
	if err := set(client(outsiderCert, outsiderKey, d.appToken("coder")), "coder"); code(err) != codes.Unavailable {
		t.Errorf("a certificate of another CA: %v", err)
	}
	// The unix socket needs no certificate.
	if _, err := d.framework().GetRuntimeValue(as(d.appToken("coder")), &nexusv1.GetRuntimeValueRequest{AppId: "coder", Key: "k"}); err != nil {
		t.Errorf("the unix socket: %v", err)
	}
}

// newCA makes a CA certificate and its key.
func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

// writeCert writes a certificate for name (a client and server
// certificate for localhost and 127.0.0.1) and its key into dir, signed by
// ca, or self-signed when ca is nil, and returns the two files.
func writeCert(t *testing.T, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca, caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, keyFile := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, keyFile
}
