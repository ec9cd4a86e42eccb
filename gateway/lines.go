package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A session in newline-delimited JSON (nexusd mcp's stdio, the MCP socket)
// ends, in the go-sdk, at the first line that is not a JSON-RPC message:
// the client gets no answer, and a request it sent just before is lost.
// GuardLines answers such a line itself, as JSON-RPC 2.0 says, and drops
// it: the session goes on.

// maxLine bounds a message of a newline-delimited session; a longer line is
// refused (-32600) and skipped.
const maxLine = 64 << 20

// GuardLines returns the reader and writer an MCP session in
// newline-delimited JSON should use instead of r and w: a line of r that is
// not JSON gets a -32700 error on w, one that is JSON but no JSON-RPC
// message (or an empty batch, or longer than 64 MiB) gets -32600, with the
// message's id when it has one; neither reaches the session. Blank lines
// are skipped. Writes to the writer are whole, one at a time, so that the
// errors never fall inside a message.
func GuardLines(r io.Reader, w io.Writer) (io.Reader, io.Writer) {
	return GuardLinesWith(r, w, LineRules{})
}

// LineRules are the rules of a protocol other than MCP for GuardLinesWith.
type LineRules struct {
	// MaxLine bounds a message; 0 is 64 MiB.
	MaxLine int
	// NoBatches refuses batches (-32600), for a protocol without them
	// (ACP).
	NoBatches bool
}

// GuardLinesWith is GuardLines with other rules.
func GuardLinesWith(r io.Reader, w io.Writer, rules LineRules) (io.Reader, io.Writer) {
	if rules.MaxLine <= 0 {
		rules.MaxLine = maxLine
	}
	lw := &lockedWriter{w: w}
	return &guardedReader{r: bufio.NewReaderSize(r, 64<<10), w: lw, rules: rules}, lw
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type guardedReader struct {
	r       *bufio.Reader
	w       io.Writer
	rules   LineRules
	pending []byte // of the current line, not yet read
}

func (g *guardedReader) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		line, err := g.readLine()
		if len(line) > 0 {
			g.pending = line
			break
		}
		if err != nil {
			return 0, err
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// readLine returns the next line that is a JSON-RPC message (with its
// newline), answering and dropping the others (nil); with the reader's
// error at its end.
func (g *guardedReader) readLine() ([]byte, error) {
	line, tooLong, err := g.next()
	switch {
	case tooLong:
		g.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: a message longer than %s", sizeText(g.rules.MaxLine)))
		return nil, err
	case len(line) == 0:
		return nil, err
	}
	if line[len(line)-1] != '\n' {
		line = append(line, '\n') // the last line, at EOF
	}
	if !g.check(line) {
		return nil, err
	}
	return line, nil // at EOF, the next read says so
}

// next reads a line, keeping at most maxLine bytes of it.
func (g *guardedReader) next() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := g.r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > g.rules.MaxLine {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

// check reports whether line is a message for the session; it answers the
// ones that are not.
func (g *guardedReader) check(line []byte) bool {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return false
	}
	if trimmed[0] == '[' {
		if !json.Valid(trimmed) {
			g.refuse(nil, jsonrpc.CodeParseError, "Parse error: the line is not JSON")
			return false
		}
		if g.rules.NoBatches {
			g.refuse(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: batches are not supported; send one message per line")
			return false
		}
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil || len(batch) == 0 {
			g.refuse(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch")
			return false
		}
		for _, m := range batch {
			if _, err := jsonrpc.DecodeMessage(m); err != nil {
				g.refuse(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a message of the batch: "+err.Error())
				return false
			}
		}
		return true
	}
	// What the go-sdk's decoder needs, read without keeping the params:
	// the go-sdk decodes the message again, and decoding it whole here
	// too (a fresh 32 KiB buffer, a copy of the params) doubled the cost of
	// every message, 1 MiB of arguments and more.
	var h struct {
		JSONRPC string  `json:"jsonrpc"`
		ID      any     `json:"id"`
		Method  *string `json:"method"`
		Error   *struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	err := json.Unmarshal(trimmed, &h)
	if _, syntax := err.(*json.SyntaxError); syntax {
		g.refuse(nil, jsonrpc.CodeParseError, "Parse error: the line is not JSON")
		return false
	}
	switch h.ID.(type) {
	case nil, float64, string:
		if err == nil && h.JSONRPC == "2.0" && (h.Method != nil || h.ID != nil) {
			return true
		}
	}
	// Not a message: the go-sdk's decoder says why.
	if _, err = jsonrpc.DecodeMessage(trimmed); err == nil {
		return true
	}
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal(trimmed, &m)
	g.refuse(m.ID, jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error())
	return false
}

// refuse writes a JSON-RPC error response with id (null when it has none or
// it is not a string or number).
func (g *guardedReader) refuse(id json.RawMessage, code int64, msg string) {
	var v any
	if json.Unmarshal(id, &v) != nil {
		v = nil
	}
	switch v.(type) {
	case string, float64:
	default:
		id = json.RawMessage("null")
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	g.w.Write(append(out, '\n'))
}

// sizeText is a size limit in words: whole MiB when it is about that.
func sizeText(n int) string {
	if mib := (n + 1) >> 20; mib > 0 && mib<<20-n <= 1 {
		return fmt.Sprintf("%d MiB", mib)
	}
	return fmt.Sprintf("%d bytes", n)
}
