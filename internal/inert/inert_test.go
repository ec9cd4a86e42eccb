package inert

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

func TestEscapes(t *testing.T) {
	for _, tc := range []struct {
		name, in, line, text string
	}{
		{"plain", "go test ./...", "go test ./...", "go test ./..."},
		{"empty", "", "", ""},
		{"unicode letters and emoji", "héllo 世界 👨\u200d👩", "héllo 世界 👨\u200d👩", "héllo 世界 👨\u200d👩"},
		{"backslashes stay", `a\nb \x1b`, `a\nb \x1b`, `a\nb \x1b`},
		{"new line", "a\nb", `a\nb`, "a\nb"},
		{"tab", "a\tb", `a\tb`, "a\tb"},
		{"carriage return", "ok\rrm", `ok\rrm`, `ok\rrm`},
		{"CRLF", "a\r\nb", `a\r\nb`, "a\r\nb"},
		{"CR before CRLF", "a\r\r\nb", `a\r\r\nb`, "a\\r\r\nb"},
		{"ESC CSI erase line", "\x1b[2K\r command: go test", `\x1b[2K\r command: go test`, `\x1b[2K\r command: go test`},
		{"OSC title with BEL", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`, `\x1b]0;pwned\x07`},
		{"NUL and backspace", "a\x00b\bc", `a\x00b\x08c`, `a\x00b\x08c`},
		{"DEL", "a\x7fb", `a\x7fb`, `a\x7fb`},
		{"C1 CSI", "a\u009b2Kb", `a\u009b2Kb`, `a\u009b2Kb`},
		{"C1 NEL", "a\u0085b", `a\u0085b`, `a\u0085b`},
		{"right-to-left override", "ls \u202egnp.exe", `ls \u202egnp.exe`, `ls \u202egnp.exe`},
		{"bidi embeddings and pop", "\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`, `\u202a\u202b\u202c\u202d`},
		{"bidi isolates", "\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`, `\u2066a\u2067b\u2068c\u2069`},
		{"bidi marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`, `\u200e\u200f\u061c`},
		{"zero width space and BOM", "r\u200bm\ufeff", `r\u200bm\ufeff`, `r\u200bm\ufeff`},
		{"tag characters", "a\U000e0041", `a\U000e0041`, `a\U000e0041`},
		{"line and paragraph separators", "a\u2028b\u2029", `a\u2028b\u2029`, `a\u2028b\u2029`},
		{"invalid UTF-8", "a\xffb\xe2\x80", `a\xffb\xe2\x80`, `a\xffb\xe2\x80`},
		{"a valid replacement character stays", "a\ufffdb", "a\ufffdb", "a\ufffdb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line(tc.in); got != tc.line {
				t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
			}
			if got := Text(tc.in); got != tc.text {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
			}
			if Clean(tc.in, false) != (tc.in == tc.line) || Clean(tc.in, true) != (tc.in == tc.text) {
				t.Errorf("Clean(%q) disagrees with Line and Text", tc.in)
			}
		})
	}
}

// TestEveryCharacter: what Line leaves has no control, no format character
// but the joiners, no separator, and is valid UTF-8; escaping twice
// changes nothing.
func TestEveryCharacter(t *testing.T) {
	for r := rune(0); r <= 0x10ffff; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		s := string(r)
		out := Line(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Line(%U) = %q: not UTF-8", r, out)
		}
		for _, o := range out {
			if needsEscape(o, false) {
				t.Fatalf("Line(%U) = %q keeps %U", r, out, o)
			}
		}
		if Line(out) != out || Text(out) != out {
			t.Fatalf("Line(%U) = %q is escaped again", r, out)
		}
	}
}

// TestJSON: a JSON text is made inert with JSON escapes, and decodes to
// the same value.
func TestJSON(t *testing.T) {
	in := "{\"a\":\"\\u001b[2K\u009b\u202e\x7f\U000e0041 ok\",\"b\":[1,\"\xff\"]}"
	want := `{"a":"\u001b[2K\u009b\u202e\u007f\udb40\udc41 ok","b":[1,"\ufffd"]}`
	got := JSON([]byte(in))
	if string(got) != want {
		t.Fatalf("JSON(%q) = %s, want %s", in, got, want)
	}
	var a, b any
	if err := json.Unmarshal([]byte(in), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("decoded %v, want %v", b, a)
	}
	if plain := []byte(`{"a":"plain"}`); string(JSON(plain)) != string(plain) {
		t.Errorf("a clean JSON text changed")
	}
}
