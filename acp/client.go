package acp

import (
	"context"
	"errors"
	"maps"
	"slices"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/nexuscocreate/nexus/tools"
)

// clientFiles are the client's fs/read_text_file and fs/write_text_file,
// for the core tools of a session's calls (tools.WithClientFiles): the
// tools check the path first, as for their own reads and writes.
type clientFiles struct {
	c       *conn
	session string
}

func (f clientFiles) ReadTextFile(ctx context.Context, path string) (string, error) {
	resp, err := f.c.peer.ReadTextFile(ctx, acpsdk.ReadTextFileRequest{SessionId: acpsdk.SessionId(f.session), Path: path})
	return resp.Content, err
}

func (f clientFiles) WriteTextFile(ctx context.Context, path, content string) error {
	_, err := f.c.peer.WriteTextFile(ctx, acpsdk.WriteTextFileRequest{SessionId: acpsdk.SessionId(f.session), Path: path, Content: content})
	return err
}

// clientTerminal runs execute_command in a terminal of the client
// (acp.terminal: client), shown in the call's content while it runs.
type clientTerminal struct {
	c       *conn
	session string
}

func (t clientTerminal) Run(ctx context.Context, cmd tools.TerminalCommand) (tools.TerminalResult, error) {
	peer, sid := t.c.peer, acpsdk.SessionId(t.session)
	var env []acpsdk.EnvVariable
	for _, k := range slices.Sorted(maps.Keys(cmd.Env)) {
		env = append(env, acpsdk.EnvVariable{Name: k, Value: cmd.Env[k]})
	}
	req := acpsdk.CreateTerminalRequest{SessionId: sid, Command: cmd.Command, Args: cmd.Args, Env: env}
	if cmd.Cwd != "" {
		req.Cwd = &cmd.Cwd
	}
	if cmd.OutputLimit > 0 {
		req.OutputByteLimit = &cmd.OutputLimit
	}
	created, err := peer.CreateTerminal(ctx, req)
	if err != nil {
		return tools.TerminalResult{}, err
	}
	// Whatever happens below, the terminal is released; its requests
	// outlive a cancelled call.
	after := context.WithoutCancel(ctx)
	id := created.TerminalId
	defer peer.ReleaseTerminal(after, acpsdk.ReleaseTerminalRequest{SessionId: sid, TerminalId: id})
	if cmd.CallID != "" {
		t.c.update(after, t.session, acpsdk.UpdateToolCall(acpsdk.ToolCallId(cmd.CallID),
			acpsdk.WithUpdateContent([]acpsdk.ToolCallContent{acpsdk.ToolTerminalRef(id)})))
	}
	wait := ctx
	if cmd.Timeout > 0 {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(ctx, cmd.Timeout)
		defer cancel()
	}
	var res tools.TerminalResult
	exit, err := peer.WaitForTerminalExit(wait, acpsdk.WaitForTerminalExitRequest{SessionId: sid, TerminalId: id})
	if err != nil {
		if ctx.Err() == nil && errors.Is(wait.Err(), context.DeadlineExceeded) {
			res.TimedOut = true
		}
		peer.KillTerminal(after, acpsdk.KillTerminalRequest{SessionId: sid, TerminalId: id})
		if !res.TimedOut {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, err
		}
	}
	out, err := peer.TerminalOutput(after, acpsdk.TerminalOutputRequest{SessionId: sid, TerminalId: id})
	if err != nil {
		return res, err
	}
	res.Output, res.Truncated = out.Output, out.Truncated
	res.ExitCode, res.Signal = exit.ExitCode, deref(exit.Signal)
	if res.ExitCode == nil && res.Signal == "" && out.ExitStatus != nil {
		res.ExitCode, res.Signal = out.ExitStatus.ExitCode, deref(out.ExitStatus.Signal)
	}
	return res, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
