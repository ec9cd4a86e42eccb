package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"go.lsp.dev/jsonrpc2"

	"github.com/nexuscocreate/nexus/checkpoints"
	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/mcp"
)

// The notifications nexusd sends to the editor.
const (
	notifyToolCall          = "nexus/toolCall"
	notifyDefinitionChanged = "nexus/definitionChanged"
	notifyRuntimeChanged    = "nexus/runtimeChanged"
	notifyMCPServerStatus   = "nexus/mcpServerStatus"
	notifyLog               = "nexus/log"
	notifyLogMessage        = "window/logMessage"
	notifyProgress          = "$/progress"
	notifyAgentUpdate       = "nexus/agent/update"
	// notifyCheckpointsChanged: checkpoints were added, undone, redone or
	// pruned; list them again.
	notifyCheckpointsChanged = "nexus/checkpointsChanged"
)

var notificationNames = []string{notifyToolCall, notifyDefinitionChanged, notifyRuntimeChanged,
	notifyMCPServerStatus, notifyLog, notifyLogMessage, notifyProgress, notifyAgentUpdate,
	notifyMCPResourceUpdated, notifyMCPListChanged, notifyCheckpointsChanged}

// maxPendingLogs bounds the log entries waiting for a slow editor; more are
// dropped and counted.
const maxPendingLogs = 1000

// outKind orders nothing; it keeps the keys of different things apart.
type outKind uint8

const (
	outCall outKind = iota
	outDefinition
	outRuntime
	outMCP
	outLog
	outProgress
	outBarrier
	outAgent
	outMCPResource
	outMCPList
	outCheckpoints
)

type outKey struct {
	kind outKind
	id   string
}

// outbox holds the notifications that wait for the editor. Publishing
// never blocks: an update replaces the pending update of the same thing (a
// tool call's latest status, a path's latest change), so a slow editor gets
// coalesced updates and the queue is bounded by the number of things that
// changed, not by the number of changes. A tool call's final status is
// never dropped. The pending calls hold at most maxCallBytes of arguments
// and results (each already cut to tools.KeptSize): past that, a status in
// between is dropped, and a final one goes without them.
type outbox struct {
	st       *stream
	logger   *slog.Logger
	maxCalls int
	// maxCallBytes bounds the arguments and results of the pending calls.
	maxCallBytes int

	mu      sync.Mutex
	queue   []outKey // in order of first arrival
	items   map[outKey]any
	calls   int // pending tool calls
	logs    int // pending log entries
	logSeq  uint64
	dropped struct{ calls, logs int }
	// callBytes is what the pending calls hold of arguments and results.
	callBytes int

	wake chan struct{}
	// stopped is closed when run returns.
	stopped chan struct{}

	// Used by run only.
	body bytes.Buffer
	enc  *json.Encoder
}

