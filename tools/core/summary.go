package core

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nexuscocreate/nexus/internal/inert"
	"github.com/nexuscocreate/nexus/tools"
)

// Summary is a tool call in one line of words, as a chat shows it: what
// the call does while it waits or runs ("Write notes.txt"), what it did
// once it completed ("Wrote notes.txt, 5 bytes", "Ran `go test ./...`:
// exit 0, 312 lines"), or why it failed. A core tool's line reads its
// arguments and result; another tool's (an MCP server's) is generic
// ("Called github/create_issue"). Every door shows this one line (the
// ACP title of the call), so that the editor, nexus chat and an ACP
// editor say the same.
//
// The arguments and result are the caller's and the tool's: the line
// quotes them cut short and on one line, but the doors still show it
// inert.
func Summary(c tools.Call) string {
	// It quotes arguments and results, which a model, an app or a file
	// controls, and every door shows it (an ACP editor as the call's
	// title): one inert line, made so once here (inert.Line keeps an
	// inert line as it is).
	return inert.Line(summaryOf(c))
}

// summaryOf is [Summary] before it is made inert.
func summaryOf(c tools.Call) string {
	name := c.ToolName
	if c.ServerName != "" {
		name = c.ServerName + "/" + c.ToolName
	}
	var s summary
	if c.ServerName == "" {
		s = coreSummary(c.ToolName, c.ArgumentsJSON, c.ResultJSON)
	}
	if s.doing == "" {
		s = summary{doing: "Call " + name, done: "Called " + name}
	}
	switch {
	case c.Error != nil:
		how := "failed"
		switch c.Error.Code {
		case tools.CodePermissionDenied:
			how = "declined"
		case tools.CodeCancelled:
			return s.doing + ": cancelled" // by the person: no more to say
		}
		if msg := shortLine(c.Error.Message, 100); msg != "" {
			how += " (" + msg + ")"
		}
		return s.doing + ": " + how
	case c.Status == tools.StatusCompleted:
		if c.ResultTruncated || s.done == "" {
			return s.doing + ": done"
		}
		return s.done
	}
	return s.doing
}

// summary is a call's line while it waits or runs, and once it completed
// (empty when the result says nothing more).
type summary struct{ doing, done string }

// coreSummary reads a core tool's arguments and result; the zero summary
// when the tool is not one or its arguments do not parse (they were cut,
// or invalid: the call fails on them).
func coreSummary(tool string, args, result json.RawMessage) summary {
	var a struct {
		Path      string   `json:"path"`
		Command   string   `json:"command"`
		Argv      []string `json:"argv"`
		Pattern   string   `json:"pattern"`
		Glob      string   `json:"glob"`
		Recursive bool     `json:"recursive"`
	}
	if json.Unmarshal(args, &a) != nil {
		return summary{}
	}
	path := shortLine(a.Path, 80)
	dir := path
	if dir == "" {
		dir = "."
	}
	switch tool {
	case "read_file":
		var r readResult
		s := summary{doing: "Read " + path}
		if json.Unmarshal(result, &r) == nil {
			if r.StartLine > 1 || r.EndLine < r.TotalLines || r.Truncated {
				s.done = fmt.Sprintf("Read %s, lines %d–%d of %d", path, r.StartLine, r.EndLine, r.TotalLines)
			} else {
				s.done = fmt.Sprintf("Read %s, %s", path, count(r.TotalLines, "line"))
			}
		}
		return s
	case "write_file":
		var r writeResult
		s := summary{doing: "Write " + path}
		if json.Unmarshal(result, &r) == nil {
			s.done = fmt.Sprintf("Wrote %s, %s", path, count(r.BytesWritten, "byte"))
		}
		return s
	case "edit_file":
		var r editResult
		s := summary{doing: "Edit " + path}
		if json.Unmarshal(result, &r) == nil {
			s.done = fmt.Sprintf("Edited %s, %s", path, count(r.Replacements, "replacement"))
		}
		return s
	case "execute_command":
		cmd := a.Command
		if cmd == "" {
			cmd = strings.Join(a.Argv, " ")
		}
		cmd = "`" + shortLine(cmd, 60) + "`"
		var r executeResult
		s := summary{doing: "Run " + cmd}
		if json.Unmarshal(result, &r) == nil {
			how := fmt.Sprintf("exit %d", r.ExitCode)
			switch {
			case r.TimedOut:
				how = "timed out"
			case r.Signal != "":
				how = "killed by " + shortLine(r.Signal, 20)
			}
			s.done = fmt.Sprintf("Ran %s: %s, %s", cmd, how, count(lines(r.Stdout)+lines(r.Stderr), "line"))
		}
		return s
	case "list_directory":
		how := ""
		if a.Recursive {
			how = " recursively"
		}
		var r listResult
		s := summary{doing: "List " + dir + how}
		if json.Unmarshal(result, &r) == nil {
			s.done = fmt.Sprintf("Listed %s%s, %s", dir, how, count(len(r.Entries), "entry"))
			if r.Truncated {
				s.done += " (cut)"
			}
		}
		return s
	case "search_files":
		what := fmt.Sprintf("%q", shortLine(a.Pattern, 60))
		if a.Pattern == "" {
			what = "files " + shortLine(a.Glob, 60)
		} else if a.Glob != "" {
			what += " in " + shortLine(a.Glob, 40)
		}
		if path != "" && path != "." {
			what += " under " + path
		}
		var r searchResult
		s := summary{doing: "Search for " + what}
		if json.Unmarshal(result, &r) == nil {
			n := count(len(r.Matches), "match")
			if len(r.Matches) == 0 && len(r.Files) > 0 {
				n = count(len(r.Files), "file")
			}
			if r.Truncated {
				n += " (cut)"
			}
			s.done = fmt.Sprintf("Searched for %s: %s", what, n)
		}
		return s
	case "get_current_time":
		var r timeResult
		s := summary{doing: "Get the time"}
		if json.Unmarshal(result, &r) == nil && r.ISO8601 != "" {
			s.done = "Got the time: " + shortLine(r.ISO8601, 40)
		}
		return s
	}
	return summary{}
}

// count is "1 line", "3 lines", "2 matches".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	switch {
	case strings.HasSuffix(noun, "ch"):
		noun += "es"
	case strings.HasSuffix(noun, "ry"):
		noun = strings.TrimSuffix(noun, "y") + "ies"
	default:
		noun += "s"
	}
	return fmt.Sprintf("%d %s", n, noun)
}

// lines is how many lines s has (a last line without a newline counts).
func lines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// shortLine is s's first line, cut to max runes; "…" marks what was left
// out.
func shortLine(s string, max int) string {
	s = strings.TrimSpace(s)
	line, rest, more := strings.Cut(s, "\n")
	line = strings.TrimRight(line, "\r")
	if r := []rune(line); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	if more && strings.TrimSpace(rest) != "" {
		return line + " …"
	}
	return line
}
