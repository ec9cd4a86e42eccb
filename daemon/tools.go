package daemon

import (
	"cmp"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/nexuscocreate/nexus/agent"
	"github.com/nexuscocreate/nexus/events"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/rpc"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/command"
	"github.com/nexuscocreate/nexus/tools/core"
	"github.com/nexuscocreate/nexus/tools/hooks"
	"github.com/nexuscocreate/nexus/tools/mcp"
	"github.com/nexuscocreate/nexus/tools/policy"
	"github.com/nexuscocreate/nexus/workspace"
)

// approvalTimeout is how long a call waits for the person's answer before
// it is denied.
const approvalTimeout = 2 * time.Minute

// toolParts are the ToolManager and its policy.
type toolParts struct {
	manager     *tools.Manager
	policy      *policy.Policy
	approvals   *policy.Approvals
	approvers   *policy.Approvers
	permissions rpc.Permissions
	// core holds the workspace directory open (Windows cannot remove a
	// directory held open): closed after the manager.
	core *core.Tools
	// hooks are the hooks of the configuration, the manager's and the
	// agent's prompt hooks.
	hooks *hooks.Hooks
}

// openTools builds the ToolManager with the core tools and the permission
// policy of the configuration.
func openTools(ws string, opts Options, sock string, l layout, cfg *workspace.Config, defs *state.Definitions, bus *events.Bus,
	ss *sessionServers, rec tools.Recorder, logger *slog.Logger) (*toolParts, error) {
	rules, err := policy.FromConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("tool policy: %w", err)
	}
	rules.Workspace = ws // protected writes are checked through the workspace's symlinks
	approvals, err := policy.OpenApprovals(l.Approvals)
	if err != nil {
		return nil, err
	}
	pol := policy.New(rules, approvals)
	// The editor attaches as the approver (nexusd --stdio, at initialized);
	// until then, calls the policy asks about are denied with a message
	// saying so.
	approvers := &policy.Approvers{}
	outputLimit := int(cfg.Tools.OutputLimit)
	ct, err := core.New(core.Config{
		Workspace:      ws,
		Definitions:    defs,
		DefinitionsDir: l.Resolve(cfg.Definitions.Root),
		ReadLimit:      int64(outputLimit),
	})
	if err != nil {
		return nil, fmt.Errorf("core tools: %w", err)
	}
	// Commands see the daemon's socket directory empty when it is not in
	// .nexus/run (hidden with the rest of .nexus), and every other
	// workspace's .nexus.
	var hide []string
	if !strings.HasPrefix(sock, l.Run+string(filepath.Separator)) {
		hide = append(hide, filepath.Dir(sock))
	}
	registry := workspace.DefaultRegistry()
	if err := registry.Add(ws); err != nil {
		logger.Warn("this workspace is not in the registry of workspaces: commands of other workspaces may see its .nexus", "error", err.Error())
	}
	execCfg := core.ExecConfig{
		Hide:            hide,
		OtherWorkspaces: registry.List,
		Runner:          command.NewRunner(command.RunnerOptions{HelperPath: opts.HelperPath, Logger: logger}),
		Mode:            command.Mode(cfg.Tools.Sandbox),
		Network:         cfg.Tools.Network,
		EnvAllowlist:    cfg.Tools.EnvAllowlist,
		Timeout:         time.Duration(cfg.Tools.Timeout),
		OutputLimit:     outputLimit,
	}
	// Hooks run confined as the commands are.
	hk, err := hooks.New(hooks.Options{Workspace: ws, Config: cfg.Hooks, TrustFile: l.HooksTrust, Run: ct.HookRunner(execCfg), Logger: logger})
	if err != nil {
		ct.Close()
		return nil, fmt.Errorf("hooks: %w", err)
	}
	topts := tools.Options{
		Bus:    bus,
		Logger: logger,
		Gate:   ss.gate(pol.Gate(approvers, approvalTimeout, logger)),
		// A result carries at most tools.outputLimit bytes of content;
		// JSON escaping can double it.
		OutputLimit:  2*outputLimit + 64<<10,
		MaxArguments: int(cfg.Tools.MaxArgumentsSize),
		Timeout:      time.Duration(cfg.Tools.Timeout),
		AuditFile:    l.Audit,
		Recorder:     rec,
	}
	if hk.Any() {
		topts.Hooks = hk
	}
	m, err := tools.NewManager(topts)
	if err != nil {
		ct.Close()
		return nil, err
	}
	exec := ct.ExecuteCommand(execCfg)
	for _, t := range append(append(ct.List(), exec), core.WebTools(webConfig(cfg, opts.Version))...) {
		if err := m.Register(t); err != nil {
			m.Close()
			ct.Close()
			return nil, err
		}
	}
	return &toolParts{manager: m, policy: pol, approvals: approvals, approvers: approvers, permissions: pol.CheckWith(m), core: ct, hooks: hk}, nil
}

