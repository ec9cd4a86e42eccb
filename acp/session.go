package acp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// modes are the session modes, mapped onto the policy (policy.WithMode).
var modes = []acpsdk.SessionMode{
	{Id: acpsdk.SessionModeId(policy.ModeDefault), Name: "Default", Description: ptr("The workspace's permission policy, as configured")},
	{Id: acpsdk.SessionModeId(policy.ModeAsk), Name: "Ask every time", Description: ptr("Every call that changes something is asked, even where the policy allows it")},
	{Id: acpsdk.SessionModeId(policy.ModeAutoEdit), Name: "Auto-edit", Description: ptr("File edits in the workspace run without asking; commands and protected files are still asked")},
	{Id: acpsdk.SessionModeId(policy.ModeReadOnly), Name: "Read-only", Description: ptr("Only tools that read run; every other call is denied")},
}

func ptr[T any](v T) *T { return &v }

// startMode is the mode a session starts in: acp.mode.
func (c *conn) startMode() policy.Mode {
	if m := policy.Mode(c.opts.Config.ACP.Mode); m.Valid() {
		return m
	}
	return policy.ModeDefault
}

func (c *conn) modeState(s *session) *acpsdk.SessionModeState {
	return &acpsdk.SessionModeState{AvailableModes: modes, CurrentModeId: acpsdk.SessionModeId(s.currentMode())}
}

// checkCwd returns cwd, cleaned, if it is the workspace or inside it.
func (c *conn) checkCwd(cwd string) (string, error) {
	if cwd == "" {
		return "", invalidParams("cwd is missing: give the absolute path of the workspace %s or of a directory inside it", c.opts.Workspace)
	}
	if !filepath.IsAbs(cwd) {
		return "", invalidParams("cwd %q is not an absolute path (the workspace is %s)", cwd, c.opts.Workspace)
	}
	clean := filepath.Clean(cwd)
	real := clean
	if r, err := filepath.EvalSymlinks(clean); err == nil {
		real = r
	}
	root := c.opts.Workspace
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || filepath.IsAbs(rel) || len(rel) > 2 && rel[:3] == ".."+string(filepath.Separator) {
		return "", invalidParams("cwd %s is outside the workspace %s: this Nexus agent serves that workspace only (start nexusd acp --workspace DIR for another)", cwd, c.opts.Workspace)
	}
	if fi, err := os.Stat(clean); err != nil || !fi.IsDir() {
		return "", invalidParams("cwd %s is not a directory of the workspace", cwd)
	}
	return clean, nil
}

// checkOpen checks what opening a session takes, before anything is
// made: its cwd (returned cleaned) and its MCP servers.
func (c *conn) checkOpen(cwd string, servers []acpsdk.McpServer) (string, error) {
	cwd, err := c.checkCwd(cwd)
	if err != nil {
		return "", err
	}
	return cwd, c.checkServers(servers)
}

// open records a session as open on this connection, with the MCP servers
// its client passed.
func (c *conn) open(id, cwd string, servers []acpsdk.McpServer) (*session, error) {
	s := &session{id: id, cwd: cwd}
	s.mode.Store(c.startMode())
	if err := c.addServers(s, servers); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if prev, ok := c.sessions[id]; ok {
		s.mode.Store(prev.currentMode())
	}
	c.sessions[id] = s
	c.mu.Unlock()
	c.opts.Registry.add(c.key, id)
	return s, nil
}

// get returns a session open on this connection.
func (c *conn) get(id acpsdk.SessionId) (*session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[string(id)]
	if !ok {
		return nil, &acpsdk.RequestError{Code: -32002, Message: "no session " + string(id) + " is open on this connection: " +
			"session/new starts one, session/load or session/resume opens a saved one (session/list lists them)"}
	}
	return s, nil
}

