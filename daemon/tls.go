package daemon

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/nexuscocreate/nexus/workspace"
)

// gRPC over TCP is served with TLS 1.3, with the certificate of
// --tls-cert/--tls-key (or grpc.tls.cert/key), or else one that nexusd
// generates into .nexus/tls/ and keeps across restarts, so that a client
// can pin its fingerprint (tlsFingerprint in daemon.json). With a client
// CA (--tls-client-ca or grpc.tls.clientCA), clients must present a
// certificate it signed, and apps[].certificate maps one to an app.

const (
	// certLifetime is how long a generated certificate is valid.
	certLifetime = 365 * 24 * time.Hour
	// certRenewBefore is how long before its expiry a generated
	// certificate is replaced at start, so that it does not expire while
	// the daemon runs.
	certRenewBefore = 30 * 24 * time.Hour
)

// tlsDoor is the TLS of the TCP address.
type tlsDoor struct {
	config *tls.Config
	// certFile is the PEM file of the certificate served; fingerprint its
	// SHA-256 (of the DER).
	certFile    string
	fingerprint [32]byte
	// generated is set for the certificate in .nexus/tls/.
	generated bool
	// clientCerts is set when clients must present a certificate.
	clientCerts bool
}

// tlsSources are the PEM files of the TCP door's TLS, each with the
// setting it comes from (for messages). The flags win over the
// configuration.
type tlsSources struct {
	cert, key, clientCA             string
	certFrom, keyFrom, clientCAFrom string
}

// tlsSettings chooses the TLS files from the flags and the configuration,
// and refuses what does not go together: a certificate without its key,
// TLS settings without a TCP address, and TLS flags with --insecure-tcp.
// tcpAddr is the address to serve ("" for none). The configuration's grpc.tls
// is ignored, with a warning, under --insecure-tcp; warn says so.
func tlsSettings(opts Options, cfg workspace.TLSConfig, l layout, tcpAddr string, warn func(string)) (tlsSources, error) {
	var s tlsSources
	if (opts.TLSCert == "") != (opts.TLSKey == "") {
		return s, errors.New("--tls-cert and --tls-key go together: give both (PEM files), or neither for a generated certificate")
	}
	flags := opts.TLSCert != "" || opts.TLSClientCA != ""
	switch {
	case flags && opts.InsecureTCP:
		return s, errors.New("--insecure-tcp serves plain TCP, without TLS, and --tls-cert/--tls-client-ca set up TLS: give one or the other")
	case flags && tcpAddr == "":
		return s, errors.New("--tls-cert/--tls-key/--tls-client-ca: there is no TCP address to serve (give --grpc-addr HOST:PORT or grpc.address)")
	case opts.InsecureTCP || tcpAddr == "":
		if opts.InsecureTCP && cfg != (workspace.TLSConfig{}) {
			warn("grpc.tls in .nexus/config.yaml is not used: --insecure-tcp serves plain TCP")
		}
		return s, nil
	}
	in := func(key string) string { return key + " in .nexus/config.yaml" }
	abs := func(p string) string { // a flag's path is relative to the current directory
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	if opts.TLSCert != "" {
		s.cert, s.certFrom = abs(opts.TLSCert), "--tls-cert "+opts.TLSCert
		s.key, s.keyFrom = abs(opts.TLSKey), "--tls-key "+opts.TLSKey
	} else if cfg.Cert != "" {
		s.cert, s.certFrom = l.Resolve(cfg.Cert), in("grpc.tls.cert")
		s.key, s.keyFrom = l.Resolve(cfg.Key), in("grpc.tls.key")
	}
	if opts.TLSClientCA != "" {
		s.clientCA, s.clientCAFrom = abs(opts.TLSClientCA), "--tls-client-ca "+opts.TLSClientCA
	} else if cfg.ClientCA != "" {
		s.clientCA, s.clientCAFrom = l.Resolve(cfg.ClientCA), in("grpc.tls.clientCA")
	}
	return s, nil
}

// openTLS makes the TLS of the TCP address host:port: the configured
// certificate, or the generated one (made or replaced as
// [ensureGeneratedCert] says), and the client CA when there is one.
func openTLS(s tlsSources, l layout, addr string, logger *slog.Logger) (*tlsDoor, error) {
	door := &tlsDoor{config: &tls.Config{MinVersion: tls.VersionTLS13}}
	var pair tls.Certificate
	var err error
	if s.cert != "" {
		if pair, err = loadKeyPair(s); err != nil {
			return nil, err
		}
		door.certFile = s.cert
		if now := time.Now(); now.After(pair.Leaf.NotAfter) || now.Before(pair.Leaf.NotBefore) {
			logger.Warn("the TLS certificate is not valid now: clients that check its dates will refuse it",
				"cert", s.cert, "notBefore", pair.Leaf.NotBefore, "notAfter", pair.Leaf.NotAfter)
		}
	} else {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		hostname, _ := os.Hostname()
		if pair, err = ensureGeneratedCert(l, namesFor(host, hostname), time.Now(), logger); err != nil {
			return nil, fmt.Errorf("the generated TLS certificate in %s: %w", l.TLS, err)
		}
		door.certFile, door.generated = l.TLSCert, true
	}
	door.config.Certificates = []tls.Certificate{pair}
	door.fingerprint = sha256.Sum256(pair.Leaf.Raw)
	if s.clientCA != "" {
		pool, err := loadClientCA(s)
		if err != nil {
			return nil, err
		}
		door.config.ClientCAs = pool
		door.config.ClientAuth = tls.RequireAndVerifyClientCert
		door.clientCerts = true
	}
	return door, nil
}

// loadKeyPair reads the configured certificate and key, naming the file
// that is wrong: a certificate file without a certificate, a key file
// readable by others (as ssh refuses), a key that is no key or that does
// not match the certificate.
func loadKeyPair(s tlsSources) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(s.cert)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", s.certFrom, err)
	}
	if err := checkCertificate(certPEM); err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", s.certFrom, err)
	}
	if err := checkKeyPrivate(s.key); err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", s.keyFrom, err)
	}
	keyPEM, err := os.ReadFile(s.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", s.keyFrom, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	switch {
	case err != nil && strings.Contains(err.Error(), "does not match"):
		return tls.Certificate{}, fmt.Errorf("%s: the private key does not match the certificate of %s", s.keyFrom, s.certFrom)
	case err != nil:
		return tls.Certificate{}, fmt.Errorf("%s: %s", s.keyFrom, strings.TrimPrefix(err.Error(), "tls: "))
	}
	return pair, nil
}

