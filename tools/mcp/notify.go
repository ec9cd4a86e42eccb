//lint:file-ignore SA1019 logging is deprecated only by the draft 2026-07-28 (SEP-2577); the hub speaks 2025-11-25 and before, where it is current.

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What servers say on their own: log messages (notifications/message) and,
// in resources.go, resource updates and list changes.
//
// A server's log messages go to the daemon log under the server's name,
// and on the bus as [LogMessage] (the editor's nexus/log). The hub asks
// each server that declares logging for the daemon's own level
// (logging/setLevel after initialize), so a server at debug only talks
// when the daemon listens at debug. A chatty server is held to logRate
// messages a second (bursts of logBurst): more are dropped, and the daemon
// log says how many. Nothing waits in a queue on the way: the daemon log
// is written at once, and the editor's outbox keeps at most a bounded
// number of pending entries.

// LogMessage is a log message of a server, as the hub publishes it.
type LogMessage struct {
	Server string
	// Level is the MCP level: debug, info, notice, warning, error,
	// critical, alert or emergency.
	Level  string
	Logger string
	// Data is what the server logged, any JSON value; over maxLogData it is
	// a JSON string of its head.
	Data json.RawMessage
	Time time.Time
}

// Text is the message as one string: Data itself when it is a JSON
// string, else its JSON.
func (m LogMessage) Text() string {
	var s string
	if json.Unmarshal(m.Data, &s) == nil {
		return s
	}
	return string(m.Data)
}

// ServerLogMessage is the message of the daemon log's records of servers'
// log messages (the editor gets them as LogMessage, not again as the
// daemon's own warnings).
const ServerLogMessage = "MCP server log"

const (
	// maxLogData bounds the data of one log message.
	maxLogData = 16 << 10
	// logRate and logBurst bound how fast a server may log.
	logRate  = 100
	logBurst = 200
)

// mcpLevel is the MCP level asked of servers for the daemon's level.
func mcpLevel(l slog.Level) mcp.LoggingLevel {
	switch {
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warning"
	}
	return "error"
}

// slogLevel is the daemon log's level of a server's MCP level.
func slogLevel(l string) slog.Level {
	switch l {
	case "debug":
		return slog.LevelDebug
	case "info", "notice":
		return slog.LevelInfo
	case "warning":
		return slog.LevelWarn
	case "error", "critical", "alert", "emergency":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// listen sets the handlers of what a server says on its own (log
// messages, resource updates, resource and prompt list changes); h counts
// the log messages handled.
func (s *server) listen(opts *mcp.ClientOptions, h *heard) {
	opts.LoggingMessageHandler = func(ctx context.Context, req *mcp.LoggingMessageRequest) {
		defer h.handle()
		s.onLog(ctx, req)
	}
	opts.ResourceUpdatedHandler = s.onResourceUpdated
	opts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) { s.listChanged(ListResources) }
	opts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) { s.listChanged(ListPrompts) }
}

// setLogLevel asks a server that declares logging for the daemon's level.
func (s *server) setLogLevel(ctx context.Context, session *mcp.ClientSession) {
	if caps := session.InitializeResult().Capabilities; caps == nil || caps.Logging == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.startupTimeout())
	defer cancel()
	level := mcpLevel(s.hub.opts.LogLevel)
	if err := session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
		s.hub.logger.Warn("MCP server refused logging/setLevel", "server", s.cfg.Name, "level", string(level), "error", err.Error())
	}
}

// onLog takes a server's log message: into the daemon log and onto the
// bus, unless the server goes over its rate.
func (s *server) onLog(ctx context.Context, req *mcp.LoggingMessageRequest) {
	p := req.Params
	if p == nil {
		return
	}
	now := time.Now()
	ok, dropped := s.logs.allow(now)
	if dropped > 0 {
		s.hub.logger.Warn(fmt.Sprintf("MCP server logs faster than %d messages a second: %d of its messages were dropped", logRate, dropped),
			"server", s.cfg.Name)
	}
	if !ok {
		return
	}
	m := LogMessage{Server: s.cfg.Name, Level: clip(string(p.Level), 32), Logger: clip(p.Logger, 256), Data: logData(p.Data), Time: now}
	s.hub.logger.Log(ctx, slogLevel(m.Level), ServerLogMessage, "server", m.Server, "mcpLevel", m.Level, "logger", m.Logger, "data", m.Text())
	if s.hub.opts.Bus.Listened() {
		s.hub.opts.Bus.Publish(m)
	}
}

