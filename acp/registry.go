package acp

import (
	"fmt"
	"strings"
	"sync"
)

// Registry knows the ACP connections of a daemon and the sessions open on
// each: the MCP servers a client brings are its connection's (their hub
// key), and only the agents of that connection's sessions may use them.
// It is safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	next     int
	sessions map[string]map[string]bool // connection key → session ids
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{sessions: map[string]map[string]bool{}}
}

// KeyPrefix starts the hub key of every ACP connection.
const KeyPrefix = "acp:"

func (r *Registry) open() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	key := fmt.Sprintf("%s%d", KeyPrefix, r.next)
	r.sessions[key] = map[string]bool{}
	return key
}

func (r *Registry) add(key, session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.sessions[key]; m != nil {
		m[session] = true
	}
}

func (r *Registry) remove(key, session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.sessions[key], session)
}

func (r *Registry) close(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.sessions, key)
}

// MayUse reports whether the caller whose author is author ("agent:ID"
// for an agent session) may use the tools of an MCP server that the
// connection owner brought: only the agent of a session open on that
// connection may. An owner that is not an ACP connection's is not this
// registry's to decide, and is refused.
func (r *Registry) MayUse(author, owner string) bool {
	id, ok := strings.CutPrefix(author, "agent:")
	if !ok {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[owner][id]
}