// NewSession starts a session of the agent core in cwd.
func (c *conn) NewSession(ctx context.Context, req acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	cwd, err := c.checkOpen(req.Cwd, req.McpServers)
	if err != nil {
		return acpsdk.NewSessionResponse{}, err
	}
	info, err := c.opts.Agent.New(ctx, agent.NewSession{Owner: c.opts.Party})
	if err != nil {
		return acpsdk.NewSessionResponse{}, requestError(err)
	}
	s, err := c.open(info.ID, cwd, req.McpServers)
	if err != nil {
		c.opts.Agent.Delete(c.opts.Party, info.ID)
		return acpsdk.NewSessionResponse{}, err
	}
	c.logger.Info("ACP session started", "session", info.ID, "cwd", cwd, "mcpServers", len(req.McpServers))
	go c.sendCommands(s.id)
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(info.ID), Modes: c.modeState(s)}, nil
}

// sendCommands tells the client the special commands a prompt may be.
func (c *conn) sendCommands(id string) {
	c.commandsMu.Lock()
	defer c.commandsMu.Unlock()
	cmds := c.commands()
	c.sentCommands = commandsKey(cmds)
	c.sendCommandList(id, cmds)
}

// resendCommands sends the special commands again to every session open
// here, when they are not those sent last: a command file was added,
// changed or removed (agent.Service.WatchCommands).
func (c *conn) resendCommands() {
	c.commandsMu.Lock()
	defer c.commandsMu.Unlock()
	cmds := c.commands()
	key := commandsKey(cmds)
	if key == c.sentCommands {
		return
	}
	c.sentCommands = key
	c.mu.Lock()
	ids := make([]string, 0, len(c.sessions))
	for id := range c.sessions {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.sendCommandList(id, cmds)
	}
}

// commands are the special commands of the client's party, in ACP's shape.
func (c *conn) commands() []acpsdk.AvailableCommand {
	var cmds []acpsdk.AvailableCommand
	for _, cmd := range c.opts.Agent.Commands(c.opts.Party) {
		ac := acpsdk.AvailableCommand{Name: cmd.Name, Description: cmd.Description}
		if cmd.Input != nil {
			ac.Input = &acpsdk.AvailableCommandInput{Unstructured: &acpsdk.UnstructuredCommandInput{Hint: cmd.Input.Hint}}
		}
		cmds = append(cmds, ac)
	}
	return cmds
}

func commandsKey(cmds []acpsdk.AvailableCommand) string {
	data, _ := json.Marshal(cmds)
	return string(data)
}

func (c *conn) sendCommandList(id string, cmds []acpsdk.AvailableCommand) {
	c.update(context.Background(), id, acpsdk.SessionUpdate{AvailableCommandsUpdate: &acpsdk.SessionAvailableCommandsUpdate{
		SessionUpdate: "available_commands_update", AvailableCommands: cmds}})
}

// update sends a session/update; a client that went is logged, not an
// error of the turn.
func (c *conn) update(ctx context.Context, id string, u acpsdk.SessionUpdate) {
	if err := c.peer.SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: acpsdk.SessionId(id), Update: u}); err != nil {
		c.logger.Debug("ACP session/update not sent", "session", id, "error", err.Error())
	}
}

// LoadSession opens a saved session and replays its conversation as
// session/update notifications before it answers.
func (c *conn) LoadSession(ctx context.Context, req acpsdk.LoadSessionRequest) (acpsdk.LoadSessionResponse, error) {
	cwd, err := c.checkOpen(req.Cwd, req.McpServers)
	if err != nil {
		return acpsdk.LoadSessionResponse{}, err
	}
	_, updates, err := c.opts.Agent.Load(c.opts.Party, string(req.SessionId))
	if err != nil {
		return acpsdk.LoadSessionResponse{}, requestError(err)
	}
	s, err := c.open(string(req.SessionId), cwd, req.McpServers)
	if err != nil {
		return acpsdk.LoadSessionResponse{}, err
	}
	m := c.mapper(s)
	for _, u := range updates {
		for _, au := range m.convert(u) {
			c.update(ctx, s.id, au)
		}
	}
	go c.sendCommands(s.id)
	return acpsdk.LoadSessionResponse{Modes: c.modeState(s)}, nil
}

