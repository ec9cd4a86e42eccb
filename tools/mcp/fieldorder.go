package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A form's fields are shown in the order the server wrote them in its
// requested schema, but the go-sdk decodes the schema into a map, which
// loses it. So the hub reads the order off the wire before the SDK does:
// each message (a line of a stdio server, a line of an HTTP response or an
// SSE event's data) that holds a requestedSchema gets the order of its
// properties beside it, in the params' _meta under fieldOrderKey, which
// elicit reads. Messages that hold none pass untouched.

// fieldOrderKey is the _meta key of the order of a form's fields.
const fieldOrderKey = "nexus/fieldOrder"

var requestedSchema = []byte(`"requestedSchema"`)

// wireReader reads a server's messages ahead of the go-sdk, line by line:
// it records the order of requested schemas' fields, and counts the
// notifications that calls wait for (heard, notify.go). It works in place
// on the caller's goroutine: a line is copied once, from its buffer to the
// caller's, and only one that holds a requestedSchema is rewritten. A last
// line without a newline (an HTTP response's JSON body) is a line too.
type wireReader struct {
	r     io.ReadCloser
	heard *heard

	buf     []byte // read from r; buf[start:end] is not passed on yet
	start   int
	checked int // buf[start:checked] are whole lines, looked at
	end     int
	out     []byte // a rewritten line, passed on before buf[start:]
	err     error  // of r, returned once everything before it is passed
}

func newWireReader(r io.ReadCloser, h *heard) *wireReader {
	return &wireReader{r: r, heard: h, buf: make([]byte, 16<<10)}
}

func (w *wireReader) Read(p []byte) (int, error) {
	for {
		if len(w.out) > 0 {
			n := copy(p, w.out)
			w.out = w.out[n:]
			return n, nil
		}
		if w.start < w.checked {
			n := copy(p, w.buf[w.start:w.checked])
			w.start += n
			return n, nil
		}
		if w.check() {
			continue
		}
		if w.err != nil {
			return 0, w.err
		}
		w.fill()
	}
}

// check looks at the whole lines read and not looked at yet, up to the
// first that is rewritten; at the end of r, the rest is a line. It reports
// whether there is something to pass on.
func (w *wireReader) check() bool {
	for w.checked < w.end {
		rest := w.buf[w.checked:w.end]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 && w.err == nil {
			if len(rest) < mcp.DefaultMaxLineLength {
				break
			}
			// Longer than a message may be: passed on as it is, for the
			// go-sdk to refuse, rather than held here.
			w.checked = w.end
			continue
		}
		line := rest
		if i >= 0 {
			line = rest[:i+1]
		}
		if bytes.Contains(line, requestedSchema) {
			if w.start < w.checked { // what comes before it first
				break
			}
			w.heard.saw(line)
			// The line itself when it is not rewritten: it is passed on
			// before buf is filled again.
			w.out = withFieldOrder(line)
			w.start += len(line)
			w.checked = w.start
			return true
		}
		w.heard.saw(line)
		w.checked += len(line)
	}
	return w.start < w.checked
}

// fill reads more of r into buf, making room first.
func (w *wireReader) fill() {
	if w.start == w.end && len(w.buf) > 1<<20 { // after a very long line
		w.buf, w.start, w.checked, w.end = make([]byte, 16<<10), 0, 0, 0
	}
	if w.start > 0 {
		w.end = copy(w.buf, w.buf[w.start:w.end])
		w.checked -= w.start
		w.start = 0
	}
	if w.end == len(w.buf) {
		w.buf = append(w.buf, make([]byte, len(w.buf))...)
	}
	n, err := w.r.Read(w.buf[w.end:])
	w.end += n
	if err != nil {
		w.err = err
	}
}

func (w *wireReader) Close() error { return w.r.Close() }

// wireTransport reads the responses of an HTTP server with a wireReader.
type wireTransport struct {
	next  http.RoundTripper
	heard *heard
}

