package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"go.lsp.dev/jsonrpc2"
)

// Limits of the editor's framing. A header line or header block over these
// is not a header the editor wrote.
const (
	maxHeaderLine  = 4 << 10
	maxHeaderLines = 32
	// readChunk is how much of a body is read before the buffer grows: a
	// frame that claims more than it sends costs what it sent, not what it
	// claimed.
	readChunk = 256 << 10
	// DefaultMaxMessage is the largest message accepted when Options do not
	// say: a definition file of the default 10 MiB, JSON-escaped.
	DefaultMaxMessage = 64 << 20
	// DefaultMaxBatch is the largest batch of requests accepted.
	DefaultMaxBatch = 100
)

// frameError is a frame the stream refused. It is answered on the wire and
// reading goes on: at the next frame when the frame's end is known (skip
// bytes of body follow), else at the next line that starts a header.
type frameError struct {
	code   jsonrpc2.Code
	msg    string
	id     jsonrpc2.ID // of the request, when it could be read
	skip   int64       // body bytes to discard
	resync bool        // the frame's end is unknown
}

func (e *frameError) Error() string { return e.msg }

// stream is the LSP base protocol (Content-Length framing) over the
// editor's pipes. It implements jsonrpc2.Stream and the connection's raw
// frame interface (ReadFrame/WriteFrame), and it guards the connection
// against what a misbehaving client sends: a bad frame is answered with the
// JSON-RPC error the specification prescribes and skipped, never allocated
// beyond the bytes that actually arrived, and never ends the connection
// unless the input itself ends.
type stream struct {
	in     *bufio.Reader
	out    io.Writer
	closer func() error

	maxMessage int
	maxBatch   int
	// onBad is told about every refused frame (for the daemon log).
	onBad func(error)

	rbuf   []byte
	resync bool // looking for the next header after a frame with no known end

	// ended is closed when the input ends or fails: the connection's own
	// end waits for its running handlers, the server must not.
	ended     chan struct{}
	endedOnce sync.Once
	endErr    error

	writeMu sync.Mutex
	wbuf    []byte
}

func newStream(in io.Reader, out io.Writer, closer func() error, maxMessage, maxBatch int, onBad func(error)) *stream {
	if maxMessage <= 0 {
		maxMessage = DefaultMaxMessage
	}
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	if onBad == nil {
		onBad = func(error) {}
	}
	return &stream{in: bufio.NewReaderSize(in, 64<<10), out: out, closer: closer, maxMessage: maxMessage, maxBatch: maxBatch, onBad: onBad,
		ended: make(chan struct{})}
}

// ReadFrame returns the body of the next acceptable frame. Refused frames
// are answered here and skipped; an error means the input ended or failed.
func (s *stream) ReadFrame(ctx context.Context) ([]byte, int64, error) {
	body, n, err := s.readAcceptable(ctx)
	if err != nil {
		s.endedOnce.Do(func() {
			s.endErr = err
			close(s.ended)
		})
	}
	return body, n, err
}

func (s *stream) readAcceptable(ctx context.Context) ([]byte, int64, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		body, n, err := s.readFrame()
		var fe *frameError
		if !errors.As(err, &fe) {
			return body, n, err
		}
		s.onBad(fe)
		if werr := s.writeError(fe.id, fe.code, fe.msg); werr != nil {
			return nil, 0, werr
		}
		if fe.skip > 0 {
			if _, err := io.CopyN(io.Discard, s.in, fe.skip); err != nil {
				return nil, 0, unexpected(err)
			}
		}
		s.resync = fe.resync
	}
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readFrame reads one frame: its header, its body, and the checks of the
// body that the connection would otherwise fail on.
func (s *stream) readFrame() ([]byte, int64, error) {
	length, headerLen, err := s.readHeader()
	if err != nil {
		return nil, 0, err
	}
	body, err := s.readBody(length)
	if err != nil {
		return nil, 0, err
	}
	if err := s.check(body); err != nil {
		return nil, 0, err
	}
	return body, int64(headerLen + length), nil
}

