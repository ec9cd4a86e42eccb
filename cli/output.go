package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"text/tabwriter"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/nexuscocreate/nexus/internal/inert"
)

// output prints a response: as one JSON line with --json, else with human.
func (e *env) output(m proto.Message, human func(w io.Writer) error) error {
	if e.json {
		return e.printJSON(m)
	}
	return human(e.stdout)
}

// printJSON prints m as one line of JSON with the JSON field names of the
// proto (camelCase) and its zero values, so every response of a kind has the
// same keys.
func (e *env) printJSON(m proto.Message) error {
	b, err := protojson.MarshalOptions{EmitDefaultValues: true}.Marshal(m)
	if err != nil {
		return err
	}
	return e.writeJSONLine(b)
}

// writeJSONLine writes b compacted, with a newline. protojson varies its
// whitespace on purpose; compacting makes the output stable. What a model,
// server or app wrote is in its strings: every character a terminal would
// act on is written as a JSON escape (inert.JSON), which a parser reads
// the same.
func (e *env) writeJSONLine(b []byte) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return err
	}
	out := append(inert.JSON(buf.Bytes()), '\n')
	_, err := e.stdout.Write(out)
	return err
}

// newTable returns a writer that aligns tab-separated columns; flush it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}