// ResumeSession opens a saved session without replaying it.
func (c *conn) ResumeSession(ctx context.Context, req acpsdk.ResumeSessionRequest) (acpsdk.ResumeSessionResponse, error) {
	cwd, err := c.checkOpen(req.Cwd, req.McpServers)
	if err != nil {
		return acpsdk.ResumeSessionResponse{}, err
	}
	if _, _, err := c.opts.Agent.Load(c.opts.Party, string(req.SessionId)); err != nil {
		return acpsdk.ResumeSessionResponse{}, requestError(err)
	}
	s, err := c.open(string(req.SessionId), cwd, req.McpServers)
	if err != nil {
		return acpsdk.ResumeSessionResponse{}, err
	}
	go c.sendCommands(s.id)
	return acpsdk.ResumeSessionResponse{Modes: c.modeState(s)}, nil
}

// ListSessions lists the saved sessions the client's party may see, the
// newest first. Every session is of this workspace; its cwd is the one it
// was opened with on this connection, else the workspace root.
func (c *conn) ListSessions(ctx context.Context, req acpsdk.ListSessionsRequest) (acpsdk.ListSessionsResponse, error) {
	if req.Cwd != nil {
		if _, err := c.checkCwd(*req.Cwd); err != nil {
			return acpsdk.ListSessionsResponse{}, err
		}
	}
	out := acpsdk.ListSessionsResponse{Sessions: []acpsdk.SessionInfo{}}
	for _, info := range c.opts.Agent.List(c.opts.Party) {
		cwd := c.opts.Workspace
		c.mu.Lock()
		if s, ok := c.sessions[info.ID]; ok {
			cwd = s.cwd
		}
		c.mu.Unlock()
		si := acpsdk.SessionInfo{SessionId: acpsdk.SessionId(info.ID), Cwd: cwd, UpdatedAt: ptr(info.Updated.UTC().Format(time.RFC3339))}
		if info.Title != "" {
			si.Title = ptr(info.Title)
		}
		out.Sessions = append(out.Sessions, si)
	}
	return out, nil
}

// CloseSession cancels a session's prompt and closes it on this
// connection; the session stays saved.
func (c *conn) CloseSession(ctx context.Context, req acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	s, err := c.get(req.SessionId)
	if err != nil {
		return acpsdk.CloseSessionResponse{}, err
	}
	c.opts.Agent.Cancel(c.opts.Party, s.id)
	c.mu.Lock()
	delete(c.sessions, s.id)
	c.mu.Unlock()
	c.opts.Registry.remove(c.key, s.id)
	return acpsdk.CloseSessionResponse{}, nil
}

// SetSessionMode switches the session's mode; the calls already running
// keep the mode they started with.
func (c *conn) SetSessionMode(ctx context.Context, req acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	s, err := c.get(req.SessionId)
	if err != nil {
		return acpsdk.SetSessionModeResponse{}, err
	}
	m := policy.Mode(req.ModeId)
	if !m.Valid() {
		return acpsdk.SetSessionModeResponse{}, invalidParams("unknown mode %q: the modes are default, ask, auto-edit and read-only", req.ModeId)
	}
	s.mode.Store(m)
	c.logger.Info("ACP session mode changed", "session", s.id, "mode", string(m))
	c.update(ctx, s.id, acpsdk.SessionUpdate{CurrentModeUpdate: &acpsdk.SessionCurrentModeUpdate{
		SessionUpdate: "current_mode_update", CurrentModeId: req.ModeId}})
	return acpsdk.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption: Nexus has no configuration options beyond the
// modes.
func (c *conn) SetSessionConfigOption(ctx context.Context, req acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	return acpsdk.SetSessionConfigOptionResponse{}, invalidParams("Nexus sessions have no configuration options (the modes are set with session/set_mode)")
}

// Cancel stops the session's running prompt and its tool calls; the
// prompt answers "cancelled".
func (c *conn) Cancel(ctx context.Context, req acpsdk.CancelNotification) error {
	s, err := c.get(req.SessionId)
	if err != nil {
		c.logger.Debug("ACP session/cancel of a session not open here", "session", string(req.SessionId))
		return nil
	}
	if _, err := c.opts.Agent.Cancel(c.opts.Party, s.id); err != nil && !errors.Is(err, agent.ErrNoSession) {
		c.logger.Warn("ACP session/cancel", "session", s.id, "error", err.Error())
	}
	return nil
}