// checkCertificate says what is wrong with the first CERTIFICATE block of
// a PEM file: that there is none, or that it does not parse.
func checkCertificate(data []byte) error {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return errors.New("no PEM CERTIFICATE block in it")
		}
		if b.Type == "CERTIFICATE" {
			if _, err := x509.ParseCertificate(b.Bytes); err != nil {
				return fmt.Errorf("its certificate does not parse: %v", err)
			}
			return nil
		}
	}
}

// loadClientCA reads the client CA's PEM certificates.
func loadClientCA(s tlsSources) (*x509.CertPool, error) {
	data, err := os.ReadFile(s.clientCA)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.clientCAFrom, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", s.clientCAFrom)
	}
	return pool, nil
}

// certNames are the names a generated certificate is for.
type certNames struct {
	// need are the names it must cover to be kept: the listen address's
	// host, or the machine's host name for every interface.
	need []string
	// dns and ips are what a new certificate names: need, localhost and
	// the loopback addresses, the machine's host name, and for every
	// interface the addresses the interfaces have now.
	dns []string
	ips []net.IP
}

// namesFor returns the names of a certificate for the listen host host on
// the machine called hostname.
func namesFor(host, hostname string) certNames {
	var n certNames
	addDNS := func(name string) {
		if name != "" && !slices.Contains(n.dns, name) {
			n.dns = append(n.dns, name)
		}
	}
	addIP := func(ip netip.Addr) {
		if !slices.ContainsFunc(n.ips, func(x net.IP) bool { return x.Equal(ip.AsSlice()) }) {
			n.ips = append(n.ips, ip.AsSlice())
		}
	}
	hostname = strings.ToLower(hostname)
	addDNS("localhost")
	addDNS(hostname)
	addIP(netip.IPv6Loopback())
	addIP(netip.MustParseAddr("127.0.0.1"))
	ip, err := netip.ParseAddr(host)
	switch {
	case host == "" || err == nil && ip.IsUnspecified():
		n.need = []string{cmp.Or(hostname, "localhost")}
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().IsGlobalUnicast() {
					addIP(p.Addr().Unmap())
				}
			}
		}
	case err == nil:
		n.need = []string{ip.Unmap().String()}
		addIP(ip.Unmap())
	default:
		n.need = []string{strings.ToLower(host)}
		addDNS(strings.ToLower(host))
	}
	return n
}

