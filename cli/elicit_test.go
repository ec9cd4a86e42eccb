package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

const testForm = `{"type":"object","properties":{
	"name":{"type":"string","title":"Name","default":"John Doe"},
	"age":{"type":"integer","minimum":0,"maximum":150,"default":30},
	"status":{"type":"string","enum":["active","inactive"],"enumNames":["Active","Inactive"],"default":"active"},
	"colour":{"type":"string","oneOf":[{"const":"r","title":"Red"},{"const":"g","title":"Green"}]},
	"tags":{"type":"array","items":{"anyOf":[{"const":"a","title":"Alpha"},{"const":"b","title":"Beta"}]}},
	"verified":{"type":"boolean","default":true},
	"email":{"type":"string","format":"email","minLength":3}
},"required":["email"]}`

// TestTerminalForm: a form asked field by field, in the schema's order;
// Enter takes the default, choices by number or value, bad input asked
// again.
func TestTerminalForm(t *testing.T) {
	q, err := newQuestion("q1", "srv", "the call x", "form", "Who are you?", json.RawMessage(testForm), "")
	if err != nil {
		t.Fatal(err)
	}
	var w bytes.Buffer
	q.show(&w)
	for _, line := range []string{
		"y",         // fill in the form
		"",          // name: the default
		"200", "41", // age: out of range, then 41
		"",       // status: the default
		"3", "2", // colour: no third choice, then Green
		"1, beta",    // tags
		"maybe", "n", // verified
		"", "x", "a@b.c", // email: required, too short, then given
	} {
		if q.done() {
			t.Fatalf("done before %q", line)
		}
		q.feed(line, false, &w)
	}
	if !q.done() || q.action != "accept" {
		t.Fatalf("action %q after the fields\n%s", q.action, w.String())
	}
	want := `{"age":41,"colour":"g","email":"a@b.c","name":"John Doe","status":"active","tags":["a","b"],"verified":false}`
	if got := q.contentJSON(); got != want {
		t.Errorf("content %s, want %s", got, want)
	}
	out := w.String()
	for _, s := range []string{
		"MCP server srv asks (during the call x):", "Who are you?",
		"Name [John Doe]: ", "age (integer 0–150) [30]: ", "status: 1) Active  2) Inactive [active]: ",
		"colour: 1) Red  2) Green: ", `"3" is not one of the choices`, "200 is not between 0 and 150",
		"tags (one or more, by number or value, separated by commas): 1) Alpha  2) Beta: ",
		"verified (y/n) [y]: ", "answer y or n", "email (email; required): ", "email is required", "1 characters: want 3 to any",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("the terminal lacks %q:\n%s", s, out)
		}
	}
}

func TestTerminalQuestionAnswers(t *testing.T) {
	for _, c := range []struct {
		mode, line string
		eof        bool
		want       string
	}{
		{"form", "n", false, "decline"},
		{"form", "c", false, "cancel"},
		{"form", "", true, "decline"},
		{"url", "y", false, "accept"},
		{"url", "n", false, "decline"},
	} {
		q, err := newQuestion("q", "srv", "", c.mode, "Sign in", json.RawMessage(testForm), "https://example.com")
		if err != nil {
			t.Fatal(err)
		}
		var w bytes.Buffer
		q.show(&w)
		q.feed(c.line, c.eof, &w)
		if q.action != c.want || q.contentJSON() != "" {
			t.Errorf("%s %q: action %q content %q, want %s", c.mode, c.line, q.action, q.contentJSON(), c.want)
		}
		if c.mode == "url" && !strings.Contains(w.String(), "https://example.com") {
			t.Errorf("the address is not shown:\n%s", w.String())
		}
	}
}