// logData is the JSON of a log message's data, cut to maxLogData.
func logData(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(fmt.Sprintf("(data that is not JSON: %v)", err))
	}
	if len(data) > maxLogData {
		data, _ = json.Marshal(fmt.Sprintf("%s… (%d bytes)", cutUTF8(string(data), maxLogData), len(data)))
	}
	return data
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cutUTF8(s, n) + "…"
}

// logLimiter is a token bucket of logRate a second, logBurst deep. Its
// zero value is full.
type logLimiter struct {
	mu      sync.Mutex
	started bool
	tokens  float64
	last    time.Time
	dropped int       // not reported yet
	report  time.Time // when drops were last reported during a flood
}

// allow takes a token for a message at now. dropped, when not 0, is how
// many messages were dropped and not yet reported: reported when the
// server slows down again, or once a second while it floods.
func (l *logLimiter) allow(now time.Time) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started {
		l.started, l.tokens, l.last = true, logBurst, now
	}
	l.tokens = min(logBurst, l.tokens+now.Sub(l.last).Seconds()*logRate)
	l.last = now
	if l.tokens >= 1 {
		l.tokens--
		dropped, l.dropped = l.dropped, 0
		return true, dropped
	}
	l.dropped++
	if now.Sub(l.report) >= time.Second {
		dropped, l.dropped, l.report = l.dropped, 0, now
	}
	return false, dropped
}

// A call's answer and the notifications the server sent during it take
// two paths in the go-sdk: the answer wakes the caller at once, the
// notifications wait their turn on the session's handler goroutine. A
// call could return before its own log messages and progress were
// handled, and whoever watched the call (the gateway forwards a server's
// log messages to its client only while the call runs) missed them.
//
// So the hub counts those notifications twice for each session: as the
// wire reader sees them, before the go-sdk does (fieldorder.go), and as
// their handlers finish. A call that got its answer has had every line
// before it read: it waits until as many notifications were handled as
// were read by then, at most until its context or the session ends.

// heard counts a session's log and progress notifications, read off the
// wire and handled. The zero value is ready.
type heard struct {
	read    atomic.Uint64
	handled atomic.Uint64

	wakeMu sync.Mutex
	wake   chan struct{} // closed at the next handled notification; nil when nobody waits
}

// awaitedMethods are the notifications a call waits for.
var awaitedMethods = map[string]func() any{
	"notifications/message":  func() any { return new(mcp.LoggingMessageParams) },
	"notifications/progress": func() any { return new(mcp.ProgressNotificationParams) },
}

// saw counts the awaited notifications msg holds: a line of a stdio
// server, or of an HTTP response or SSE stream.
func (h *heard) saw(msg []byte) {
	if h == nil || !bytes.Contains(msg, []byte(`"notifications/`)) {
		return
	}
	if n := awaitedIn(msg); n > 0 {
		h.read.Add(uint64(n))
	}
}

// awaitedIn is how many of the notifications in msg the go-sdk hands to
// the handlers of awaitedMethods: it is strict where the go-sdk is, so
// that a call never waits for a notification no handler will see.
func awaitedIn(msg []byte) int {
	if rest, ok := bytes.CutPrefix(msg, []byte("data:")); ok {
		msg = rest
	}
	msg = bytes.TrimSpace(msg)
	if len(msg) > 0 && msg[0] == '[' { // a batch, before 2025-06-18
		var batch []json.RawMessage
		if json.Unmarshal(msg, &batch) != nil {
			return 0
		}
		n := 0
		for _, m := range batch {
			n += awaitedIn(m)
		}
		return n
	}
	m, err := jsonrpc.DecodeMessage(msg)
	req, ok := m.(*jsonrpc.Request)
	if err != nil || !ok || req.IsCall() {
		return 0
	}
	params, ok := awaitedMethods[req.Method]
	if !ok || len(req.Params) == 0 || string(req.Params) == "null" || json.Unmarshal(req.Params, params()) != nil {
		return 0
	}
	return 1
}

// handle counts a notification handled, and wakes the calls that wait.
func (h *heard) handle() {
	h.handled.Add(1)
	h.wakeMu.Lock()
	if h.wake != nil {
		close(h.wake)
		h.wake = nil
	}
	h.wakeMu.Unlock()
}

// await waits until every notification read so far has been handled, or
// ctx ends.
func (h *heard) await(ctx context.Context) {
	if h == nil {
		return
	}
	want := h.read.Load()
	for h.handled.Load() < want {
		h.wakeMu.Lock()
		if h.handled.Load() >= want {
			h.wakeMu.Unlock()
			return
		}
		if h.wake == nil {
			h.wake = make(chan struct{})
		}
		wake := h.wake
		h.wakeMu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return
		}
	}
}
