package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp"
)

// The JSON shapes of the editor protocol: those of the matching gRPC
// messages in their JSON form (proto3 JSON names; JSON strings for the
// *Json fields; RFC 3339 times; empty fields left out).

type toolCallWire struct {
	ToolCallID    string           `json:"toolCallId"`
	ToolName      string           `json:"toolName"`
	ServerName    string           `json:"serverName,omitempty"`
	ArgumentsJSON string           `json:"argumentsJson"`
	Status        string           `json:"status"`
	ResultJSON    string           `json:"resultJson,omitempty"`
	Error         *tools.CallError `json:"error,omitempty"`
	AppID         string           `json:"appId,omitempty"`
	Author        string           `json:"author,omitempty"`
	TaskID        string           `json:"taskId,omitempty"`
	RequestID     string           `json:"requestId,omitempty"`
	Session       string           `json:"session,omitempty"`
	Turn          string           `json:"turn,omitempty"`
	Title         string           `json:"title,omitempty"`
	Kind          string           `json:"kind,omitempty"`
	StartedAt     time.Time        `json:"startedAt"`
	EndedAt       *time.Time       `json:"endedAt,omitempty"`
	Progress      *tools.Progress  `json:"progress,omitempty"`
	ICERC         *tools.ICERC     `json:"icerc,omitempty"`

	// What the daemon keeps of a call is cut (tools.Call).
	ArgumentsTruncated bool `json:"argumentsTruncated,omitempty"`
	ArgumentsSize      int  `json:"argumentsSize,omitempty"`
	ResultTruncated    bool `json:"resultTruncated,omitempty"`
	ResultSize         int  `json:"resultSize,omitempty"`
}

func toolCallJSON(c tools.Call) *toolCallWire {
	w := &toolCallWire{ToolCallID: c.ID, ToolName: c.ToolName, ServerName: c.ServerName, ArgumentsJSON: string(c.ArgumentsJSON),
		Status: c.Status, ResultJSON: string(c.ResultJSON), Error: c.Error, AppID: c.AppID, Author: c.Author, TaskID: c.TaskID,
		RequestID: c.RequestID, Session: c.Session, Turn: c.Turn, Title: c.Title, Kind: string(c.Kind), StartedAt: c.StartedAt, Progress: c.Progress, ICERC: c.ICERC,
		ArgumentsTruncated: c.ArgumentsTruncated, ArgumentsSize: c.ArgumentsSize, ResultTruncated: c.ResultTruncated, ResultSize: c.ResultSize}
	if !c.EndedAt.IsZero() {
		w.EndedAt = &c.EndedAt
	}
	return w
}

type definitionChangeWire struct {
	Path      string    `json:"path"`
	Revision  string    `json:"revision"`
	Author    string    `json:"author"`
	Change    string    `json:"change"`
	Message   string    `json:"message,omitempty"`
	Timestamp time.Time `json:"timestamp"`
}

func definitionChangeJSON(c state.DefinitionChange) definitionChangeWire {
	return definitionChangeWire{Path: c.Path, Revision: c.Revision, Author: c.Author, Change: changeName(c.Change),
		Message: strings.TrimSuffix(c.Message, "\n"), Timestamp: c.Time}
}

// changeName is the ChangeType of the gRPC messages.
func changeName(c state.ChangeType) string {
	switch c {
	case state.Added:
		return "ADDED"
	case state.Modified:
		return "MODIFIED"
	case state.Deleted:
		return "DELETED"
	}
	return "CHANGE_UNSPECIFIED"
}

type runtimeChangeWire struct {
	Namespace string    `json:"namespace"`
	Key       string    `json:"key"`
	Change    string    `json:"change"`
	Value     string    `json:"value,omitempty"`
	Timestamp time.Time `json:"timestamp"`
}

func runtimeChangeJSON(c state.RuntimeChange) runtimeChangeWire {
	return runtimeChangeWire{Namespace: c.Namespace, Key: c.Key, Change: c.Change, Value: c.Value, Timestamp: c.Time}
}

type mcpServerWire struct {
	Name      string    `json:"name"`
	State     string    `json:"state"`
	Transport string    `json:"transport,omitempty"`
	Source    string    `json:"source,omitempty"`
	ToolCount int       `json:"toolCount"`
	Error     string    `json:"error,omitempty"`
	Restarts  int       `json:"restarts,omitempty"`
	Since     time.Time `json:"since"`
	Lazy      bool      `json:"lazy,omitempty"`
	PID       int       `json:"pid,omitempty"`
	// Launch is what the entry runs and Pin its hash, what the person
	// approves; Trusted is true once they did.
	Launch  mcp.Launch `json:"launch"`
	Pin     string     `json:"pin"`
	Trusted bool       `json:"trusted"`
}

