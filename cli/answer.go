package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/grpc"

	"github.com/nexuscocreate/nexus/internal/inert"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// watchAnswering is "nexus calls --watch --answer": the live view of the
// tool calls, with this terminal attached as the person's answerer
// (ToolManager.AnswerPermissions). Each question is shown as every door of
// the person shows it (policy.PromptLines) and answered by a line of
// stdin: y, a, n or N.
//
// On a terminal a line counts only while a question is open: what is typed
// before is dropped, never kept for a question yet to come. From a pipe
// the lines are the answers, in order, to the questions as they come, so
// that a script answers exactly as many as it has lines for. When stdin
// ends and its lines are used up, the questions still open are declined
// and the terminal stops answering (the watch goes on): later questions go
// to the editor, or are denied.
func (e *env) watchAnswering(ctx context.Context, t nexusv1.ToolManagerClient, app string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch, err := t.WatchToolCalls(ctx, &nexusv1.WatchToolCallsRequest{AppId: app})
	if err != nil {
		return err
	}
	if _, err := watch.Header(); err != nil {
		return watchEnd(ctx, watch.RecvMsg(new(nexusv1.ToolCall)))
	}
	ans, err := t.AnswerPermissions(ctx)
	if err != nil {
		return err
	}
	if _, err := ans.Header(); err != nil {
		return watchEnd(ctx, ans.RecvMsg(new(nexusv1.PermissionQuestion)))
	}
	a := &answerer{e: e, stream: ans, app: app, answering: true, tty: isTerminal(e.stdin), asking: map[string]bool{}}
	fmt.Fprintln(e.stderr, "answering the person's permission questions here (y, a, n or N); Ctrl-C stops")

	calls := make(chan recvResult[*nexusv1.ToolCall])
	go recvAll(ctx, watch, calls)
	questions := make(chan recvResult[*nexusv1.PermissionQuestion])
	go recvAll(ctx, ans, questions)
	lines := readLines(e.stdin)
	for {
		select {
		case r := <-calls:
			if r.err != nil {
				return watchEnd(ctx, r.err)
			}
			if err := a.call(r.msg); err != nil {
				return err
			}
		case r := <-questions:
			if r.err != nil {
				if errors.Is(r.err, io.EOF) {
					questions = nil // the daemon took our end: detached
					continue
				}
				return watchEnd(ctx, r.err)
			}
			if err := a.question(r.msg); err != nil {
				return err
			}
		case line, ok := <-lines:
			if !ok {
				lines, a.ended = nil, true
			} else {
				a.line(line)
			}
			a.answerQueued()
		case <-ctx.Done():
			return nil
		}
	}
}