func newOutbox(st *stream, maxCalls, maxCallBytes int, logger *slog.Logger) *outbox {
	o := &outbox{st: st, logger: logger, maxCalls: maxCalls, maxCallBytes: maxCallBytes, items: map[outKey]any{},
		wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	o.enc = json.NewEncoder(&o.body)
	o.enc.SetEscapeHTML(false)
	return o
}

// event takes a bus event; it runs inside Publish and must not block.
func (o *outbox) event(ev any) {
	switch ev := ev.(type) {
	case tools.Call:
		o.put(outKey{outCall, ev.ID}, ev)
	case state.DefinitionChange:
		o.put(outKey{outDefinition, ev.Path}, ev)
	case state.RuntimeChange:
		o.put(outKey{outRuntime, ev.Namespace + "\x00" + ev.Key}, ev)
	case mcp.Status:
		o.put(outKey{outMCP, ev.Name}, ev)
	case events.Log, mcp.LogMessage:
		o.put(outKey{kind: outLog}, ev)
	case mcp.ResourceUpdated:
		o.put(outKey{outMCPResource, ev.Server + "\x00" + ev.URI}, ev)
	case mcp.ListChanged:
		o.put(outKey{outMCPList, ev.Server + "\x00" + ev.Kind}, ev)
	case checkpoints.Changed:
		o.put(outKey{outCheckpoints, ev.Session}, ev)
	}
}

// agent queues a nexus/agent/update: every one is sent, in order (the
// model's text comes in pieces that cannot be coalesced).
func (o *outbox) agent(u agentUpdateParams) { o.put(outKey{kind: outAgent}, u) }

// progress queues a $/progress value of a token: begin and end are kept,
// reports in between are coalesced.
func (o *outbox) progress(token json.RawMessage, p workDoneProgress) {
	o.mu.Lock()
	k := outKey{outProgress, string(token)}
	cur, ok := o.items[k].(*progressItem)
	if !ok {
		cur = &progressItem{token: token}
		o.items[k] = cur
		o.queue = append(o.queue, k)
	}
	switch p.Kind {
	case "begin":
		cur.begin = &p
	case "end":
		cur.end = &p
	default:
		cur.report = &p
	}
	o.mu.Unlock()
	o.signal()
}

type progressItem struct {
	token              json.RawMessage
	begin, report, end *workDoneProgress
}

func (o *outbox) put(k outKey, v any) {
	o.mu.Lock()
	switch k.kind {
	case outBarrier, outAgent: // each its own, in order, never dropped
		o.logSeq++
		k.id = strconv.FormatUint(o.logSeq, 10)
	case outLog:
		if o.logs >= maxPendingLogs {
			o.dropped.logs++
			o.mu.Unlock()
			return
		}
		o.logSeq++
		k.id = strconv.FormatUint(o.logSeq, 10)
		o.logs++
	case outCall:
		c := v.(tools.Call)
		prev, pending := o.items[k].(tools.Call)
		over := o.callBytes-callBytes(prev)+callBytes(c) > o.maxCallBytes
		if !c.Done() && (over || !pending && o.calls >= o.maxCalls) {
			o.dropped.calls++ // a status in between; its final one will come
			o.mu.Unlock()
			return
		}
		if over {
			c = c.Stripped()
			v = c
		}
		if !pending {
			o.calls++
		}
		o.callBytes += callBytes(c) - callBytes(prev)
	}
	if _, pending := o.items[k]; !pending {
		o.queue = append(o.queue, k)
	}
	o.items[k] = v
	o.mu.Unlock()
	o.signal()
}

// callBytes is what a pending call holds beyond its fixed fields.
func callBytes(c tools.Call) int { return len(c.ArgumentsJSON) + len(c.ResultJSON) }

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// outBatch is how many notifications are written at once.
const outBatch = 128

// flush returns once everything queued before it was written, so that
// a request to the editor (a permission prompt) never overtakes the
// notifications it refers to.
func (o *outbox) flush(ctx context.Context) error {
	done := make(chan struct{})
	o.put(outKey{kind: outBarrier}, done)
	select {
	case <-done:
		return nil
	case <-o.stopped:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run writes the pending notifications until ctx ends.
func (o *outbox) run(ctx context.Context) {
	defer close(o.stopped)
	var (
		keys []outKey
		vals []any
		buf  []byte
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.wake:
		}
		for {
			keys, vals = o.take(keys[:0], vals[:0])
			if len(keys) == 0 {
				break
			}
			buf = buf[:0]
			for i, k := range keys {
				buf = o.append(buf, k, vals[i])
			}
			if len(buf) > 0 {
				if err := o.st.writeFrames(buf); err != nil {
					o.logger.Debug("notifications not written: the editor is gone", "error", err.Error())
					return
				}
			}
			for _, v := range vals {
				if done, ok := v.(chan struct{}); ok {
					close(done)
				}
			}
			clear(vals)
		}
	}
}

// take moves up to outBatch pending notifications out of the box, with a
// notice of what was dropped, if anything.
func (o *outbox) take(keys []outKey, vals []any) ([]outKey, []any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dropped.calls > 0 || o.dropped.logs > 0 {
		msg := fmt.Sprintf("The editor fell behind: %d tool-call updates (never a final status) and %d log entries were not sent; nexus/toolCalls/list has every call.",
			o.dropped.calls, o.dropped.logs)
		keys = append(keys, outKey{kind: outLog})
		vals = append(vals, events.Log{Level: "WARN", Message: msg, Source: "nexusd"})
		o.dropped.calls, o.dropped.logs = 0, 0
	}
	n := min(len(o.queue), outBatch)
	for _, k := range o.queue[:n] {
		keys = append(keys, k)
		vals = append(vals, o.items[k])
		delete(o.items, k)
		switch k.kind {
		case outCall:
			o.calls--
			o.callBytes -= callBytes(vals[len(vals)-1].(tools.Call))
		case outLog:
			o.logs--
		}
	}
	o.queue = append(o.queue[:0], o.queue[n:]...)
	return keys, vals
}

// append encodes one pending item as its notification frames.
func (o *outbox) append(buf []byte, k outKey, v any) []byte {
	switch v := v.(type) {
	case tools.Call:
		return o.appendNote(buf, notifyToolCall, toolCallJSON(v))
	case state.DefinitionChange:
		return o.appendNote(buf, notifyDefinitionChanged, definitionChangeJSON(v))
	case state.RuntimeChange:
		return o.appendNote(buf, notifyRuntimeChanged, runtimeChangeJSON(v))
	case mcp.Status:
		return o.appendNote(buf, notifyMCPServerStatus, mcpServerJSON(v))
	case events.Log:
		buf = o.appendNote(buf, notifyLog, logJSON(v))
		return o.appendNote(buf, notifyLogMessage, logMessageJSON(v))
	case mcp.LogMessage: // the extension writes it in its output channel
		return o.appendNote(buf, notifyLog, mcpLogJSON(v))
	case mcp.ResourceUpdated:
		return o.appendNote(buf, notifyMCPResourceUpdated, mcpResourceUpdatedWire{Server: v.Server, URI: v.URI, Time: v.Time})
	case mcp.ListChanged:
		return o.appendNote(buf, notifyMCPListChanged, mcpListChangedWire{Server: v.Server, Kind: v.Kind, Time: v.Time})
	case agentUpdateParams:
		return o.appendNote(buf, notifyAgentUpdate, v)
	case checkpoints.Changed:
		return o.appendNote(buf, notifyCheckpointsChanged, checkpointsChangedWire{Session: v.Session})
	case *progressItem:
		for _, p := range []*workDoneProgress{v.begin, v.report, v.end} {
			if p != nil {
				buf = o.appendNote(buf, notifyProgress, progressParams{Token: v.token, Value: p})
			}
		}
		return buf
	}
	return buf // a barrier: nothing to write
}

// appendNote appends a notification frame, header and body, to buf.
func (o *outbox) appendNote(buf []byte, method string, params any) []byte {
	o.body.Reset()
	if err := o.enc.Encode(params); err != nil {
		o.logger.Warn("notification not encoded", "method", method, "error", err.Error())
		return buf
	}
	raw := bytes.TrimSuffix(o.body.Bytes(), []byte("\n"))
	var hb [headerRoom]byte
	start := len(buf)
	buf = append(buf, hb[:]...)
	buf = jsonrpc2.AppendNotification(buf, method, raw)
	h := strconv.AppendInt(append(hb[:0], "Content-Length: "...), int64(len(buf)-start-headerRoom), 10)
	h = append(h, "\r\n\r\n"...)
	// Move the body back over the unused part of the reserved header room.
	n := copy(buf[start:], h)
	m := copy(buf[start+n:], buf[start+headerRoom:])
	return buf[:start+n+m]
}
