// Package trust keeps the person's approvals of workspace content that
// runs programs: MCP server entries (tools/mcp) and hooks (tools/hooks).
// An approval is a pin (a hash of exactly what runs) under a name; a
// changed entry has another pin and is not approved until the person
// approves it again. Start with [Open].
package trust

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nexuscocreate/nexus/workspace"
)

// ErrCorrupt is the error of [Open] for a file it cannot read as
// approvals.
var ErrCorrupt = errors.New("corrupt trust file")

// version is the version of the trust file's format.
const version = 1

// Kind is what a store approves: Label names it in errors ("MCP", "hook")
// and Key is the file's list of approvals ("servers", "hooks").
type Kind struct {
	Label string
	Key   string
}

// entry is one approval: the pin the person approved under a name.
type entry struct {
	Name string    `json:"name"`
	Pin  string    `json:"pin"`
	Time time.Time `json:"time"`
}

// Store keeps the person's approvals: one pin per name, the last one
// approved. Only pins are stored, never what they pin (which may hold
// secrets from the environment). Every change is written to a temporary
// file, synced, and renamed over the old one (mode 0600); a change that
// returned nil survives a crash. It is safe for concurrent use.
type Store struct {
	path string
	kind Kind

	pinsMu sync.Mutex
	pins   map[string]entry
}

// Empty returns a store at path that trusts nothing and has not read the
// file: for a file that [Open] could not read, whose approvals are not
// to be overwritten (Approve fails with the caller's error instead).
func Empty(path string, kind Kind) *Store {
	return &Store{path: path, kind: kind, pins: map[string]entry{}}
}

// Open reads the trust file at path; a missing file trusts nothing. A
// file that is not a valid trust file is an error wrapping [ErrCorrupt].
func Open(path string, kind Kind) (*Store, error) {
	t := Empty(path, kind)
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s %w: %s (fix or delete the file; then approve again)", path, kind.Label, ErrCorrupt, fmt.Sprintf(format, args...))
	}
	var f map[string]json.RawMessage
	found, err := workspace.ReadJSONFile(path, &f)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return nil, fmt.Errorf("%s trust file: %w", kind.Label, err)
	case err != nil:
		return nil, corrupt("%v", err)
	case !found:
		return t, nil
	}
	var v int
	if err := json.Unmarshal(f["version"], &v); err != nil || v != version {
		return nil, corrupt("version %s, want %d", f["version"], version)
	}
	var entries []entry
	if raw, ok := f[kind.Key]; ok {
		if err := json.Unmarshal(raw, &entries); err != nil {
			return nil, corrupt("%s: %v", kind.Key, err)
		}
	}
	for i, e := range entries {
		if e.Name == "" || e.Pin == "" {
			return nil, corrupt("entry %d has no name or no pin", i)
		}
		t.pins[e.Name] = e
	}
	return t, nil
}

// Path is the file the approvals are kept in.
func (t *Store) Path() string { return t.path }

// Trusted reports whether the person approved pin under name.
func (t *Store) Trusted(name, pin string) bool {
	t.pinsMu.Lock()
	defer t.pinsMu.Unlock()
	e, ok := t.pins[name]
	return ok && e.Pin == pin
}

// Approve records that the person approved pin under name, replacing an
// earlier approval of that name. It returns once the file is durable; on
// error nothing changed.
func (t *Store) Approve(name, pin string, when time.Time) error {
	if name == "" || pin == "" {
		return fmt.Errorf("%s trust: approve: no name or no pin", t.kind.Label)
	}
	t.pinsMu.Lock()
	defer t.pinsMu.Unlock()
	m := maps.Clone(t.pins)
	m[name] = entry{Name: name, Pin: pin, Time: when.UTC().Round(0)}
	list := slices.SortedFunc(maps.Values(m), func(a, b entry) int { return cmp.Compare(a.Name, b.Name) })
	// The version first, as a person reads the file.
	data, err := json.MarshalIndent(struct {
		Version int `json:"version"`
	}{version}, "", "  ")
	if err != nil {
		return err
	}
	entries, err := json.MarshalIndent(list, "  ", "  ")
	if err != nil {
		return err
	}
	key, _ := json.Marshal(t.kind.Key)
	data = append(data[:len(data)-2], fmt.Sprintf(",\n  %s: %s\n}\n", key, entries)...)
	if err := workspace.WriteFileAtomic(t.path, data); err != nil {
		return fmt.Errorf("%s trust file: %w", t.kind.Label, err)
	}
	t.pins = m
	return nil
}
