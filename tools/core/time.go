package core

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nexuscocreate/nexus/tools"
)

func (t *Tools) currentTimeTool() tools.Tool {
	return tools.Tool{
		Definition: tools.Definition{
			Name:  "get_current_time",
			Title: "Get current time",
			Description: "Get the current date and time, in the local time zone of the machine or in the given " +
				"IANA time zone (\"Europe/Berlin\", \"America/New_York\", \"UTC\"). Returns an ISO 8601 timestamp " +
				"with its UTC offset, Unix seconds, and the time zone's name.",
			InputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"timezone": {"type": "string", "description": "IANA time zone name; default the machine's local zone."}
	},
	"additionalProperties": false
}`),
			OutputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"iso8601": {"type": "string", "description": "The time in RFC 3339 form, with its UTC offset."},
		"unix": {"type": "integer", "description": "Seconds since 1970-01-01 UTC."},
		"timezone": {"type": "string"}
	},
	"required": ["iso8601", "unix", "timezone"],
	"additionalProperties": false
}`),
			Kind:        tools.KindRead,
			Risk:        tools.RiskLow,
			Annotations: readOnly(),
		},
		Handler: t.currentTime,
	}
}

type timeArgs struct {
	Timezone string `json:"timezone"`
}

type timeResult struct {
	ISO8601  string `json:"iso8601"`
	Unix     int64  `json:"unix"`
	Timezone string `json:"timezone"`
}

// timeArgsQuick reads the arguments without encoding/json's reflection in
// the common forms {} and {"timezone":"Name"}; ok is false for anything
// else (spaces, escapes, other fields), which decode handles.
func timeArgsQuick(raw []byte) (a timeArgs, ok bool) {
	if string(raw) == "{}" {
		return a, true
	}
	rest, found := bytes.CutPrefix(raw, []byte(`{"timezone":"`))
	if !found {
		return a, false
	}
	name, found := bytes.CutSuffix(rest, []byte(`"}`))
	if !found || bytes.ContainsAny(name, "\\\"") || !utf8.Valid(name) {
		return a, false
	}
	a.Timezone = string(name)
	return a, true
}

func (t *Tools) currentTime(_ context.Context, _ *tools.Invocation, raw json.RawMessage) (json.RawMessage, error) {
	a, ok := timeArgsQuick(raw)
	if !ok {
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
	}
	now := t.cfg.Now()
	loc, name := time.Local, t.zone
	if a.Timezone != "" && a.Timezone != "Local" {
		l, err := time.LoadLocation(a.Timezone)
		if err != nil {
			return nil, invalidf("unknown timezone %q; use an IANA name such as \"Europe/Berlin\" or \"UTC\"", a.Timezone)
		}
		loc, name = l, l.String()
	}
	now = now.In(loc)
	if name == "" {
		name, _ = now.Zone()
	}
	// Agents ask the time often: the result is written directly rather
	// than through encoding/json's reflection (TestCurrentTimeJSON checks
	// that both agree).
	out := make([]byte, 0, 96)
	out = append(out, `{"iso8601":"`...)
	out = now.AppendFormat(out, time.RFC3339)
	out = append(out, `","unix":`...)
	out = strconv.AppendInt(out, now.Unix(), 10)
	out = append(out, `,"timezone":`...)
	out = appendJSONString(out, name)
	return append(out, '}'), nil
}

// appendJSONString appends s as a JSON string, the way encoding/json
// writes it with HTML escaping off.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			b, _ := marshal(s) // rare: let encoding/json escape it
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// localZoneName is the IANA name of the local time zone, when it can be
// found: from TZ, else from the /etc/localtime link. Empty otherwise.
func localZoneName() string {
	if tz, ok := os.LookupEnv("TZ"); ok {
		tz = strings.TrimPrefix(tz, ":")
		if tz == "" {
			return "UTC"
		}
		if _, err := time.LoadLocation(tz); err == nil {
			return tz
		}
		return ""
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if _, name, ok := strings.Cut(target, "zoneinfo/"); ok {
			return name
		}
	}
	return ""
}
