package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/access"
)

// A door opened without descriptors (HandshakeInline, as nexusd mcp and
// nexusd acp do on Windows) serves its client on the connection itself,
// what came with the handshake line included, until the client closes its
// side.
func TestDoorOnTheConnection(t *testing.T) {
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "mcp.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	doors := map[string]Door{"echo": {
		Authenticate: func(token string) (access.Party, bool) { return access.Person("cli"), token == "tok" },
		Serve: func(ctx context.Context, _ access.Party, in io.Reader, out io.Writer) error {
			sc := bufio.NewScanner(in)
			for sc.Scan() {
				fmt.Fprintf(out, "echo: %s\n", sc.Text())
			}
			return sc.Err()
		},
	}}
	served := make(chan error, 2)
	go func() {
		for range 2 {
			c, err := l.Accept()
			if err != nil {
				served <- err
				return
			}
			served <- New(Options{}).ServeConn(t.Context(), c, nil, doors)
		}
	}()

	c, err := net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The first line comes in the same write as the handshake.
	if _, err := io.WriteString(c, "Bearer tok echo\nfirst\n"); err != nil {
		t.Fatal(err)
	}
	r, err := answer(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c, "second\n"); err != nil {
		t.Fatal(err)
	}
	c.(*net.UnixConn).CloseWrite()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := "echo: first\necho: second\n"; string(got) != want {
		t.Errorf("the door answered %q, want %q", got, want)
	}
	if err := <-served; err != nil {
		t.Errorf("ServeConn: %v", err)
	}

	c2, err := net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := HandshakeInline(c2, "nope", "echo"); err == nil || !strings.Contains(err.Error(), "unknown token") {
		t.Errorf("a wrong token: %v", err)
	}
	if err := <-served; err == nil {
		t.Error("ServeConn took a wrong token")
	}
}