func (t wireTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = newWireReader(resp.Body, t.heard)
	return resp, nil
}

// withFieldOrder returns line with the order of the requested schema's
// fields added where it holds one: a JSON message, or an SSE data line.
func withFieldOrder(line []byte) []byte {
	if !bytes.Contains(line, requestedSchema) {
		return line
	}
	prefix, body := []byte(nil), line
	if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		prefix, body = []byte("data: "), bytes.TrimLeft(rest, " ")
	}
	trimmed := bytes.TrimRight(body, "\r\n")
	end := body[len(trimmed):]
	var v any
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return line
	}
	if !addFieldOrder(v, trimmed, 0) {
		return line
	}
	out, err := json.Marshal(v)
	if err != nil {
		return line
	}
	return append(append(prefix, out...), end...)
}

// addFieldOrder finds the objects of v (raw is v's JSON) that hold a
// requestedSchema with properties, and puts their order in the object's
// _meta; it reports whether it found one.
func addFieldOrder(v any, raw []byte, depth int) bool {
	if depth > 6 {
		return false
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return false
	}
	members := rawMembers(raw)
	found := false
	if schema, ok := members["requestedSchema"]; ok {
		if order := propertyOrder(schema); len(order) > 0 {
			meta, _ := obj["_meta"].(map[string]any)
			if meta == nil {
				meta = map[string]any{}
			}
			meta[fieldOrderKey] = order
			obj["_meta"] = meta
			found = true
		}
	}
	for k, sub := range obj {
		if k == "requestedSchema" || k == "_meta" {
			continue
		}
		if r, ok := members[k]; ok && addFieldOrder(sub, r, depth+1) {
			found = true
		}
	}
	return found
}

// rawMembers are the members of a JSON object, raw; nil for anything else.
func rawMembers(raw []byte) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// propertyOrder is the order of the properties of a schema.
func propertyOrder(schema []byte) []string {
	props, ok := rawMembers(schema)["properties"]
	if !ok {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(props))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var names []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		names = append(names, t.(string))
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil
		}
	}
	return names
}

// orderedSchema is the JSON of a requested schema with its properties in
// order (fields not named by order follow, sorted).
func orderedSchema(schema any, order []string) ([]byte, error) {
	m, ok := schema.(map[string]any)
	props, ok2 := m["properties"].(map[string]any)
	if !ok || !ok2 || len(order) == 0 {
		return json.Marshal(schema)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	member := func(k string, v []byte) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(v)
	}
	for _, k := range sortedNames(m) {
		if k == "properties" {
			continue
		}
		v, err := json.Marshal(m[k])
		if err != nil {
			return nil, err
		}
		member(k, v)
	}
	var pb bytes.Buffer
	pb.WriteByte('{')
	seen := map[string]bool{}
	n := 0
	write := func(k string) error {
		v, err := json.Marshal(props[k])
		if err != nil {
			return err
		}
		if n > 0 {
			pb.WriteByte(',')
		}
		n++
		kb, _ := json.Marshal(k)
		pb.Write(kb)
		pb.WriteByte(':')
		pb.Write(v)
		seen[k] = true
		return nil
	}
	for _, k := range order {
		if _, ok := props[k]; ok && !seen[k] {
			if err := write(k); err != nil {
				return nil, err
			}
		}
	}
	for _, k := range sortedNames(props) {
		if !seen[k] {
			if err := write(k); err != nil {
				return nil, err
			}
		}
	}
	pb.WriteByte('}')
	member("properties", pb.Bytes())
	b.WriteByte('}')
	return b.Bytes(), nil
}

// fieldOrder reads the order the hub recorded in a request's _meta.
func fieldOrder(meta map[string]any) []string {
	raw, _ := meta[fieldOrderKey].([]any)
	var out []string
	for _, v := range raw {
		if s, ok := v.(string); ok && !strings.ContainsRune(s, 0) {
			out = append(out, s)
		}
	}
	return out
}