func mcpServerJSON(st mcp.Status) mcpServerWire {
	return mcpServerWire{Name: st.Name, State: st.State, Transport: st.Transport, Source: st.Source, ToolCount: st.Tools,
		Error: st.Error, Restarts: st.Restarts, Since: st.Since, Lazy: st.Lazy, PID: st.PID,
		Launch: st.Launch, Pin: st.Pin, Trusted: st.Trusted}
}

type logWire struct {
	Source    string            `json:"source,omitempty"`
	Level     string            `json:"level"`
	Message   string            `json:"message"`
	AppID     string            `json:"appId,omitempty"`
	TaskID    string            `json:"taskId,omitempty"`
	RequestID string            `json:"requestId,omitempty"`
	Context   map[string]string `json:"context,omitempty"`
	Time      time.Time         `json:"time"`
	// An MCP server's log message (source "mcp"): the server, its logger,
	// and the data it logged (any JSON; message is its text). Level is the
	// MCP level: debug, info, notice, warning, error, critical, alert,
	// emergency.
	Server string          `json:"server,omitempty"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
}

func mcpLogJSON(m mcp.LogMessage) logWire {
	return logWire{Source: "mcp", Level: m.Level, Message: m.Text(), Time: m.Time, Server: m.Server, Logger: m.Logger, Data: m.Data}
}

func logJSON(l events.Log) logWire {
	return logWire{Source: l.Source, Level: strings.ToLower(l.Level), Message: l.Message, AppID: l.AppID, TaskID: l.TaskID,
		RequestID: l.RequestID, Context: l.Context, Time: l.Time}
}

// LSP's MessageType.
const (
	messageError   = 1
	messageWarning = 2
	messageInfo    = 3
	messageLog     = 4
)

type logMessageWire struct {
	Type    int    `json:"type"`
	Message string `json:"message"`
}

func logMessageJSON(l events.Log) logMessageWire {
	t := messageLog
	switch strings.ToUpper(l.Level) {
	case "ERROR":
		t = messageError
	case "WARN", "WARNING":
		t = messageWarning
	case "INFO":
		t = messageInfo
	}
	who := l.Source
	if l.AppID != "" {
		who = "app " + l.AppID
	}
	msg := l.Message
	if who != "" {
		msg = "[" + who + "] " + msg
	}
	return logMessageWire{Type: t, Message: msg}
}

// workDoneProgress is LSP's WorkDoneProgressBegin/Report/End.
type workDoneProgress struct {
	Kind        string   `json:"kind"`
	Title       string   `json:"title,omitempty"`
	Cancellable bool     `json:"cancellable,omitempty"`
	Message     string   `json:"message,omitempty"`
	Percentage  *float64 `json:"percentage,omitempty"`
}

type progressParams struct {
	Token json.RawMessage   `json:"token"`
	Value *workDoneProgress `json:"value"`
}

// LogHandler wraps a log handler so that the daemon's warnings and errors
// also reach the editor (nexus/log and window/logMessage) through the bus,
// except MCP servers' log messages, which the hub publishes itself.
func LogHandler(next slog.Handler, bus *events.Bus) slog.Handler {
	return &logTee{next: next, bus: bus}
}

type logTee struct {
	next  slog.Handler
	bus   *events.Bus
	attrs []slog.Attr
}

// Enabled is true for warnings whatever the log's own level: the editor
// gets them even when the log file does not.
func (h *logTee) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h *logTee) Handle(ctx context.Context, r slog.Record) error {
	// An MCP server's own log messages reach the editor from the hub, as
	// they are (mcp.LogMessage).
	if r.Level >= slog.LevelWarn && h.bus.Listened() && r.Message != mcp.ServerLogMessage {
		fields := map[string]string{}
		add := func(a slog.Attr) bool {
			if a.Key != "" {
				fields[a.Key] = a.Value.String()
			}
			return true
		}
		for _, a := range h.attrs {
			add(a)
		}
		r.Attrs(add)
		if len(fields) == 0 {
			fields = nil
		}
		h.bus.Publish(events.Log{Source: "nexusd", Level: r.Level.String(), Message: r.Message, Context: fields, Time: r.Time})
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	return h.next.Handle(ctx, r)
}

func (h *logTee) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logTee{next: h.next.WithAttrs(attrs), bus: h.bus, attrs: append(h.attrs[:len(h.attrs):len(h.attrs)], attrs...)}
}

func (h *logTee) WithGroup(name string) slog.Handler {
	return &logTee{next: h.next.WithGroup(name), bus: h.bus, attrs: h.attrs}
}
