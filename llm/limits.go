package llm

import (
	"fmt"
	"io"
)

// Limits bound one model answer as an adapter reads it: a model (or a
// server posing as one) decides how much it sends, and the daemon keeps
// what it reads. Each adapter counts the answer's pieces before it keeps
// or emits them, and ends the request at the first piece over a limit with
// an *Error of kind KindAnswerTooLarge: the rest of the stream is never
// read (the body is closed), and nothing past the limit is kept. Zero
// fields are the defaults; the agent sets them from agent.maxAnswerSize
// and agent.maxToolCallSize in .nexus/config.yaml.
type Limits struct {
	// Answer bounds the text and thoughts of one answer, together, in
	// bytes; 0 is DefaultMaxAnswer.
	Answer int
	// ToolCall bounds each tool call of the answer (its arguments, name
	// and id), in bytes; the calls of one answer together may have
	// callsPerLimit times as much. 0 is DefaultMaxToolCall.
	ToolCall int
}

// The default limits of an answer.
const (
	DefaultMaxAnswer   = 1 << 20
	DefaultMaxToolCall = 1 << 20
)

const (
	// callsPerLimit is how many times Limits.ToolCall the tool calls of
	// one answer may have together.
	callsPerLimit = 4
	// partCost is what each call or content block costs besides its
	// bytes, so that a stream of empty ones is bounded too.
	partCost = 64
	// eventSlack is what one event of the stream may have besides the
	// answer's pieces: its framing, ids and usage.
	eventSlack = 64 << 10
)

func (l Limits) withDefaults() Limits {
	if l.Answer <= 0 {
		l.Answer = DefaultMaxAnswer
	}
	if l.ToolCall <= 0 {
		l.ToolCall = DefaultMaxToolCall
	}
	return l
}

// event is the most bytes one event of the stream may have on the wire:
// twice all an answer may carry (JSON escapes its text; some servers send
// a whole answer in one event, and the Responses API repeats it in its
// last), and some slack.
func (l Limits) event() int {
	return 2*(l.Answer+callsPerLimit*l.ToolCall) + eventSlack
}

// budget counts one answer against its Limits. An adapter asks it before
// it keeps or emits a piece, and ends the request with the error it gets.
type budget struct {
	provider string
	lim      Limits
	said     int // text and thoughts
	calls    int // every call's size, and partCost a call
}

func newBudget(provider string, l Limits) *budget {
	return &budget{provider: provider, lim: l.withDefaults()}
}

// say counts n bytes of text or thoughts.
func (b *budget) say(n int) error {
	if b.said+n > b.lim.Answer {
		return b.tooLarge(fmt.Sprintf("the model's answer has more than %d bytes of text and thoughts, the limit of agent.maxAnswerSize", b.lim.Answer),
			"agent.maxAnswerSize")
	}
	b.said += n
	return nil
}

// newCall counts a new tool call, or another content block: its partCost
// and the n bytes of its key, if it has one.
func (b *budget) newCall(n int) error {
	return b.resize(new(int), partCost+n)
}

// grow counts n more bytes of the call whose size is *size.
func (b *budget) grow(size *int, n int) error {
	return b.resize(size, *size+n)
}

// resize sets the size of a call to n bytes (a server that sends a call's
// whole arguments again, after its pieces).
func (b *budget) resize(size *int, n int) error {
	if n > b.lim.ToolCall {
		return b.tooLarge(fmt.Sprintf("a tool call of the model has more than %d bytes of arguments, the limit of agent.maxToolCallSize", b.lim.ToolCall),
			"agent.maxToolCallSize")
	}
	if total := b.calls - *size + n; total > callsPerLimit*b.lim.ToolCall {
		return b.tooLarge(fmt.Sprintf("the model's tool calls of one answer have more than %d bytes together, %d times agent.maxToolCallSize",
			callsPerLimit*b.lim.ToolCall, callsPerLimit), "agent.maxToolCallSize")
	}
	b.calls += n - *size
	*size = n
	return nil
}

func (b *budget) tooLarge(what, setting string) *Error {
	return &Error{Kind: KindAnswerTooLarge, Provider: b.provider,
		Message: what + "; the request was ended there and the rest of the answer was not read. " +
			"Ask for a shorter answer, or raise " + setting + " in .nexus/config.yaml if answers this large are expected"}
}

// eventReader is a stream's body that fails, with an *Error of kind
// KindAnswerTooLarge, once one server-sent event (the bytes between two
// blank lines) has more than max bytes: the SDKs' decoders keep a whole
// event in memory before an adapter sees any of it.
type eventReader struct {
	body     io.ReadCloser
	provider string
	max      int
	n        int  // bytes of the event so far
	line     int  // bytes of the line so far
	cr       bool // the last byte was a '\r'
	err      error
}

// limitEvents is body, failing once an event is over the limits.
func limitEvents(body io.ReadCloser, provider string, l Limits) io.ReadCloser {
	return &eventReader{body: body, provider: provider, max: l.withDefaults().event()}
}

func (r *eventReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n, err := r.body.Read(p)
	for i, c := range p[:n] {
		switch {
		case c == '\n' && r.cr: // the end of a "\r\n", counted at its '\r'
		case c == '\n' || c == '\r':
			if r.line == 0 {
				r.n = 0 // a blank line ends the event
			}
			r.line = 0
		default:
			r.line++
			if r.n++; r.n > r.max {
				r.err = &Error{Kind: KindAnswerTooLarge, Provider: r.provider,
					Message: fmt.Sprintf("one event of the model's stream has more than %d bytes, more than agent.maxAnswerSize and agent.maxToolCallSize allow; "+
						"the request was ended there and the rest of the answer was not read. "+
						"Raise agent.maxAnswerSize or agent.maxToolCallSize in .nexus/config.yaml if answers this large are expected", r.max)}
				return i, r.err
			}
		}
		r.cr = c == '\r'
	}
	return n, err
}

func (r *eventReader) Close() error { return r.body.Close() }
