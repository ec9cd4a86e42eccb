package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/llm"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
	"github.com/nexuscocreate/nexus/workspace"
)

// Options configure [NewService].
type Options struct {
	Layout workspace.Layout
	Config *workspace.Config
	Tools  *tools.Manager
	// MayUse reports whether an agent acting for party may be offered the
	// tool (the policy does not deny it); nil offers every tool.
	MayUse func(party access.Party, def tools.Definition) bool
	// App returns a configured app by id, for the sessions of apps saved
	// before a restart; nil knows none.
	App func(id string) *access.App
	// ReadDefinition reads a definition file as party sees it, for the
	// context file's @def: references; nil makes them unavailable.
	ReadDefinition func(party access.Party, path string) ([]byte, error)
	// ReadDefinitions reads the markdown files under dir of the definitions root,
	// at any depth, that party may read (none when it may not list dir or
	// there is no dir), for the command files of commands/; nil reads none.
	ReadDefinitions func(party access.Party, dir string) ([]DefinitionFile, error)
	// NewProvider makes the adapter of a profile; default llm.New.
	NewProvider func(llm.Profile) (llm.Provider, error)
	// Checkpoints serve the special commands /undo and /rewind; nil: they
	// say checkpoints are off.
	Checkpoints Checkpoints
	// PromptHook, when set, sees each prompt the person submits before it
	// goes to the model (the userPromptSubmit hooks, package tools/hooks):
	// an error stops the prompt, shown to the person; the text it returns
	// is added to the prompt. session and turn name the prompt's turn,
	// party who submits it.
	PromptHook func(ctx context.Context, session, turn, party, prompt string) (added string, err error)
	// Getenv reads API keys; default os.LookupEnv.
	Getenv func(string) (string, bool)
	Logger *slog.Logger
	Now    func() time.Time
}

// Service is the agent core hosted by the daemon: its sessions, each a
// conversation with a model whose tool calls are ordinary Nexus tool
// calls. Every door (the editor, gRPC, the terminal, ACP) uses it with the
// same shapes. It is safe for concurrent use.
type Service struct {
	opts   Options
	logger *slog.Logger

	schemas schemaCache

	mu       sync.Mutex
	sessions map[string]*Session
	closed   bool
	running  sync.WaitGroup

	// watchersMu guards the doors' callbacks of WatchCommands.
	watchersMu sync.Mutex
	watchers   map[*func()]struct{}
}

