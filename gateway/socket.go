package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
)

// The daemon's MCP socket (nexusd mcp's way in when a daemon runs): a
// unix socket of the daemon's user. A connection starts with one line,
// "Bearer TOKEN"; the daemon answers "ok" or "error: WHY" and, after ok,
// the connection is an MCP session in newline-delimited JSON, as on
// stdio.
//
// Or the line is "Bearer TOKEN stdio", sent with two file descriptors
// (SCM_RIGHTS): the MCP client's own stdin and stdout, which nexusd mcp was
// given. The daemon then serves the session on them directly, and the
// connection only says how long it lasts: the daemon closes it when the
// session ends, and ends the session when nexusd mcp goes. No process
// copies the client's bytes on the way (HandshakeStdio).
//
// Windows cannot pass descriptors on a unix socket: there the daemon
// refuses the descriptor forms, naming the platform, and nexusd mcp and
// nexusd acp copy their client's bytes over the connection instead
// (HandshakeInline).

// ErrNoFilePassing means the platform cannot pass file descriptors on a
// unix socket (Windows); the descriptor forms of the handshake are
// refused there.
var ErrNoFilePassing = errors.New("file descriptors cannot be passed on a unix socket")

// maxHandshake bounds the handshake line.
const maxHandshake = 4 << 10

// stdioMode is the handshake's word for the file descriptor form.
const stdioMode = "stdio"

// Door is another protocol served on the MCP socket: a handshake "Bearer
// TOKEN WORD", WORD a key of ServeConn's doors, sent with the client's
// stdin and stdout (SCM_RIGHTS), hands them to Serve, as the party
// Authenticate gives the token. nexusd acp comes in this way.
type Door struct {
	Authenticate Authenticate
	// Serve serves the client on in and out until it goes or ctx ends.
	Serve func(ctx context.Context, party access.Party, in io.Reader, out io.Writer) error
}

// ServeConn serves one connection of the MCP socket until it ends or ctx
// is cancelled.
func (g *Gateway) ServeConn(ctx context.Context, conn net.Conn, authenticate Authenticate, doors map[string]Door) error {
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, files, rest, err := readHandshake(conn)
	for _, f := range files {
		defer f.Close()
	}
	if err != nil {
		return fmt.Errorf("MCP socket handshake: %w", err)
	}
	conn.SetReadDeadline(time.Time{})
	fields := strings.Fields(line)
	if len(fields) == 3 && fields[0] == "Bearer" && fields[2] != stdioMode {
		if door, ok := doors[fields[2]]; ok {
			return serveDoor(ctx, conn, door, fields[1], files, rest)
		}
	}
	var party access.Party
	known := false
	if len(fields) >= 2 && fields[0] == "Bearer" {
		party, known = authenticate(fields[1])
	}
	if !known {
		io.WriteString(conn, "error: unknown token\n")
		return errors.New("MCP socket: unknown token")
	}
	stdio := len(fields) == 3 && fields[2] == stdioMode
	switch {
	case len(fields) > 3 || len(fields) == 3 && !stdio:
		words := []string{`"Bearer TOKEN"`, `"Bearer TOKEN stdio"`}
		for _, w := range sortedKeys(doors) {
			words = append(words, `"Bearer TOKEN `+w+`"`)
		}
		io.WriteString(conn, "error: the handshake is "+strings.Join(words, " or ")+"\n")
		return fmt.Errorf("MCP socket: a handshake of %d words", len(fields))
	case stdio && errNoFiles != nil:
		io.WriteString(conn, "error: \"stdio\" comes with two file descriptors, and "+errNoFiles.Error()+"\n")
		return fmt.Errorf("MCP socket: stdio: %w", errNoFiles)
	case stdio && len(files) != 2:
		io.WriteString(conn, "error: \"stdio\" comes with two file descriptors, stdin and stdout\n")
		return fmt.Errorf("MCP socket: stdio with %d file descriptors", len(files))
	case !stdio && len(files) > 0:
		io.WriteString(conn, "error: file descriptors come with \"stdio\"\n")
		return errors.New("MCP socket: file descriptors without stdio")
	}
	if _, err := io.WriteString(conn, "ok\n"); err != nil {
		return err
	}
	var t sdk.Transport
	if stdio {
		in, out := GuardLines(files[0], files[1])
		t = &sdk.IOTransport{Reader: readCloser{in, files[0]}, Writer: writeCloser{out, files[1]}}
	} else {
		in, out := GuardLines(io.MultiReader(bytes.NewReader(rest), conn), conn)
		t = &sdk.IOTransport{Reader: readCloser{in, conn}, Writer: writeCloser{out, conn}}
	}
	session, err := g.Server(party).Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	defer g.forget(session)
	stop := context.AfterFunc(ctx, func() { session.Close() })
	defer stop()
	if stdio {
		// nexusd mcp sends nothing more: its going away ends the session.
		go func() {
			io.Copy(io.Discard, conn)
			session.Close()
		}()
	}
	return session.Wait()
}