// ensureGeneratedCert returns the certificate of .nexus/tls/, made anew
// (with a new ECDSA P-256 key) when there is none, when it does not load
// or its key does not match, when it expires within certRenewBefore, or
// when it does not cover names.need. Each replacement is logged with its
// reason: it changes the fingerprint that clients pin.
func ensureGeneratedCert(l layout, names certNames, now time.Time, logger *slog.Logger) (tls.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(l.TLSCert, l.TLSKey)
	_, statErr := os.Stat(l.TLSCert)
	var why string
	switch {
	case errors.Is(err, fs.ErrNotExist) && errors.Is(statErr, fs.ErrNotExist): // the first one
	case err != nil:
		why = "it does not load (" + strings.TrimPrefix(err.Error(), "tls: ") + ")"
	case now.Add(certRenewBefore).After(pair.Leaf.NotAfter):
		why = "it expires on " + pair.Leaf.NotAfter.UTC().Format(time.DateOnly)
	case now.Before(pair.Leaf.NotBefore):
		why = "it is not valid before " + pair.Leaf.NotBefore.UTC().Format(time.RFC3339)
	default:
		for _, name := range names.need {
			if pair.Leaf.VerifyHostname(name) != nil {
				why = "it is not for " + name
				break
			}
		}
		if why == "" {
			return pair, nil
		}
	}
	if why != "" {
		logger.Warn("replacing the generated TLS certificate: clients that pinned its fingerprint must pin the new one",
			"cert", l.TLSCert, "reason", why)
	}
	return generateCert(l, names, now)
}

// generateCert makes a self-signed certificate for names with a new ECDSA
// P-256 key, valid for certLifetime from now, and writes both into
// .nexus/tls/ (0700; the files 0600): the key first, so that a crash
// between the two leaves a pair that does not match, which is replaced at
// the next start.
func generateCert(l layout, names certNames, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "nexusd " + names.need[0]},
		NotBefore:             now.Add(-time.Hour), // a client whose clock is a little behind
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              names.dns,
		IPAddresses:           names.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := workspace.MakePrivateDir(l.TLS); err != nil {
		return tls.Certificate{}, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := workspace.WriteFileAtomic(l.TLSKey, keyPEM); err != nil {
		return tls.Certificate{}, err
	}
	if err := workspace.WriteFileAtomic(l.TLSCert, certPEM); err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// doorCreds are the gRPC server's transport credentials when the TCP
// address is served with TLS: TLS on a TCP connection, nothing on the unix
// socket (its 0600 mode and 0700 directory are its protection). A
// connection of any other kind is refused, so that a listener added later
// cannot be served in clear by mistake. (With --insecure-tcp, the server
// has no credentials.)
type doorCreds struct {
	tls credentials.TransportCredentials
}

// plainInfo is the AuthInfo of a connection without TLS.
type plainInfo struct{ credentials.CommonAuthInfo }

func (plainInfo) AuthType() string { return "insecure" }

func (c *doorCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	switch conn := conn.(type) {
	case *net.UnixConn:
		return conn, plainInfo{credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}, nil
	case *net.TCPConn:
		// The listener's own *net.TCPConn, unwrapped: gRPC sets
		// TCP_USER_TIMEOUT on it only as such.
		return c.tls.ServerHandshake(conn)
	}
	return nil, nil, fmt.Errorf("a connection of type %T, which nexusd does not serve", conn)
}

func (c *doorCreds) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("the daemon's credentials do not dial")
}

func (c *doorCreds) Info() credentials.ProtocolInfo { return c.tls.Info() }

func (c *doorCreds) Clone() credentials.TransportCredentials {
	return &doorCreds{tls: c.tls.Clone()}
}

func (c *doorCreds) OverrideServerName(string) error { return nil }