// NewService opens the sessions saved under .nexus/sessions.
func NewService(opts Options) (*Service, error) {
	if opts.Config == nil {
		return nil, &ComponentInitError{Component: "config", Err: errors.New("no configuration")}
	}
	if opts.Tools == nil {
		return nil, &TEPSInitError{Err: errors.New("no tool manager")}
	}
	if opts.Getenv == nil {
		opts.Getenv = os.LookupEnv
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewProvider == nil {
		getenv, logger := opts.Getenv, opts.Logger
		opts.NewProvider = func(p llm.Profile) (llm.Provider, error) {
			return llm.New(p, llm.Options{Getenv: getenv, Logger: logger})
		}
	}
	s := &Service{opts: opts, logger: opts.Logger, sessions: map[string]*Session{}, watchers: map[*func()]struct{}{}}
	if err := workspace.MakePrivateDir(opts.Layout.Sessions); err != nil {
		return nil, &ComponentInitError{Component: "sessions", Err: err}
	}
	loaded, err := loadSessions(s)
	if err != nil {
		return nil, &ComponentInitError{Component: "sessions", Err: err}
	}
	for _, ss := range loaded {
		s.sessions[ss.id] = ss
	}
	return s, nil
}

// SessionInfo describes a session.
type SessionInfo struct {
	ID      string    `json:"sessionId"`
	Title   string    `json:"title"`
	Profile string    `json:"profile"`
	Model   string    `json:"model"`
	AppID   string    `json:"appId,omitempty"`
	Created time.Time `json:"createdAt"`
	Updated time.Time `json:"updatedAt"`
	// Messages is how many messages the model sees now (after pruning).
	Messages int   `json:"messages"`
	Usage    Use   `json:"usage"`
	Cost     *Cost `json:"cost,omitempty"`
	Running  bool  `json:"running"`
}

// NewSession is what [Service.New] needs.
type NewSession struct {
	// Owner is who starts the session: its agent acts for them.
	Owner access.Party
	// Profile is an llm profile; empty is llm.default.
	Profile string
}

// New starts a session. A profile that does not exist is a ConfigError;
// one whose adapter cannot be made (no API key) is a LIALInitError, and
// no session is made.
func (s *Service) New(ctx context.Context, req NewSession) (SessionInfo, error) {
	if !req.Owner.Valid() {
		return SessionInfo{}, &ComponentInitError{Component: "session", Err: errors.New("no one to act for")}
	}
	if req.Owner.IsAgent() {
		return SessionInfo{}, &ComponentInitError{Component: "session", Err: errors.New("an agent session cannot start another")}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return SessionInfo{}, err
	}
	ss, err := s.newSession(id.String(), req.Owner, req.Profile)
	if err != nil {
		return SessionInfo{}, err
	}
	if err := ss.create(); err != nil {
		return SessionInfo{}, &ComponentInitError{Component: "sessions", Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		ss.remove()
		return SessionInfo{}, ErrClosed
	}
	s.sessions[ss.id] = ss
	return ss.info(), nil
}

// List returns the sessions owner may see, the newest first: the person
// sees the person's sessions, an app its own.
func (s *Service) List(owner access.Party) []SessionInfo {
	s.mu.Lock()
	var out []SessionInfo
	for _, ss := range s.sessions {
		if ss.visibleTo(owner) {
			out = append(out, ss.info())
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b SessionInfo) int { return b.Updated.Compare(a.Updated) })
	return out
}

// get returns a session owner may see.
func (s *Service) get(owner access.Party, id string) (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	ss, ok := s.sessions[id]
	if !ok || !ss.visibleTo(owner) {
		return nil, fmt.Errorf("%w: %q", ErrNoSession, id)
	}
	return ss, nil
}

// Load returns a session and its conversation as updates, to show it
// again (ACP's session/load replays the same way).
func (s *Service) Load(owner access.Party, id string) (SessionInfo, []Update, error) {
	ss, err := s.get(owner, id)
	if err != nil {
		return SessionInfo{}, nil, err
	}
	updates, err := ss.replay()
	if err != nil {
		return SessionInfo{}, nil, err
	}
	return ss.info(), updates, nil
}

// Delete stops a session's prompt and removes it and its file.
func (s *Service) Delete(owner access.Party, id string) error {
	ss, err := s.get(owner, id)
	if err != nil {
		return err
	}
	ss.cancel()
	s.mu.Lock()
	delete(s.sessions, id)
	s.mu.Unlock()
	return ss.remove()
}

// Cancel stops the running prompt of a session, and its tool calls; it
// reports whether one was running.
func (s *Service) Cancel(owner access.Party, id string) (bool, error) {
	ss, err := s.get(owner, id)
	if err != nil {
		return false, err
	}
	return ss.cancel(), nil
}

// PromptOptions are a prompt's doors back to whoever sent it.
type PromptOptions struct {
	// OnUpdate sees every update of the prompt, in order; it must not
	// block for long.
	OnUpdate func(Update)
	// Ask answers the permission requests of the prompt's tool calls (the
	// person's terminal that prompted); none, or one that is not the
	// person's (policy.MayAnswer), leaves them to the editor.
	Ask policy.Approver
	// Elicit answers the questions MCP servers ask the person during the
	// prompt's tool calls (the terminal that prompted); nil leaves them to
	// the editor.
	Elicit tools.Elicitor
	// Images go to the model with the prompt's text, when the session's
	// profile takes images (llm.Profile.TakesImages); otherwise the
	// prompt fails with a PromptError.
	Images []llm.Image
}

// PromptResult is how a prompt ended.
type PromptResult struct {
	// StopReason is ACP's: "end_turn", "max_tokens", "max_turn_requests",
	// "refusal" or "cancelled".
	StopReason string `json:"stopReason"`
	Usage      Use    `json:"usage"`
	Cost       *Cost  `json:"cost,omitempty"`
	// Quit and Resume are what a special command asks of the door: to
	// end (/quit, /exit), or to go on in another session (/resume ID).
	Quit   bool   `json:"quit,omitempty"`
	Resume string `json:"resume,omitempty"`
}

// Stop reasons beyond the model's.
const (
	StopMaxTurnRequests = "max_turn_requests"
	StopCancelled       = "cancelled"
)

// Prompt sends text to the session and runs the turn until the model
// stops, streaming updates; a text that starts with "/" is a special
// command. Only one prompt runs in a session at a time. A model error
// ends the prompt with a LIALError; the session survives it.
func (s *Service) Prompt(ctx context.Context, owner access.Party, id, text string, opts PromptOptions) (PromptResult, error) {
	ss, err := s.get(owner, id)
	if err != nil {
		return PromptResult{}, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return PromptResult{}, ErrClosed
	}
	s.running.Add(1)
	s.mu.Unlock()
	defer s.running.Done()
	return ss.prompt(ctx, text, opts)
}

// SessionProfile returns the profile a session's turns use now (/model
// changes it): a door asks it how to show a prompt's context to the model.
func (s *Service) SessionProfile(owner access.Party, id string) (llm.Profile, error) {
	ss, err := s.get(owner, id)
	if err != nil {
		return llm.Profile{}, err
	}
	return ss.currentProfile(), nil
}

// ApproverFor is the approver of a call an agent session makes while a
// door that can ask (the terminal) prompts it; none otherwise. The daemon
// routes the policy's questions through it (policy.Approvers.Route).
func (s *Service) ApproverFor(call tools.Call) policy.Approver {
	id, ok := strings.CutPrefix(call.Author, "agent:")
	if !ok || id != call.TaskID {
		return policy.Approver{}
	}
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil {
		return policy.Approver{}
	}
	return ss.asker()
}

// Close cancels every running prompt, waits for them, and closes the
// sessions' files.
func (s *Service) Close() error {
	s.mu.Lock()
	s.closed = true
	all := make([]*Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		ss.cancel()
	}
	s.running.Wait()
	var errs []error
	for _, ss := range all {
		errs = append(errs, ss.close())
	}
	return errors.Join(errs...)
}

// Profiles are the configured profiles' names, sorted.
func (s *Service) Profiles() []string { return s.opts.Config.LLM.ProfileNames() }

// DefaultProfile is the profile a new session uses (llm.default); an
// error says what the configuration lacks.
func (s *Service) DefaultProfile() (llm.Profile, error) { return s.profile("") }

// profile is the llm.Profile of a configured profile name ("" is the
// default).
func (s *Service) profile(name string) (llm.Profile, error) {
	cfg := s.opts.Config.LLM
	if name == "" {
		name = cfg.Default
	}
	if name == "" {
		if len(cfg.Profiles) == 0 {
			return llm.Profile{}, &ConfigError{Err: errors.New("no model is configured: add an llm profile to .nexus/config.yaml, for example\n" +
				"  llm:\n    provider: openai\n    model: gpt-5\n    apiKeyEnv: OPENAI_API_KEY\n" +
				"(providers: openai, anthropic, gemini, openai-compatible with a baseURL for Ollama or llama.cpp)")}
		}
		return llm.Profile{}, &ConfigError{Err: fmt.Errorf("several llm profiles (%s) and no llm.default", strings.Join(cfg.ProfileNames(), ", "))}
	}
	p, ok := cfg.Profiles[name]
	if !ok {
		return llm.Profile{}, &ConfigError{Err: fmt.Errorf("no llm profile %q (profiles: %s)", name, strings.Join(cfg.ProfileNames(), ", "))}
	}
	return Profile(name, p), nil
}

// AnswerLimits bound each answer of a model that the workspace asks, an
// agent's or an MCP server's sampling request (agent.maxAnswerSize and
// agent.maxToolCallSize): over them the request ends with an error, and
// nothing past them is read or kept.
func AnswerLimits(a workspace.AgentConfig) llm.Limits {
	return llm.Limits{Answer: int(a.MaxAnswerSize), ToolCall: int(a.MaxToolCallSize)}
}

// Profile is the llm.Profile of a configured profile.
func Profile(name string, p workspace.LLMProfile) llm.Profile {
	return llm.Profile{
		Name: name, ConfigKey: p.Key, Provider: p.Provider, API: p.API, Model: p.Model, APIKeyEnv: p.APIKeyEnv,
		BaseURL: p.BaseURL, Temperature: p.Temperature, MaxOutputTokens: p.MaxOutputTokens,
		ContextWindow: p.ContextWindow, ExtraBody: p.ExtraBody, Images: p.Images,
		Prices: llm.Prices{Input: p.Prices.Input, Output: p.Prices.Output, Cached: p.Prices.Cached},
	}
}

// currency is the label of a profile's prices.
func (s *Service) currency(profile string) string {
	if c := s.opts.Config.LLM.Profiles[profile].Prices.Currency; c != "" {
		return c
	}
	return "USD"
}

// historyOptions are the history's options for a profile.
func (s *Service) historyOptions(p llm.Profile) (HistoryOptions, error) {
	m := s.opts.Config.Messages
	opts := HistoryOptions{
		MaxLength: m.MaxLength, Strategy: m.Pruning, KeepSystem: m.KeepSystem,
		MaxToolResult: int(s.opts.Config.Agent.MaxToolResult),
	}
	if opts.Strategy == PruneTokenBudget {
		if p.ContextWindow <= 0 {
			return opts, &ConfigError{Err: fmt.Errorf("messages.pruning token_budget needs %s.contextWindow (the model's window in tokens)", p.Key())}
		}
		opts.TokenBudget = p.ContextWindow - replyReserve(p)
		if opts.TokenBudget <= 0 {
			return opts, &ConfigError{Err: fmt.Errorf("%s: contextWindow %d leaves no room beside maxOutputTokens %d", p.Key(), p.ContextWindow, replyReserve(p))}
		}
	}
	return opts, nil
}

// replyReserve is the part of the window kept for the reply.
func replyReserve(p llm.Profile) int {
	if p.MaxOutputTokens > 0 {
		return p.MaxOutputTokens
	}
	return 4096
}
