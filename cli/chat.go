package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/internal/inert"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// chatCommand is "nexus chat": the agent at the terminal.
func (e *env) chatCommand() *cobra.Command {
	var o chatOptions
	cmd := &cobra.Command{
		Use:   "chat [-p PROMPT] [--resume ID] [--profile NAME]",
		Short: "Talk with the agent of the workspace",
		Long: `chat talks with the agent of the workspace: a session with a model of
.nexus/config.yaml (llm) whose tool calls are Nexus tool calls, checked by the
policy; the ones it asks about are asked here.

Lines that start with "/" are special commands (/help lists them; /quit and
/exit end the chat). Ctrl-C cancels the running turn; a second Ctrl-C within
2 seconds, Ctrl-C at the prompt, or Ctrl-D quits. Sessions are kept: go on
with one with --resume ID.

With -p, chat sends one prompt, prints the answer to stdout and the tool calls
to stderr, and exits (1 on an error); with --json besides, it prints each
update as one JSON line, then the result. Its permission requests are asked
here when stdin is a terminal, else of the editor.`,
		Args: argsBetween(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.promptSet = cmd.Flags().Changed("prompt")
			return e.dial(func(conn *grpc.ClientConn) error {
				c := newChat(e, nexusv1.NewAgentClient(conn), o)
				if o.promptSet {
					return c.oneShot(cmd.Context())
				}
				return c.interactive(cmd.Context())
			})
		},
	}
	cmd.Flags().StringVarP(&o.prompt, "prompt", "p", "", "send one prompt `TEXT`, print the answer and exit")
	cmd.Flags().StringVar(&o.resume, "resume", "", "go on with session `ID`")
	cmd.Flags().StringVar(&o.profile, "profile", "", "the llm profile `NAME` of a new session (default: llm.default)")
	return cmd
}

type chatOptions struct {
	prompt    string
	promptSet bool
	resume    string
	profile   string
}

// chat is one run of "nexus chat".
type chat struct {
	e      *env
	agent  nexusv1.AgentClient
	opts   chatOptions
	id     string
	lines  <-chan string // stdin, a line at a time; closed at EOF
	out    *render       // answers
	status *render       // tool calls and notes
	ttyIn  bool
}

func newChat(e *env, agent nexusv1.AgentClient, o chatOptions) *chat {
	c := &chat{e: e, agent: agent, opts: o, ttyIn: isTerminal(e.stdin)}
	c.out = &render{w: e.stdout, tty: isTerminal(e.stdout), calls: map[string]*chatCallLine{}}
	if c.out.tty {
		// File links point into the workspace (when it is found).
		root, _, _ := e.locateDaemon()
		c.out.md = &termMarkdown{root: root}
	}
	c.status = c.out
	return c
}

// isTerminal reports whether v is a file on a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}

