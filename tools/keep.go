package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// What the manager keeps of a call is bounded in bytes, whatever the caller
// sent or the tool returned: the copies on the bus (and so the editor's
// notifications and WatchToolCalls), the recent calls (ListToolCalls), the
// audit log. The arguments and the result are kept up to KeptSize bytes
// each; beyond that, what is kept is a JSON string holding the head of
// their text, with the call's ArgumentsTruncated or ResultTruncated set and
// the whole size in ArgumentsSize or ResultSize. Texts (an error message,
// the ICERC record, a progress message) are cut to KeptSize bytes with a
// note of their whole size. The handler gets the whole arguments, and the
// caller of Execute the whole result.

// KeptSize is the most bytes of a call's arguments, and of its result, that
// the manager keeps once the call has started.
const KeptSize = 64 << 10

// maxIDSize bounds the names and ids a caller gives a call: tool name,
// server name, task id, request id.
const maxIDSize = 1 << 10

// keepJSON returns raw when it is at most limit bytes. Otherwise it returns
// a JSON string, at most limit bytes long, holding the head of raw's text
// cut at a UTF-8 boundary, and true.
func keepJSON(raw json.RawMessage, limit int) (json.RawMessage, bool) {
	if len(raw) <= limit {
		return raw, false
	}
	return appendJSONHead(make([]byte, 0, limit), raw, limit), true
}

// appendJSONHead appends to b a JSON string of the longest head of text
// whose encoding, quotes included, fits in limit bytes (at least "").
func appendJSONHead(b []byte, text []byte, limit int) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	room := limit - 2 // the two quotes
	for i := 0; i < len(text) && room > 0; {
		// A run of bytes that need no escaping, copied at once.
		j := i
		for j < len(text) && j-i < room && text[j] >= 0x20 && text[j] < utf8.RuneSelf && text[j] != '"' && text[j] != '\\' {
			j++
		}
		b = append(b, text[i:j]...)
		room -= j - i
		if i = j; i == len(text) || room == 0 {
			break
		}
		var esc [6]byte
		var enc []byte
		size := 1
		switch c := text[i]; {
		case c == '"' || c == '\\':
			enc = append(esc[:0], '\\', c)
		case c == '\n':
			enc = append(esc[:0], '\\', 'n')
		case c == '\r':
			enc = append(esc[:0], '\\', 'r')
		case c == '\t':
			enc = append(esc[:0], '\\', 't')
		case c < 0x20:
			enc = append(esc[:0], '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			r, n := utf8.DecodeRune(text[i:])
			size = n
			switch {
			case r == utf8.RuneError && n == 1:
				enc = append(esc[:0], `\ufffd`...)
			case r == '\u2028' || r == '\u2029':
				enc = append(esc[:0], '\\', 'u', '2', '0', '2', hex[r&0xf])
			default:
				enc = text[i : i+n]
			}
		}
		if len(enc) > room {
			break
		}
		b = append(b, enc...)
		room -= len(enc)
		i += size
	}
	return append(b, '"')
}

// keepText returns s when it is at most limit bytes, or its head cut at a
// UTF-8 boundary with a note of its whole size, limit bytes in all.
func keepText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	note := fmt.Sprintf("… (cut: %s in all)", formatSize(len(s)))
	n := max(0, limit-len(note))
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + note
}

// keepICERC bounds the record a call keeps: each text at most KeptSize
// bytes, and the details together at most KeptSize bytes.
func keepICERC(r ICERC) ICERC {
	r.Intent = keepText(r.Intent, KeptSize)
	r.Command = keepText(r.Command, KeptSize)
	r.ExpectedOutcome = keepText(r.ExpectedOutcome, KeptSize)
	r.Risk.Scope = keepText(r.Risk.Scope, KeptSize)
	room := KeptSize
	for i, d := range r.Risk.Details {
		if len(d) > room {
			details := make([]string, i, i+1)
			copy(details, r.Risk.Details)
			r.Risk.Details = append(details, fmt.Sprintf("… (%d more details cut)", len(r.Risk.Details)-i))
			break
		}
		room -= len(d)
	}
	r.Changes = keepChanges(r.Changes)
	return r
}

// WithoutContents returns r with its changes' diffs only: the contents
// (Before, After) are for the question to the person, not for every copy
// of the call.
func (r ICERC) WithoutContents() ICERC {
	if len(r.Changes) == 0 {
		return r
	}
	changes := make([]ProposedChange, len(r.Changes))
	for i, c := range r.Changes {
		c.Before, c.After = nil, nil
		changes[i] = c
	}
	r.Changes = changes
	return r
}

// keepChanges bounds the proposed changes a call keeps: their diffs, at
// most KeptSize bytes together, and not the contents, which only the
// question carries.
func keepChanges(changes []ProposedChange) []ProposedChange {
	if len(changes) == 0 {
		return nil
	}
	out := make([]ProposedChange, len(changes))
	room := KeptSize
	for i, c := range changes {
		c.Before, c.After = nil, nil
		c.Path = keepText(c.Path, maxIDSize)
		if len(c.Diff) > room {
			n := room
			for n > 0 && !utf8.RuneStart(c.Diff[n]) {
				n--
			}
			if i := strings.LastIndexByte(c.Diff[:n], '\n'); i >= 0 {
				n = i + 1 // whole lines
			}
			c.Diff, c.Truncated = c.Diff[:n], true
		}
		room -= len(c.Diff)
		out[i] = c
	}
	return out
}

// Stripped returns c without the text of its arguments and result: each
// is an empty JSON string, marked truncated, with its whole size. It is
// what a queue past its bound in bytes keeps of a call.
func (c Call) Stripped() Call {
	if len(c.ArgumentsJSON) > 0 {
		if !c.ArgumentsTruncated {
			c.ArgumentsSize = len(c.ArgumentsJSON)
		}
		c.ArgumentsJSON, c.ArgumentsTruncated = json.RawMessage(`""`), true
	}
	if len(c.ResultJSON) > 0 {
		if !c.ResultTruncated {
			c.ResultSize = len(c.ResultJSON)
		}
		c.ResultJSON, c.ResultTruncated = json.RawMessage(`""`), true
	}
	return c
}

// keptBytes is roughly what a kept call holds beyond its fixed fields.
func keptBytes(c *Call) int {
	n := len(c.ArgumentsJSON) + len(c.ResultJSON)
	for _, note := range c.Notes {
		n += len(note)
	}
	if c.Error != nil {
		n += len(c.Error.Message)
	}
	if r := c.ICERC; r != nil {
		n += len(r.Intent) + len(r.Command) + len(r.ExpectedOutcome) + len(r.Risk.Scope)
		for _, d := range r.Risk.Details {
			n += len(d)
		}
		for _, ch := range r.Changes {
			n += len(ch.Path) + len(ch.Diff)
		}
	}
	return n
}

// formatSize writes n bytes for a person: "512 bytes", "64.0 KiB", "30.0 MiB".
func formatSize(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