// serveDoor serves a door's client until it goes, ctx ends or the
// connection (the client's launcher) goes: on files, its stdin and stdout,
// or without files on the connection itself, rest being what came after
// the handshake line.
func serveDoor(ctx context.Context, conn net.Conn, door Door, token string, files []*os.File, rest []byte) error {
	party, ok := door.Authenticate(token)
	if !ok {
		io.WriteString(conn, "error: unknown token\n")
		return errors.New("MCP socket: unknown token")
	}
	if len(files) != 2 && len(files) != 0 {
		io.WriteString(conn, "error: the handshake comes with two file descriptors, stdin and stdout, or none\n")
		return fmt.Errorf("MCP socket: a door with %d file descriptors", len(files))
	}
	if _, err := io.WriteString(conn, "ok\n"); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if len(files) == 0 {
		// The client's bytes come and go on the connection.
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		defer stop()
		return door.Serve(ctx, party, io.MultiReader(bytes.NewReader(rest), conn), conn)
	}
	go func() {
		io.Copy(io.Discard, conn) // the launcher sends nothing more: its going away ends the session
		cancel()
	}()
	err := door.Serve(ctx, party, files[0], files[1])
	files[0].Close() // ends a pending read of the client's stdin
	return err
}

type readCloser struct {
	io.Reader
	io.Closer
}

type writeCloser struct {
	io.Writer
	io.Closer
}

// readHandshake reads the handshake line (without its newline), the files
// that came with it, and what came after it in the same read.
func readHandshake(conn net.Conn) (line string, files []*os.File, rest []byte, err error) {
	uc, _ := conn.(*net.UnixConn)
	if errNoFiles != nil {
		uc = nil // no descriptors can come
	}
	buf := make([]byte, 0, 512)
	oob := make([]byte, oobSpace)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= maxHandshake {
				return "", files, nil, errors.New("no newline in the first 4 KiB")
			}
			buf = append(buf, make([]byte, len(buf))...)[:len(buf)]
		}
		var n, oobn int
		if uc != nil && files == nil {
			n, oobn, _, _, err = uc.ReadMsgUnix(buf[len(buf):cap(buf)], oob)
			if oobn > 0 {
				fs, perr := filesOf(oob[:oobn])
				files = fs
				if perr != nil && err == nil {
					err = perr
				}
			}
		} else {
			n, err = conn.Read(buf[len(buf):cap(buf)])
		}
		buf = buf[:len(buf)+n]
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			return strings.TrimRight(string(buf[:i]), "\r"), files, buf[i+1:], nil
		}
		if err != nil {
			return "", files, nil, err
		}
	}
}

// Handshake is the client's side of the MCP socket's handshake: it sends
// the token and reads the answer; the MCP session follows on conn.
func Handshake(conn net.Conn, token string) (*bufio.Reader, error) {
	if _, err := io.WriteString(conn, "Bearer "+token+"\n"); err != nil {
		return nil, err
	}
	return answer(conn)
}

// HandshakeStdio hands in and out, an MCP client's stdin and stdout, to
// the daemon at the other end of conn, which serves the session on them
// until it ends; then it closes conn. (Closing conn first ends the
// session.)
func HandshakeStdio(conn *net.UnixConn, token string, in, out *os.File) error {
	return HandshakeDoor(conn, token, stdioMode, in, out)
}

// HandshakeDoor hands in and out, a client's stdin and stdout, to the
// daemon's door named word (see [Door]; "stdio" is the MCP gateway's).
// Where descriptors cannot be passed (Windows) it fails with
// [ErrNoFilePassing] and sends nothing: use [HandshakeInline].
func HandshakeDoor(conn *net.UnixConn, token, word string, in, out *os.File) error {
	if errNoFiles != nil {
		return errNoFiles
	}
	rights, err := unixRights(in, out)
	if err != nil {
		return err
	}
	if _, _, err := conn.WriteMsgUnix([]byte("Bearer "+token+" "+word+"\n"), rights, nil); err != nil {
		return fmt.Errorf("the daemon's MCP socket: %w", err)
	}
	_, err = answer(conn)
	return err
}

// HandshakeInline opens the daemon's door named word ("stdio" for the MCP
// gateway) for a client whose bytes the caller copies over conn: after
// it, conn carries the session both ways (what the daemon sent already is
// in the returned reader), until either end closes it.
func HandshakeInline(conn net.Conn, token, word string) (*bufio.Reader, error) {
	line := "Bearer " + token + " " + word + "\n"
	if word == stdioMode {
		line = "Bearer " + token + "\n"
	}
	if _, err := io.WriteString(conn, line); err != nil {
		return nil, fmt.Errorf("the daemon's MCP socket: %w", err)
	}
	return answer(conn)
}

// answer reads the daemon's answer to the handshake.
func answer(conn net.Conn) (*bufio.Reader, error) {
	r := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := r.ReadString('\n')
	conn.SetReadDeadline(time.Time{})
	if err != nil {
		return nil, fmt.Errorf("the daemon's MCP socket: %w", err)
	}
	if line = strings.TrimRight(line, "\r\n"); line != "ok" {
		return nil, fmt.Errorf("the daemon's MCP socket: %s", strings.TrimPrefix(line, "error: "))
	}
	return r, nil
}