// readHeader reads a header block and returns the body's length. After a
// frame whose end was unknown, lines are skipped up to the next one that
// starts a header (Content-Length); JSON cannot contain such a line.
func (s *stream) readHeader() (length, consumed int, err error) {
	var (
		lengths []string
		lines   int
		unknown []string
	)
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && (consumed > 0 || len(line) > 0) {
				err = io.ErrUnexpectedEOF
			}
			var fe *frameError
			if errors.As(err, &fe) && s.resync {
				continue // a long line of the body being skipped
			}
			return 0, 0, err
		}
		if s.resync {
			// The next header may follow the rest of a body on the same line.
			i := indexFold(line, "content-length:")
			if i < 0 {
				continue
			}
			line = line[i:]
			s.resync = false
		}
		name, value, ok := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(":"))
		isLength := ok && bytes.EqualFold(bytes.TrimSpace(name), []byte("content-length"))
		consumed += len(line)
		lines++
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			if consumed == len(line) {
				consumed = 0 // blank lines between frames are tolerated
				lines = 0
				continue
			}
			break
		}
		if lines > maxHeaderLines {
			return 0, 0, &frameError{code: jsonrpc2.ParseError, msg: fmt.Sprintf("header of more than %d lines", maxHeaderLines), resync: true}
		}
		switch {
		case !ok:
			unknown = append(unknown, string(bytes.TrimRight(line, "\r\n")))
		case isLength:
			lengths = append(lengths, string(bytes.TrimSpace(value)))
		}
	}
	if len(unknown) > 0 {
		return 0, 0, &frameError{code: jsonrpc2.ParseError, msg: fmt.Sprintf("header line %q is not \"Name: value\"", clip(unknown[0])), resync: true}
	}
	if len(lengths) == 0 {
		return 0, 0, &frameError{code: jsonrpc2.ParseError, msg: "header has no Content-Length", resync: true}
	}
	n, err := strconv.ParseInt(lengths[0], 10, 64)
	if err != nil || n < 0 || lengths[0][0] == '+' {
		return 0, 0, &frameError{code: jsonrpc2.ParseError, msg: fmt.Sprintf("Content-Length %q is not a number of bytes", clip(lengths[0])), resync: true}
	}
	for _, l := range lengths[1:] {
		if l != lengths[0] {
			return 0, 0, &frameError{code: jsonrpc2.ParseError, msg: fmt.Sprintf("header has %d different Content-Length values", len(lengths)), resync: true}
		}
	}
	if len(lengths) > 1 {
		return 0, 0, &frameError{code: jsonrpc2.ParseError, msg: "header has Content-Length twice", skip: n}
	}
	if n == 0 {
		return 0, 0, &frameError{code: jsonrpc2.InvalidRequest, msg: "message is empty (Content-Length: 0)"}
	}
	if n > int64(s.maxMessage) {
		return 0, 0, &frameError{code: jsonrpc2.InvalidRequest, skip: n,
			msg: fmt.Sprintf("message of %d bytes is over the limit of %d bytes", n, s.maxMessage)}
	}
	return int(n), consumed, nil
}

// indexFold is the index of lower-case ASCII want in b, ignoring case.
func indexFold(b []byte, want string) int {
	for i := 0; i+len(want) <= len(b); i++ {
		if bytes.EqualFold(b[i:i+len(want)], []byte(want)) {
			return i
		}
	}
	return -1
}

// readLine reads one header line, at most maxHeaderLine bytes.
func (s *stream) readLine() ([]byte, error) {
	line, err := s.in.ReadSlice('\n')
	if err == bufio.ErrBufferFull || (err == nil && len(line) > maxHeaderLine) {
		// Drop the rest of the line.
		for err == bufio.ErrBufferFull {
			_, err = s.in.ReadSlice('\n')
		}
		if err != nil {
			return nil, err
		}
		return nil, &frameError{code: jsonrpc2.ParseError, msg: fmt.Sprintf("header line over %d bytes", maxHeaderLine), resync: true}
	}
	return line, err
}

// readBody reads length bytes, growing the buffer as they arrive.
func (s *stream) readBody(length int) ([]byte, error) {
	buf := s.rbuf[:0]
	for len(buf) < length {
		if len(buf) == cap(buf) {
			grow := min(max(cap(buf), readChunk), length-len(buf))
			buf = append(buf, make([]byte, grow)...)[:len(buf)]
		}
		n, err := s.in.Read(buf[len(buf):min(cap(buf), length)])
		buf = buf[:len(buf)+n]
		if err != nil && len(buf) < length {
			return nil, unexpected(err)
		}
	}
	if cap(buf) <= 4*readChunk {
		s.rbuf = buf // keep a small buffer; let a large one go
	}
	return buf, nil
}