// watchEnd is the error a watch ends with: none when the person
// interrupted it.
func watchEnd(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// recvResult is one message of a stream, or its end.
type recvResult[T any] struct {
	msg T
	err error
}

// recvAll reads a stream into ch until it ends, then sends its error.
func recvAll[T any](ctx context.Context, s interface{ RecvMsg(any) error }, ch chan<- recvResult[*T]) {
	for {
		m := new(T)
		err := s.RecvMsg(m)
		select {
		case ch <- recvResult[*T]{m, err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// answerer is the state of a terminal that answers: the questions open
// (the first is shown), the calls held back while one is shown, and the
// lines of a pipe not yet used.
type answerer struct {
	e         *env
	stream    grpc.BidiStreamingClient[nexusv1.PermissionAnswer, nexusv1.PermissionQuestion]
	app       string // --app: the watch shows this app's calls only
	tty       bool   // stdin is a terminal
	answering bool   // attached: answers are still sent
	ended     bool   // stdin ended
	open      []*nexusv1.PermissionQuestion
	held      []*nexusv1.ToolCall
	queued    []string
	// The watch and the questions are two streams: a question waits until
	// the watch has shown its call asking (asking, by call id, until the
	// call ends), so that it comes after the calls that came before it.
	asking  map[string]bool
	waiting []*nexusv1.PermissionQuestion
}

// call shows a status change, or holds it while a question is shown, so
// that the question stays the last line; the questions about the call that
// waited for it come next.
func (a *answerer) call(c *nexusv1.ToolCall) error {
	id := c.GetToolCallId()
	switch c.GetStatus() {
	case "initiated":
		if c.GetIcerc() != nil {
			a.asking[id] = true
		}
	case "completed", "error":
		delete(a.asking, id)
	}
	var err error
	if len(a.open) > 0 && !a.e.json {
		a.held = append(a.held, c)
	} else {
		err = a.e.showCall(c)
	}
	for i := 0; a.asking[id] && i < len(a.waiting); i++ {
		if q := a.waiting[i]; q.GetToolCall().GetToolCallId() == id {
			a.waiting = append(a.waiting[:i:i], a.waiting[i+1:]...)
			i--
			if err := a.ask(q); err != nil {
				return err
			}
		}
	}
	return err
}

// question takes a new question, or the withdrawal of one.
func (a *answerer) question(q *nexusv1.PermissionQuestion) error {
	if q.GetWithdrawn() {
		return a.withdraw(q)
	}
	if !a.answering {
		if !a.e.json {
			a.printf("(this terminal no longer answers: the question about %s is denied)\n", callName(q.GetToolCall()))
		}
		return nil
	}
	c := q.GetToolCall()
	if a.asking[c.GetToolCallId()] || a.app != "" && c.GetAppId() != a.app { // shown, or never to be
		return a.ask(q)
	}
	a.waiting = append(a.waiting, q)
	return nil
}

// ask opens a question: shown now when it is the only one.
func (a *answerer) ask(q *nexusv1.PermissionQuestion) error {
	if a.e.json {
		if err := a.e.printJSON(q); err != nil {
			return err
		}
	}
	a.open = append(a.open, q)
	if len(a.open) == 1 {
		a.show()
	}
	a.answerQueued()
	return nil
}

// withdraw closes a question that is no longer open.
func (a *answerer) withdraw(q *nexusv1.PermissionQuestion) error {
	for i, w := range a.waiting {
		if w.GetRequestId() == q.GetRequestId() {
			a.waiting = append(a.waiting[:i:i], a.waiting[i+1:]...)
			return nil // never shown
		}
	}
	for i, o := range a.open {
		if o.GetRequestId() == q.GetRequestId() {
			if a.e.json {
				if err := a.e.printJSON(q); err != nil {
					return err
				}
			}
			a.open = append(a.open[:i:i], a.open[i+1:]...)
			if i == 0 {
				a.printf("\n(the question about %s was withdrawn: its call ended, or waited too long, and was denied)\n", callName(q.GetToolCall()))
				a.next()
			}
			break
		}
	}
	return nil
}

// line takes a line of stdin: queued from a pipe; on a terminal, the
// answer to the question shown, else dropped.
func (a *answerer) line(l string) {
	if !a.tty {
		a.queued = append(a.queued, l)
		return
	}
	if len(a.open) == 0 {
		if strings.TrimSpace(l) != "" {
			fmt.Fprintln(a.e.stderr, "(no question is open: the line is dropped)")
		}
		return
	}
	a.queued = []string{l}
}

// answerQueued answers the open questions with the lines at hand, in
// order; once stdin has ended and its lines are used up, it declines the
// questions left open and stops answering.
func (a *answerer) answerQueued() {
	for a.answering && len(a.open) > 0 && len(a.queued) > 0 {
		l := a.queued[0]
		a.queued = a.queued[1:]
		if !a.tty {
			a.printf("%s\n", inert.Line(l)) // a pipe's line is not echoed
		}
		ans, ok := parseAnswer(l)
		if !ok {
			a.printf("Answer y, a, n or N: ")
			continue
		}
		a.send(a.open[0], ans)
		a.open = a.open[1:]
		a.next()
	}
	if a.answering && a.ended && len(a.queued) == 0 {
		for _, q := range append(a.open, a.waiting...) {
			a.send(q, string(policy.RejectOnce))
		}
		a.open, a.waiting = nil, nil
		a.answering = false
		if err := a.stream.CloseSend(); err != nil {
			fmt.Fprintf(a.e.stderr, "nexus: stop answering: %s\n", errorMessage(context.Background(), err))
		}
		fmt.Fprintln(a.e.stderr, "(stdin ended: this terminal no longer answers; questions go to the editor, or are denied)")
		a.release()
	}
}

func (a *answerer) send(q *nexusv1.PermissionQuestion, ans string) {
	if err := a.stream.Send(&nexusv1.PermissionAnswer{RequestId: q.GetRequestId(), Answer: ans}); err != nil {
		fmt.Fprintf(a.e.stderr, "nexus: the answer was not taken: %s\n", errorMessage(context.Background(), err))
	}
}

// next shows the next open question, or the calls held back.
func (a *answerer) next() {
	if len(a.open) > 0 {
		a.show()
		return
	}
	a.release()
}

func (a *answerer) release() {
	for _, c := range a.held {
		if err := a.e.showCall(c); err != nil {
			return
		}
	}
	a.held = nil
}

// show puts the first open question: the call, then its record as every
// door of the person shows it (policy.PromptLines), inert.
func (a *answerer) show() {
	if a.e.json {
		return
	}
	q := a.open[0]
	c := q.GetToolCall()
	a.printf("Permission needed: %s\n", callName(c))
	r := icercOf(c.GetIcerc())
	for _, l := range policy.PromptLines(r, whoseWords(c.GetAuthor())) {
		a.printf("  %s\n", l)
	}
	a.printf("%s", changeText(r.Changes, isTerminal(a.e.stdout) && !a.e.json))
	a.printf("Allow? [y]es once / [a]lways / [n]o / [N]ever: ")
}

// printf writes the questions and their answers: to stdout, or with
// --json (where stdout holds JSON only) to stderr.
func (a *answerer) printf(format string, args ...any) {
	w := a.e.stdout
	if a.e.json {
		w = a.e.stderr
	}
	fmt.Fprintf(w, format, args...)
}

// showCall prints one status change of a watched call.
func (e *env) showCall(c *nexusv1.ToolCall) error {
	if e.json {
		return e.printJSON(c)
	}
	_, err := fmt.Fprintln(e.stdout, callLine(c))
	return err
}

// callName is a call as a question names it: its tool, its id and who
// made it, inert.
func callName(c *nexusv1.ToolCall) string {
	return fmt.Sprintf("%s (call %s by %s)", toolLabel(c), inert.Line(c.GetToolCallId()), inert.Line(orDash(c.GetAuthor())))
}

// whoseWords says whose words a call's intent and expected outcome are,
// from its author: an app's, an agent's model's, an MCP server's.
func whoseWords(author string) string {
	switch prefix, _, _ := strings.Cut(author, ":"); prefix {
	case "app":
		return "the app's"
	case "agent":
		return "the model's"
	case "mcp":
		return "the MCP server's"
	}
	return "the caller's"
}

// icercOf is the ICERC record of a question as the policy renders it.
func icercOf(r *nexusv1.Icerc) policy.ICERC {
	rec := policy.ICERC{Intent: r.GetIntent(), Command: r.GetCommand(), ExpectedOutcome: r.GetExpectedOutcome(),
		Asker: r.GetAsker(), Always: r.GetAlways(),
		Risk: tools.RiskAssessment{Level: tools.Risk(r.GetRisk().GetLevel()), Scope: r.GetRisk().GetScope(), Details: r.GetRisk().GetDetails()}}
	for _, c := range r.GetChanges() {
		rec.Changes = append(rec.Changes, tools.ProposedChange{Path: c.GetPath(), Action: c.GetAction(), Diff: c.GetDiff(),
			Binary: c.GetBinary(), Truncated: c.GetTruncated()})
	}
	return rec
}

// ANSI colours of a diff's lines on a terminal: Nexus's own sequences,
// around text that is inert.
var changeColours = map[policy.LineKind]string{
	policy.LineAdded:   "\x1b[32m",
	policy.LineRemoved: "\x1b[31m",
	policy.LineHunk:    "\x1b[36m",
}

// changeText is the change a call would make as a prompt shows it, under
// its record (policy.ChangeLines: inert, at most policy.MaxChangeLines
// lines of diff): each line indented, and on a terminal (colour) the
// added lines green, the removed red, the hunk headers cyan.
func changeText(changes []tools.ProposedChange, colour bool) string {
	var b strings.Builder
	for _, l := range policy.ChangeLines(changes, policy.MaxChangeLines) {
		if c := changeColours[l.Kind]; colour && c != "" {
			fmt.Fprintf(&b, "  %s%s\x1b[0m\n", c, l.Text)
		} else {
			fmt.Fprintf(&b, "  %s\n", l.Text)
		}
	}
	return b.String()
}
