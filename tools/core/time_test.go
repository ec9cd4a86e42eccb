package core

import (
	"encoding/json"
	"testing"
	"time"
	_ "time/tzdata" // the zones, wherever the test runs

	"github.com/nexuscocreate/nexus/tools"
)

func TestCurrentTime(t *testing.T) {
	e := newEnv(t) // the clock says 2025-03-04T05:06:07Z
	unix := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC).Unix()
	tests := []struct {
		zone string
		want timeResult
	}{
		{"UTC", timeResult{ISO8601: "2025-03-04T05:06:07Z", Unix: unix, Timezone: "UTC"}},
		{"Europe/Berlin", timeResult{ISO8601: "2025-03-04T06:06:07+01:00", Unix: unix, Timezone: "Europe/Berlin"}},
		{"America/New_York", timeResult{ISO8601: "2025-03-04T00:06:07-05:00", Unix: unix, Timezone: "America/New_York"}},
		{"Asia/Kolkata", timeResult{ISO8601: "2025-03-04T10:36:07+05:30", Unix: unix, Timezone: "Asia/Kolkata"}},
	}
	for _, tt := range tests {
		var got timeResult
		e.mustCall("get_current_time", map[string]any{"timezone": tt.zone}, &got)
		if got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.zone, got, tt.want)
		}
	}

	var got timeResult
	e.mustCall("get_current_time", map[string]any{}, &got)
	at, err := time.Parse(time.RFC3339, got.ISO8601)
	if err != nil || at.Unix() != unix || got.Unix != unix || got.Timezone == "" {
		t.Errorf("local time: %+v, %v", got, err)
	}

	for _, zone := range []string{"Mars/Olympus_Mons", "../../etc/passwd", "/etc/localtime"} {
		_, err := e.call("get_current_time", map[string]any{"timezone": zone})
		wantCode(t, err, tools.CodeInvalidArguments, `unknown timezone "`+zone+`"`)
	}
}

// TestCurrentTimeJSON checks the hand-written result against
// encoding/json, for ordinary zone names and for names that need escaping.
func TestCurrentTimeJSON(t *testing.T) {
	for _, name := range []string{"UTC", "Europe/Berlin", "Etc/GMT+5", `odd"name\`, "<zone>&", "Zürich", "tab\there", "\x01"} {
		got := appendJSONString(nil, name)
		want, err := marshal(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%q: got %s, encoding/json writes %s", name, got, want)
		}
	}
	e := newEnv(t)
	out, err := e.call("get_current_time", map[string]any{"timezone": "Asia/Kolkata"})
	if err != nil {
		t.Fatal(err)
	}
	var r timeResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	want, _ := marshal(r)
	if string(out) != string(want) {
		t.Errorf("result %s, encoding/json writes %s", out, want)
	}
}

// The quick reading of the arguments agrees with encoding/json wherever it
// answers.
func TestTimeArgsQuick(t *testing.T) {
	for _, raw := range []string{`{}`, `{"timezone":"UTC"}`, `{"timezone":"Europe/Berlin"}`, `{"timezone":""}`,
		`{"timezone":"a\"b"}`, `{"timezone":"\u0055TC"}`, `{ "timezone": "UTC" }`, `{"timezone":"UTC","x":1}`,
		`{"timezone":"Zürich"}`, `{"timezone":"UTC"}x`, `{"timezone":"x"}"}`, "{\"timezone\":\"\xff\"}"} {
		got, ok := timeArgsQuick([]byte(raw))
		if !ok {
			continue
		}
		var want timeArgs
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Errorf("%s: quick reads %+v, encoding/json fails: %v", raw, got, err)
		} else if got != want {
			t.Errorf("%s: quick reads %+v, encoding/json %+v", raw, got, want)
		}
	}
}
