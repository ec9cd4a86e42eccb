package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools"
	"github.com/nexuscocreate/nexus/tools/policy"
	"github.com/nexuscocreate/nexus/tools/trust"
	"github.com/nexuscocreate/nexus/workspace"
)

// Trust: a server runs only once the person has approved its entry, and
// the approval is pinned to the entry's launch values. A tool call can
// write .mcp.json or .vscode/mcp.json; what it writes there waits for the
// person (state pending_approval) and never starts by itself, not even
// lazily by a call to its tools.

// Launch is what a server entry runs, after ${VAR} expansion: for stdio the
// command, its arguments, working directory, its own environment variables
// and the names of those it inherits from the daemon; for http the URL and
// headers, and how it signs in to the server (the oauth block, secrets by
// the names of their variables). It is what the person sees when asked to
// approve, and what the approval is pinned to ([Launch.Pin]); the other keys
// of an entry (lazy, timeouts, tool filters, enabled) change nothing that
// runs.
type Launch struct {
	Transport  string            `json:"transport"`
	Command    string            `json:"command,omitempty"`
	Args       []string          `json:"args,omitempty"`
	Cwd        string            `json:"cwd,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	InheritEnv []string          `json:"inheritEnv,omitempty"`
	URL        string            `json:"url,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	OAuth      *LaunchOAuth      `json:"oauth,omitempty"`
}

// Launch returns the values the server runs with.
func (c ServerConfig) Launch() Launch {
	if c.Transport == "http" {
		return Launch{Transport: c.Transport, URL: c.URL, Headers: c.Headers, OAuth: c.OAuth.launch()}
	}
	return Launch{Transport: c.Transport, Command: c.Command, Args: c.Args, Cwd: c.Cwd, Env: c.Env, InheritEnv: c.InheritEnv}
}

// pinVersion is part of what a pin hashes, so that a change of the format
// makes every pin new rather than equal by accident.
const pinVersion = 1

// Pin is "sha256:" and the hex SHA-256 of the launch values as JSON (maps
// with sorted keys): two entries with the same pin run the same thing. An
// approval holds for the pin it was given for.
func (l Launch) Pin() string {
	data, err := json.Marshal(struct {
		Version int `json:"v"`
		Launch
	}{pinVersion, l})
	if err != nil { // strings, slices and maps of strings always marshal
		panic(err)
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TrustFile returns the file where the person's approvals of the
// workspace's MCP servers are kept: .nexus/mcp-trust.json, which tool
// calls cannot write.
func TrustFile(ws string) string {
	return workspace.NewLayout(absWorkspace(ws)).MCPTrust
}

var (
	// ErrPinMismatch is the error of [Hub.Trust] when the entry's launch
	// values are no longer those the person was shown.
	ErrPinMismatch = errors.New("the entry changed since it was shown")
	// ErrCorruptTrust is the error of [OpenTrustStore] for a file it cannot
	// read as approvals.
	ErrCorruptTrust = trust.ErrCorrupt
)

// TrustStore keeps the person's approvals of MCP servers: one pin per
// server name (see package trust).
type TrustStore = trust.Store

// trustKind is what the MCP trust file approves: servers.
var trustKind = trust.Kind{Label: "MCP", Key: "servers"}

// OpenTrustStore reads the trust file at path; a missing file trusts
// nothing. A file that is not a valid trust file is an error wrapping
// [ErrCorruptTrust].
func OpenTrustStore(path string) (*TrustStore, error) {
	return trust.Open(path, trustKind)
}

// TrustAsker asks the person whether to approve a server that waits for
// approval, showing st.Launch; it returns true when they approve. ctx ends
// when the question no longer matters (the server was approved another
// way, its entry changed or went, the asker was replaced).
type TrustAsker func(ctx context.Context, st Status) (bool, error)

// SetTrustAsker attaches fn (nil detaches) as the asker of the person, on
// the surface who (the editor): it is asked at once about every server
// waiting for approval, and then about each server that comes to wait.
// Each entry (name and pin) is asked about once per asker: a refusal, or
// no answer, leaves the server waiting until it is approved another way
// ([Hub.Trust]). An asker that is not the person (policy.MayAnswer) is
// never attached.
func (h *Hub) SetTrustAsker(who access.Party, fn TrustAsker) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.asking.Set(who, fn) || h.closed {
		return
	}
	for _, name := range sortedNames(h.servers) {
		h.askLocked(h.servers[name])
	}
}

// askLocked asks the attached asker about s if it waits for approval and
// was not asked about yet. The caller holds h.mu.
func (h *Hub) askLocked(s *server) {
	st := s.statusNow()
	if st.State != StatePendingApproval {
		return
	}
	h.asking.Ask(trust.Question[Status]{
		Name: st.Name, Pin: s.pin, State: st,
		Approve: func(who access.Party, name, pin string) error {
			_, err := h.Trust(who, name, pin)
			return err
		},
		Until: []<-chan struct{}{s.approved, s.life.Done()},
		What:  "MCP server", Key: "server", How: "nexus mcp trust", Logger: h.logger,
	})
}

// Trust approves the entry of a server and starts it (a lazy one waits for
// its first call), on the say-so of by: only the person approves
// (policy.MayAnswer), an app or its agent gets [policy.ErrNotThePerson]
// and nothing changes. pin, when not "", must be the entry's current pin
// (the values the person was shown), or Trust fails with
// [ErrPinMismatch]; "" approves the entry as it is now. The approval is
// written to the trust file before the server starts, and holds across
// restarts until the entry's launch values change. A server already
// trusted is left alone.
func (h *Hub) Trust(by access.Party, name, pin string) (Status, error) {
	if err := policy.MayAnswer(by); err != nil {
		return Status{}, fmt.Errorf("MCP server %q not trusted: %w", name, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.servers[name]
	if !ok {
		return Status{}, fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	if s.cfg.Err != nil {
		return Status{}, fmt.Errorf("MCP server %q cannot run: its entry in %s is invalid: %v", name, s.cfg.Source, s.cfg.Err)
	}
	if pin != "" && pin != s.pin {
		return Status{}, fmt.Errorf("MCP server %q: %w (shown %s, now %s): look at it again", name, ErrPinMismatch, shortPin(pin), shortPin(s.pin))
	}
	if !h.trust.Trusted(name, s.pin) {
		if h.trustErr != nil {
			return Status{}, fmt.Errorf("MCP server %q not trusted: %w", name, h.trustErr)
		}
		if err := h.trust.Approve(name, s.pin, time.Now()); err != nil {
			return Status{}, err
		}
		h.logger.Info("MCP server approved by the person", "server", name, "source", s.cfg.Source, "pin", shortPin(s.pin), "by", by.String())
	}
	s.approve()
	return s.statusNow(), nil
}

func shortPin(pin string) string {
	if len(pin) > len("sha256:")+12 {
		return pin[:len("sha256:")+12]
	}
	return pin
}

// pendingError is the error of a call to a server that waits for approval.
func (s *server) pendingError() *tools.Error {
	return tools.Errorf(tools.CodePermissionDenied, "%s", s.pendingMessage())
}

func (s *server) pendingMessage() string {
	return fmt.Sprintf("MCP server %q (%s) waits for the person's approval and has not been started: "+
		"`nexus mcp trust %s` shows its command, arguments, environment and URL and approves them (or approve it when the editor asks)",
		s.cfg.Name, s.cfg.Source, s.cfg.Name)
}