// readLines reads r a line at a time into the returned channel, which is
// closed at the end of r. The reader stays blocked in Read when the chat
// ends first; the process ends with it.
func readLines(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" || err == nil {
				ch <- strings.TrimRight(line, "\r\n")
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// session starts or resumes the session and says how to come back to it.
func (c *chat) session(ctx context.Context, w io.Writer) (*nexusv1.LoadSessionResponse, error) {
	if c.opts.resume != "" {
		l, err := c.agent.LoadSession(ctx, &nexusv1.LoadSessionRequest{SessionId: c.opts.resume})
		if err != nil {
			return nil, err
		}
		c.id = l.GetSession().GetSessionId()
		fmt.Fprintf(w, "session %s (%s, %s) resumed\n", inert.Line(c.id), inert.Line(l.GetSession().GetProfile()), inert.Line(l.GetSession().GetModel()))
		return l, nil
	}
	s, err := c.agent.NewSession(ctx, &nexusv1.NewSessionRequest{Profile: c.opts.profile})
	if err != nil {
		return nil, err
	}
	c.id = s.GetSession().GetSessionId()
	id := inert.Line(c.id)
	fmt.Fprintf(w, "session %s (%s, %s); resume with: nexus chat --resume %s\n", id, inert.Line(s.GetSession().GetProfile()), inert.Line(s.GetSession().GetModel()), id)
	return nil, nil
}

// oneShot sends the -p prompt and prints the answer: text to stdout, tool
// calls to stderr; with --json, every update and the result as JSON lines.
func (c *chat) oneShot(ctx context.Context) error {
	c.status = &render{w: c.e.stderr, tty: isTerminal(c.e.stderr), calls: map[string]*chatCallLine{}}
	if _, err := c.session(ctx, c.e.stderr); err != nil {
		return err
	}
	if c.ttyIn {
		c.lines = readLines(c.e.stdin)
	}
	// Ctrl-C cancels the turn, which then ends with its result
	// (cancelled); a second one within 2 s quits at once.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	base := context.WithoutCancel(ctx)
	res, err := c.turn(base, base, c.opts.prompt, sigs)
	if err != nil {
		return err
	}
	if c.e.json {
		if err := c.e.printJSON(res); err != nil {
			return err
		}
		if res.GetStopReason() == "cancelled" {
			return errCancelled
		}
		return nil
	}
	c.out.endLine()
	c.status.endLine()
	if res.GetStopReason() != "end_turn" {
		fmt.Fprintf(c.e.stderr, "(the turn ended: %s)\n", res.GetStopReason())
	}
	if res.GetStopReason() == "cancelled" {
		return errCancelled
	}
	return nil
}

// errCancelled ends a one-shot chat whose turn was cancelled: exit 1, after
// the result was printed.
var errCancelled = errors.New("cancelled")

// interactive is the REPL.
func (c *chat) interactive(ctx context.Context) error {
	// Interrupts are the chat's own from here: the first cancels the
	// turn, not the command (ctx is cancelled by the first Ctrl-C too).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	base := context.WithoutCancel(ctx)

	c.lines = readLines(c.e.stdin)
	l, err := c.session(base, c.e.stdout)
	if err != nil {
		return err
	}
	if l != nil {
		c.replay(l.GetUpdatesJson())
	}
	if c.ttyIn {
		fmt.Fprintln(c.e.stdout, "Type /help for the commands; Ctrl-C cancels a turn, Ctrl-D quits.")
	}
	for {
		c.out.endLine()
		if c.lines == nil {
			return nil // stdin ended during a permission request
		}
		fmt.Fprint(c.e.stdout, "> ")
		var line string
		select {
		case s, ok := <-c.lines:
			if !ok {
				fmt.Fprintln(c.e.stdout)
				return nil
			}
			line = s
		case <-sigs:
			fmt.Fprintln(c.e.stdout)
			return nil
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		res, err := c.turn(base, base, line, sigs)
		c.out.endLine()
		if errors.Is(err, errQuit) {
			return nil
		}
		if err != nil {
			fmt.Fprintf(c.e.stdout, "error: %s\n", errorMessage(base, err))
			continue
		}
		switch {
		case res.GetQuit():
			return nil
		case res.GetResume() != "":
			c.opts.resume = res.GetResume()
			l, err := c.session(base, c.e.stdout)
			if err != nil {
				fmt.Fprintf(c.e.stdout, "error: %s\n", errorMessage(base, err))
				continue
			}
			c.replay(l.GetUpdatesJson())
		case res.GetStopReason() != "end_turn":
			fmt.Fprintf(c.e.stdout, "(the turn ended: %s)\n", res.GetStopReason())
		}
	}
}

// errQuit ends the chat from inside a turn (a second Ctrl-C).
var errQuit = errors.New("quit")

// replay shows a resumed session's conversation.
func (c *chat) replay(updates []string) {
	for _, u := range updates {
		var up chatUpdate
		if json.Unmarshal([]byte(u), &up) != nil {
			continue
		}
		if up.SessionUpdate == "user_message_chunk" {
			c.out.endLine()
			fmt.Fprintf(c.out.w, "> %s\n", inert.Text(up.text()))
			continue
		}
		c.show(up)
	}
	c.out.endLine()
}

// chatUpdate is the part of an agent update the chat shows.
type chatUpdate struct {
	SessionUpdate string          `json:"sessionUpdate"`
	Content       json.RawMessage `json:"content"`
	ToolCallID    string          `json:"toolCallId"`
	// ParentToolCallID is the task call of the subagent that made the call.
	ParentToolCallID string          `json:"parentToolCallId"`
	Title            string          `json:"title"`
	Kind             string          `json:"kind"`
	Status           string          `json:"status"`
	RawInput         json.RawMessage `json:"rawInput"`
	Locations        []struct {
		Path string `json:"path"`
	} `json:"locations"`
	// Changes, on a completed call, are the files it changed with their
	// diffs (the checkpoint's), and MoreChanges how many more.
	Changes     []tools.ProposedChange `json:"changes"`
	MoreChanges int                    `json:"moreChanges"`
	Entries     []planEntry            `json:"entries"`
	Retry       *struct {
		Attempt int    `json:"attempt"`
		WaitMs  int64  `json:"waitMs"`
		Error   string `json:"error"`
	} `json:"retry"`
	Permission  *permissionRequest  `json:"permission"`
	Elicitation *elicitationRequest `json:"elicitation"`
}

// planEntry is a step of the agent's plan.
type planEntry struct {
	Content string `json:"content"`
	Status  string `json:"status"`
}

// planText is the agent's plan as the chat shows it, the whole list each
// time it changes: a line a step, marked [x] done, [>] in progress,
// [ ] pending. The steps are the model's words, shown inert.
func planText(entries []planEntry) string {
	if len(entries) == 0 {
		return "Plan: cleared\n"
	}
	var b strings.Builder
	done := 0
	for _, e := range entries {
		if e.Status == "completed" {
			done++
		}
	}
	fmt.Fprintf(&b, "Plan (%d/%d done):\n", done, len(entries))
	for _, e := range entries {
		mark := "[ ]"
		switch e.Status {
		case "completed":
			mark = "[x]"
		case "in_progress":
			mark = "[>]"
		case "pending":
		default:
			mark = "[" + inert.Line(e.Status) + "]"
		}
		fmt.Fprintf(&b, "  %s %s\n", mark, inert.Line(e.Content))
	}
	return b.String()
}

// elicitationRequest is an MCP server's question of an elicitation_request
// update (tools.Elicitation's JSON).
type elicitationRequest struct {
	RequestID string `json:"requestId"`
	Server    string `json:"server"`
	ToolCall  *struct {
		ID         string `json:"toolCallId"`
		ToolName   string `json:"toolName"`
		ServerName string `json:"serverName"`
	} `json:"toolCall"`
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	URL             string          `json:"url"`
}

type permissionRequest struct {
	RequestID string `json:"requestId"`
	ToolCall  struct {
		ToolName   string `json:"toolName"`
		ServerName string `json:"serverName"`
	} `json:"toolCall"`
	ICERC policy.ICERC `json:"icerc"`
}

// text is the text of a content block, or of a tool call's content items.
func (u chatUpdate) text() string {
	var block struct{ Text string }
	if json.Unmarshal(u.Content, &block) == nil {
		return block.Text
	}
	var items []struct {
		Content *struct{ Text string }
	}
	if json.Unmarshal(u.Content, &items) == nil {
		var parts []string
		for _, it := range items {
			if it.Content != nil {
				parts = append(parts, it.Content.Text)
			}
		}
		return strings.Join(parts, " ")
	}
	return ""
}

// streamMsg is one message of the Prompt stream, or its end.
type streamMsg struct {
	m   *nexusv1.PromptResponse
	err error
}

// turn sends one prompt and shows its updates until the result. sigs, when
// set, are the interrupts: the first cancels the turn (Cancel), a second
// within 2 s quits. Permission requests are asked on the terminal when
// there are lines to read the answers from.
func (c *chat) turn(ctx, base context.Context, text string, sigs <-chan os.Signal) (*nexusv1.PromptResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.agent.Prompt(ctx, &nexusv1.PromptRequest{SessionId: c.id, Text: text, AskPermissions: c.lines != nil, AskElicitation: c.lines != nil})
	if err != nil {
		return nil, err
	}
	msgs := make(chan streamMsg)
	go func() {
		for {
			m, err := stream.Recv()
			select {
			case msgs <- streamMsg{m, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var (
		asks      []chatAsk    // shown first, answered in order
		held      []chatUpdate // shown once the open requests are answered
		lastSig   time.Time
		cancelled bool
	)
	release := func() {
		for _, up := range held {
			c.show(up)
		}
		held = nil
	}
	next := func() {
		if len(asks) > 0 {
			asks[0].show()
		} else {
			c.status.endLine()
			release()
		}
	}
	for {
		var answers <-chan string
		if len(asks) > 0 {
			answers = c.lines
		}
		select {
		case sm := <-msgs:
			if sm.err != nil {
				if errors.Is(sm.err, io.EOF) {
					return nil, errors.New("the daemon ended the prompt without a result")
				}
				return nil, sm.err
			}
			if r := sm.m.GetResult(); r != nil {
				return r, nil
			}
			if c.e.json {
				if err := c.e.writeJSONLine([]byte(sm.m.GetUpdateJson())); err != nil {
					return nil, err
				}
			}
			var up chatUpdate
			if err := json.Unmarshal([]byte(sm.m.GetUpdateJson()), &up); err != nil {
				return nil, fmt.Errorf("the daemon sent an update that is not JSON: %w", err)
			}
			var ask chatAsk
			switch {
			case up.SessionUpdate == "permission_request" && up.Permission != nil:
				ask = &permissionAsk{c: c, base: base, p: up.Permission}
			case up.SessionUpdate == "elicitation_request" && up.Elicitation != nil:
				if ask = c.elicitationAsk(base, up.Elicitation); ask == nil {
					continue
				}
			case up.SessionUpdate == "elicitation_withdrawn" && up.Elicitation != nil:
				for i, a := range asks {
					if a.id() == up.Elicitation.RequestID {
						asks = slices.Delete(asks, i, i+1)
						if i == 0 {
							c.status.endLine()
							fmt.Fprintf(c.status.w, "(MCP server %s's question was withdrawn)\n", inert.Line(up.Elicitation.Server))
							next()
						}
						break
					}
				}
				continue
			}
			if ask != nil {
				if c.lines == nil || cancelled {
					// No one is left to answer (stdin ended, or the turn is
					// being cancelled): declined now, not at the timeout.
					ask.decline()
					continue
				}
				asks = append(asks, ask)
				if len(asks) == 1 {
					ask.show()
				}
				continue
			}
			switch {
			case c.e.json:
			case len(asks) > 0:
				held = append(held, up) // the question stays the last line
			default:
				c.show(up)
			}
		case line, ok := <-answers:
			if !ok {
				c.lines = nil // stdin ended: the open requests are declined
				for _, a := range asks {
					a.decline()
				}
				asks = nil
				next()
				continue
			}
			if !asks[0].feed(line) {
				continue
			}
			asks = asks[1:]
			next()
		case <-sigs:
			c.out.endLine()
			if !lastSig.IsZero() && time.Since(lastSig) < 2*time.Second {
				return nil, errQuit // the deferred cancel ends the stream, and with it the turn
			}
			lastSig = time.Now()
			cancelled = true
			asks = nil
			release()
			fmt.Fprintln(c.status.w, "^C cancelling the turn (Ctrl-C again to quit)")
			if _, err := c.agent.Cancel(base, &nexusv1.CancelRequest{SessionId: c.id}); err != nil {
				fmt.Fprintf(c.status.w, "cancel: %s\n", errorMessage(base, err))
			}
		}
	}
}

// chatAsk is a question put to the person at the terminal during a turn:
// a permission request or an MCP server's question.
type chatAsk interface {
	id() string
	show()
	// feed takes a line of the answer and reports whether the question is
	// answered (and the answer sent).
	feed(line string) bool
	// decline answers at once: no one is left to ask.
	decline()
}

// permissionAsk is a permission request: y / a / n / N.
type permissionAsk struct {
	c    *chat
	base context.Context
	p    *permissionRequest
}

func (a *permissionAsk) id() string { return a.p.RequestID }
func (a *permissionAsk) show()      { a.c.askPrompt(a.p) }
func (a *permissionAsk) decline()   { a.send("reject_once") }

func (a *permissionAsk) feed(line string) bool {
	ans, valid := parseAnswer(line)
	if !valid {
		fmt.Fprint(a.c.status.w, "Answer y, a, n or N: ")
		return false
	}
	a.send(ans)
	return true
}

func (a *permissionAsk) send(ans string) {
	if _, err := a.c.agent.AnswerPermission(a.base, &nexusv1.AnswerPermissionRequest{SessionId: a.c.id, RequestId: a.p.RequestID, Answer: ans}); err != nil {
		fmt.Fprintf(a.c.status.w, "the answer was not taken: %s\n", errorMessage(a.base, err))
	}
}

// elicitQuestion is an MCP server's question, asked field by field.
type elicitQuestion struct {
	c    *chat
	base context.Context
	q    *question
}

func (c *chat) elicitationAsk(base context.Context, r *elicitationRequest) chatAsk {
	label := ""
	if r.ToolCall != nil {
		label = "the call " + r.ToolCall.ToolName
		if r.ToolCall.ServerName != "" {
			label = "the call " + r.ToolCall.ServerName + "/" + r.ToolCall.ToolName
		}
	}
	q, err := newQuestion(r.RequestID, r.Server, label, r.Mode, r.Message, r.RequestedSchema, r.URL)
	a := &elicitQuestion{c: c, base: base, q: q}
	if err != nil {
		a.q = &question{id: r.RequestID, server: r.Server}
		fmt.Fprintf(c.status.w, "MCP server %s asked a question that cannot be shown (%s): declined\n", inert.Line(r.Server), inert.Line(err.Error()))
		a.decline()
		return nil
	}
	return a
}

func (a *elicitQuestion) id() string { return a.q.id }

func (a *elicitQuestion) show() {
	a.c.out.endLine()
	a.c.status.endLine()
	a.q.show(a.c.status.w)
	a.c.status.col = !a.c.ttyIn
}

func (a *elicitQuestion) decline() { a.send("decline", "") }

func (a *elicitQuestion) feed(line string) bool {
	w := a.c.status.w
	a.q.feed(line, false, w)
	if !a.q.done() {
		a.c.status.col = !a.c.ttyIn
		return false
	}
	if err := a.send(a.q.action, a.q.contentJSON()); err != nil && status.Code(err) == codes.InvalidArgument {
		fmt.Fprintf(w, "  the answer was refused: %s\n", errorMessage(a.base, err))
		a.q.step, a.q.action, a.q.content = -1, "", map[string]any{}
		a.q.prompt(w)
		return false
	}
	return true
}

func (a *elicitQuestion) send(action, content string) error {
	_, err := a.c.agent.AnswerElicitation(a.base, &nexusv1.AnswerElicitationRequest{SessionId: a.c.id, RequestId: a.q.id, Action: action, ContentJson: content})
	if err != nil && status.Code(err) != codes.InvalidArgument {
		fmt.Fprintf(a.c.status.w, "the answer was not taken: %s\n", errorMessage(a.base, err))
	}
	return err
}

// parseAnswer reads an answer to "Allow? [y]es once / [a]lways / [n]o / [N]ever".
func parseAnswer(line string) (string, bool) {
	switch s := strings.TrimSpace(line); s {
	case "y", "Y", "yes", "Yes", "once":
		return "allow_once", true
	case "a", "A", "always", "Always":
		return "allow_always", true
	case "n", "no", "No":
		return "reject_once", true
	case "N", "never", "Never", "NEVER":
		return "reject_always", true
	}
	return "", false
}

// askPrompt shows a permission request with its ICERC record: who asks,
// the caller's words (labelled as the model's: it is the agent's model
// that calls here), then what Nexus itself vouches for, next to the
// question: the command as Nexus renders it, the risk, and what an
// "always" answer would remember (policy.PromptLines, which the MCP
// gateway's and ACP's prompts share), and the change of a write as a diff
// (changeText), coloured on a terminal. Every field is inert; the command
// keeps its lines, each marked as part of it.
func (c *chat) askPrompt(p *permissionRequest) {
	c.out.endLine()
	c.status.endLine()
	w := c.status.w
	fmt.Fprintf(w, "Permission needed: %s\n", inert.Line(toolName(p.ToolCall.ServerName, p.ToolCall.ToolName)))
	for _, l := range policy.PromptLines(p.ICERC, "the model's") {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprint(w, changeText(p.ICERC.Changes, c.status.tty))
	fmt.Fprint(w, "Allow? [y]es once / [a]lways / [n]o / [N]ever: ")
	// The answer typed on a terminal ends the line; read from a pipe, it
	// is not echoed, and what comes next starts a line of its own.
	c.status.col = !c.ttyIn
}

// toolName is "server/tool" for an MCP server's tool, else the tool name.
func toolName(server, tool string) string {
	if server != "" {
		return server + "/" + tool
	}
	return tool
}

// show prints one update.
func (c *chat) show(up chatUpdate) {
	switch up.SessionUpdate {
	case "agent_message_chunk":
		if c.status != c.out || c.out.kind != up.SessionUpdate {
			c.status.endLine() // the answer's next chunk goes on its line
		}
		c.out.answer(inert.Text(up.text()))
		c.out.kind = up.SessionUpdate
	case "agent_thought_chunk":
		if c.status != c.out || c.status.kind != up.SessionUpdate {
			c.out.endLine()
		}
		c.status.note(inert.Text(up.text()))
		c.status.kind = up.SessionUpdate
	case "command_output":
		c.status.endLine()
		c.out.endLine()
		c.out.text(inert.Text(strings.TrimRight(up.text(), "\n")) + "\n")
	case "tool_call", "tool_call_update":
		c.out.endLine()
		c.status.call(up)
	case "plan":
		c.out.endLine()
		c.status.note(planText(up.Entries))
	case "retry":
		if up.Retry != nil {
			c.out.endLine()
			c.status.note(fmt.Sprintf("the model request failed (%s); retry %d in %dms\n", inert.Line(up.Retry.Error), up.Retry.Attempt, up.Retry.WaitMs))
		}
	}
}

// render writes to one stream and knows where its cursor is: after text
// without a newline (col), or on the line of a tool call that a terminal
// may rewrite in place (open).
type render struct {
	w     io.Writer
	tty   bool
	col   bool
	open  string // id of the tool call whose line the cursor is on (tty)
	calls map[string]*chatCallLine
	// md renders the answer's markdown on a terminal; nil: plain.
	md *termMarkdown
	// kind is the update whose text was written last ("agent_message_chunk"),
	// until a line ends: the next chunk of the same goes on.
	kind string
}

type chatCallLine struct {
	title, args, status string
	path                string // the workspace file it works on, if any
	// indent starts the line: deeper for a subagent's call, under its task.
	indent string
}

func (r *render) endLine() {
	if r.md != nil {
		if rest := r.md.flush(); rest != "" {
			fmt.Fprint(r.w, rest)
			r.col = true
		}
	}
	if r.col || r.open != "" {
		fmt.Fprintln(r.w)
	}
	r.col, r.open, r.kind = false, "", ""
}

func (r *render) text(s string) {
	if r.open != "" {
		r.endLine()
	}
	if s == "" {
		return
	}
	fmt.Fprint(r.w, s)
	r.col = !strings.HasSuffix(s, "\n")
}

// answer writes a chunk of the agent's answer: as markdown rendered a
// line at a time on a terminal, else as it is.
func (r *render) answer(s string) {
	if r.md == nil {
		r.text(s)
		return
	}
	if r.open != "" {
		r.endLine()
	}
	if done := r.md.write(s); done != "" {
		if r.col {
			fmt.Fprintln(r.w)
		}
		fmt.Fprint(r.w, done)
		r.col = false
	}
}

func (r *render) note(s string) {
	r.text(s)
}

// call shows a tool call's status: one line per call, rewritten in place
// on a terminal while it is the last line, else a line per change. The
// line is the call in words, nexusd's (it changes as the call ends:
// "Write notes.txt", then "Wrote notes.txt, 5 bytes"); a call that nexusd
// words generically (an MCP server's tool: "Call github/create_issue")
// shows its arguments too.
func (r *render) call(up chatUpdate) {
	cl := r.calls[up.ToolCallID]
	if cl == nil {
		cl = &chatCallLine{args: summarize(up.RawInput), indent: "  "}
		if up.ParentToolCallID != "" {
			cl.indent = "      "
		}
		if len(up.Locations) > 0 {
			cl.path = inert.Line(up.Locations[0].Path)
		}
		r.calls[up.ToolCallID] = cl
	}
	if up.Title != "" {
		cl.title = inert.Line(up.Title)
	}
	title := cl.title
	if r.md != nil && cl.path != "" {
		// Its file a hyperlink, as in the answer.
		if i := strings.Index(title, cl.path); i >= 0 {
			title = title[:i] + r.md.link(cl.path, cl.path, true) + title[i+len(cl.path):]
		}
	}
	line := fmt.Sprintf("%s[%s] %s", cl.indent, inert.Line(up.Status), title)
	if cl.args != "" && (strings.HasPrefix(cl.title, "Call ") || strings.HasPrefix(cl.title, "Called ")) {
		line += " " + cl.args
	}
	done := up.Status == "completed" || up.Status == "failed"
	if up.Status == cl.status {
		return // a change the line does not show
	}
	cl.status = up.Status
	if !r.tty {
		r.endLine()
		fmt.Fprintln(r.w, line)
		r.changes(cl.indent, up)
		return
	}
	if r.open == up.ToolCallID {
		fmt.Fprint(r.w, "\r\x1b[K"+line)
	} else {
		r.endLine()
		fmt.Fprint(r.w, line)
	}
	r.open = up.ToolCallID
	if done {
		r.endLine()
		r.changes(cl.indent, up)
	}
}

// maxCallDiffLines is how many lines of its diff a call that changed
// files shows under its line before it says how many more there are.
const maxCallDiffLines = 12

// changes writes, under a completed call's line, the compact diff of the
// files it changed (the checkpoint's): as a question shows a change
// (policy.ChangeLines: inert, and on a terminal coloured), indented under
// the call, at most maxCallDiffLines lines of diff.
func (r *render) changes(indent string, up chatUpdate) {
	if up.Status != "completed" || len(up.Changes) == 0 {
		return
	}
	for _, l := range policy.ChangeLines(up.Changes, maxCallDiffLines) {
		if c := changeColours[l.Kind]; r.tty && c != "" {
			fmt.Fprintf(r.w, "%s    %s%s\x1b[0m\n", indent, c, l.Text)
		} else {
			fmt.Fprintf(r.w, "%s    %s\n", indent, l.Text)
		}
	}
	if up.MoreChanges > 0 {
		fmt.Fprintf(r.w, "%s    … and %d more files changed\n", indent, up.MoreChanges)
	}
	r.col = false
}

// summarize is a call's arguments in one short, inert line.
func summarize(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return ""
	}
	s := buf.String()
	if r := []rune(s); len(r) > 80 {
		s = string(r[:77]) + "..."
	}
	return inert.Line(s)
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