// check refuses what the connection would fail on: bodies that are not
// UTF-8, not JSON, not a JSON-RPC message, or batches over the limit.
func (s *stream) check(body []byte) error {
	if !utf8.Valid(body) {
		i := invalidUTF8At(body)
		return &frameError{code: jsonrpc2.ParseError, id: idOf(body), msg: fmt.Sprintf("message is not valid UTF-8 (byte %d)", i)}
	}
	start := bytes.TrimLeft(body, " \t\r\n")
	if len(start) > 0 && start[0] == '[' {
		if !json.Valid(body) {
			return &frameError{code: jsonrpc2.ParseError, msg: "message is not valid JSON"}
		}
		if n := countElements(start); n > s.maxBatch {
			return &frameError{code: jsonrpc2.InvalidRequest,
				msg: fmt.Sprintf("batch of %d requests is over the limit of %d", n, s.maxBatch)}
		}
		return nil
	}
	if _, err := jsonrpc2.ScanMessageView(body); err == nil {
		return nil
	}
	if !json.Valid(body) {
		return &frameError{code: jsonrpc2.ParseError, msg: "message is not valid JSON"}
	}
	return &frameError{code: jsonrpc2.InvalidRequest, id: idOf(body),
		msg: `message is not a JSON-RPC 2.0 request or response (it needs "jsonrpc":"2.0" and a string "method", or a "result" or "error")`}
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// idOf reads the "id" member of a JSON object (a request that is otherwise
// refused, so that the client is answered rather than left waiting; the
// params of $/cancelRequest): a number or a string, else an invalid ID.
func idOf(body []byte) jsonrpc2.ID {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &m) != nil {
		return jsonrpc2.ID{}
	}
	var n int64
	if json.Unmarshal(m.ID, &n) == nil {
		return jsonrpc2.NewNumberID(n)
	}
	var str string
	if json.Unmarshal(m.ID, &str) == nil && utf8.ValidString(str) {
		return jsonrpc2.NewStringID(str)
	}
	return jsonrpc2.ID{}
}

// countElements counts the elements of a valid JSON array.
func countElements(arr []byte) int {
	dec := json.NewDecoder(bytes.NewReader(arr))
	if _, err := dec.Token(); err != nil {
		return 0
	}
	n := 0
	for dec.More() {
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
		n++
	}
	return n
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Read implements jsonrpc2.Stream for completeness; the connection reads
// with ReadFrame.
func (s *stream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	body, n, err := s.ReadFrame(ctx)
	if err != nil {
		return nil, 0, err
	}
	msg, err := jsonrpc2.DecodeMessage(body)
	return msg, n, err
}

// Write implements jsonrpc2.Stream: one frame, one write.
func (s *stream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	return s.compose(func(b []byte) []byte { return jsonrpc2.AppendMessage(b, msg) })
}

// WriteFrame writes an encoded body (a message or a batch) as one frame.
func (s *stream) WriteFrame(ctx context.Context, data []byte) (int64, error) {
	return s.compose(func(b []byte) []byte { return append(b, data...) })
}

func (s *stream) writeError(id jsonrpc2.ID, code jsonrpc2.Code, msg string) error {
	_, err := s.compose(func(b []byte) []byte {
		return jsonrpc2.AppendResponse(b, id, nil, jsonrpc2.NewError(code, msg))
	})
	return err
}

// headerRoom is reserved before a body for its header.
const headerRoom = len("Content-Length: ") + 20 + len("\r\n\r\n")

func (s *stream) compose(body func([]byte) []byte) (int64, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	buf := body(append(s.wbuf[:0], make([]byte, headerRoom)...))
	n := len(buf) - headerRoom
	var hb [headerRoom]byte
	h := strconv.AppendInt(append(hb[:0], "Content-Length: "...), int64(n), 10)
	h = append(h, "\r\n\r\n"...)
	start := headerRoom - len(h)
	copy(buf[start:], h)
	written, err := s.out.Write(buf[start:])
	if cap(buf) <= 1<<20 {
		s.wbuf = buf
	}
	return int64(written), err
}

// writeFrames writes whole frames (notifications the outbox composed) with
// one write.
func (s *stream) writeFrames(frames []byte) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_, err := s.out.Write(frames)
	return err
}

// Close closes the pipes.
func (s *stream) Close() error {
	if s.closer != nil {
		return s.closer()
	}
	return nil
}
