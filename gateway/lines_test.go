package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func TestGuardLines(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`this is not JSON`,
		``,
		`   `,
		`{"jsonrpc":"1.0","id":"a","method":"ping"}`,
		`42`,
		`[]`,
		`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"nope":1}]`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":{"x":1},"bogus":true}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, // the last line, without a newline
	}, "\n")
	var out bytes.Buffer
	r, _ := GuardLines(strings.NewReader(in), &out)
	// The session reads in small pieces, as a decoder may.
	got, err := io.ReadAll(io.LimitReader(struct{ io.Reader }{r}, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" +
		`[{"jsonrpc":"2.0","id":2,"method":"ping"}]` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}` + "\n"
	if string(got) != want {
		t.Errorf("the session read\n%s\nwant\n%s", got, want)
	}
	type answer struct {
		ID    any `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	var answers []answer
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var a answer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("answer %q: %v", line, err)
		}
		answers = append(answers, a)
	}
	wantCodes := []struct {
		id   any
		code int
		part string
	}{
		{nil, -32700, "not JSON"},
		{"a", -32600, "version"},
		{nil, -32600, "Invalid Request"},
		{nil, -32600, "empty batch"},
		{nil, -32600, "a message of the batch"},
		{nil, -32600, "Invalid Request"}, // an id that is an object is not echoed
	}
	if len(answers) != len(wantCodes) {
		t.Fatalf("answers %s, want %d", out.String(), len(wantCodes))
	}
	for i, w := range wantCodes {
		a := answers[i]
		if a.ID != w.id || a.Error.Code != w.code || !strings.Contains(a.Error.Message, w.part) {
			t.Errorf("answer %d: %+v, want id %v, code %d, %q", i, a, w.id, w.code, w.part)
		}
	}
}

func TestGuardLinesTooLong(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"` + strings.Repeat("a", maxLine) + `"}}`
	in := long + "\n" + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"
	var out bytes.Buffer
	r, _ := GuardLines(strings.NewReader(in), &out)
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n" {
		t.Errorf("the session read %.200q", got)
	}
	if !strings.Contains(out.String(), `"code":-32600`) || !strings.Contains(out.String(), "longer than 64 MiB") {
		t.Errorf("answer %q", out.String())
	}
}