// webConfig is the configuration of web_fetch and web_search.
func webConfig(cfg *workspace.Config, version string) core.WebConfig {
	w := cfg.Web
	c := core.WebConfig{
		AllowedDomains: w.AllowedDomains,
		MaxFetchSize:   int64(w.MaxFetchSize),
		MaxTextSize:    int(w.MaxTextSize),
		Timeout:        time.Duration(w.Timeout),
		UserAgent:      "Nexus/" + cmp.Or(version, "dev") + " (+https://github.com/nexuscocreate/nexus)",
	}
	if w.Search.Provider != "" {
		c.Search = &core.SearchConfig{URL: w.Search.URL, MaxResults: w.Search.MaxResults}
	}
	return c
}

// openMCP starts the McpHub with the servers of the workspace's MCP files.
// A file that does not load is logged, and the daemon starts without its
// servers; fixing the file applies it.
func openMCP(ws string, cfg *workspace.Config, m *tools.Manager, bus *events.Bus, logger *slog.Logger, level slog.Level, opts Options) *mcp.Hub {
	restart := cfg.MCP.Restart
	if cfg.MCP.MaxRestarts == 0 {
		restart = "never"
	}
	h := mcp.New(mcp.Options{
		Workspace:      ws,
		Tools:          m,
		Bus:            bus,
		Logger:         logger,
		LogLevel:       level,
		CallTimeout:    time.Duration(cfg.MCP.CallTimeout),
		StartupTimeout: time.Duration(cfg.MCP.StartupTimeout),
		Restart:        restart,
		MaxRestarts:    cfg.MCP.MaxRestarts,
		OutputLimit:    int(cfg.Tools.OutputLimit),
		Version:        opts.Version,
		Elicitation:    true,
		Sampling:       sampling(cfg, opts, logger),
	})
	h.Reload(nil)
	return h
}

// sampling is how the McpHub answers MCP servers' sampling requests: by
// the gateway client of the call (mcp.sampling.client), else with the llm
// profile of mcp.sampling.profile; nil (no sampling declared) with
// neither.
func sampling(cfg *workspace.Config, opts Options, logger *slog.Logger) *mcp.Sampling {
	sc := cfg.MCP.Sampling
	if sc.Profile == "" {
		if sc.Client {
			return &mcp.Sampling{Client: true, MaxTokens: sc.MaxTokens}
		}
		return nil
	}
	names := sc.Profiles
	if len(names) == 0 {
		names = cfg.LLM.ProfileNames()
	}
	s := &mcp.Sampling{Client: sc.Client, Profile: sc.Profile, MaxTokens: sc.MaxTokens, Profiles: map[string]llm.Profile{}, NewProvider: opts.NewProvider,
		Limits: agent.AnswerLimits(cfg.Agent)}
	for _, n := range append(names, sc.Profile) {
		s.Profiles[n] = agent.Profile(n, cfg.LLM.Profiles[n])
	}
	if s.NewProvider == nil {
		getenv := opts.Getenv
		s.NewProvider = func(p llm.Profile) (llm.Provider, error) {
			return llm.New(p, llm.Options{Getenv: getenv, Logger: logger})
		}
	}
	return s
}
