package policy

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

// ErrCorruptApprovals is returned by [OpenApprovals] for a file it cannot
// read as approvals.
var ErrCorruptApprovals = errors.New("corrupt approvals file")

// approvalsVersion is the version of the approvals file format.
const approvalsVersion = 1

// Approval is one remembered "always" answer.
type Approval struct {
	// AppID is "" for the person.
	AppID  string `json:"appId"`
	Tool   string `json:"tool"`
	Server string `json:"server,omitempty"`
	// DefinitionHash is the tool definition the answer was given for; the
	// answer does not apply to another.
	DefinitionHash string    `json:"definitionHash"`
	Allow          bool      `json:"allow"`
	Time           time.Time `json:"time"`
}

type approvalsFile struct {
	Version   int        `json:"version"`
	Approvals []Approval `json:"approvals"`
}

type approvalKey struct{ app, server, tool string }

// Approvals remembers "always" answers, one per app, server and tool,
// persisted as JSON in one file. Every change is written to a temporary
// file that is synced and renamed over the old one, and the directory is
// synced: a change that returned nil survives a crash, and the file is
// never half written. It is safe for concurrent use.
type Approvals struct {
	path string

	approvalsMu sync.Mutex
	// approvals holds the answers; a change builds a new map and keeps it
	// only once it is written.
	approvals map[approvalKey]Approval
}

// OpenApprovals reads the approvals file at path; a missing file is no
// approvals. A file that is not valid approvals JSON is an error wrapping
// [ErrCorruptApprovals]: the daemon should stop and say so rather than
// forget what the person answered.
func OpenApprovals(path string) (*Approvals, error) {
	a := &Approvals{path: path, approvals: make(map[approvalKey]Approval)}
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("approvals file %s: %w: %s (fix or delete the file)", path, ErrCorruptApprovals, fmt.Sprintf(format, args...))
	}
	var f approvalsFile
	found, err := workspace.ReadJSONFile(path, &f)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return nil, fmt.Errorf("approvals: %w", err)
	case err != nil:
		return nil, corrupt("%v", err)
	case !found:
		return a, nil
	}
	if f.Version != approvalsVersion {
		return nil, corrupt("version %d, want %d", f.Version, approvalsVersion)
	}
	for i, ap := range f.Approvals {
		if ap.Tool == "" {
			return nil, corrupt("approval %d has no tool", i)
		}
		if ap.DefinitionHash == "" {
			return nil, corrupt("approval %d has no definitionHash", i)
		}
		a.approvals[approvalKey{ap.AppID, ap.Server, ap.Tool}] = ap
	}
	return a, nil
}

// Path is the file the approvals are kept in.
func (a *Approvals) Path() string { return a.path }

// Remember stores an answer for appID's use of a tool with the definition
// hash defHash, replacing any earlier answer for that app and tool. It
// returns after the file is durable; on error nothing changed.
func (a *Approvals) Remember(appID, tool, server, defHash string, allow bool, when time.Time) error {
	if tool == "" {
		return errors.New("approvals: remember: no tool")
	}
	if defHash == "" {
		return errors.New("approvals: remember: no definition hash")
	}
	a.approvalsMu.Lock()
	defer a.approvalsMu.Unlock()
	m := maps.Clone(a.approvals)
	m[approvalKey{appID, server, tool}] = Approval{
		AppID: appID, Tool: tool, Server: server, DefinitionHash: defHash,
		Allow: allow, Time: when.UTC().Round(0),
	}
	if err := a.write(m); err != nil {
		return err
	}
	a.approvals = m
	return nil
}

// Lookup returns the stored answer for appID's use of the tool, if there is
// one for this definition hash. An answer given for another definition of
// the tool does not apply.
func (a *Approvals) Lookup(appID, tool, server, defHash string) (allow bool, found bool) {
	ap, ok := a.get(appID, tool, server, defHash)
	return ap.Allow, ok
}

func (a *Approvals) get(appID, tool, server, defHash string) (Approval, bool) {
	a.approvalsMu.Lock()
	ap, ok := a.approvals[approvalKey{appID, server, tool}]
	a.approvalsMu.Unlock()
	if !ok || ap.DefinitionHash != defHash {
		return Approval{}, false
	}
	return ap, true
}

// List returns every stored answer, sorted by app, server and tool.
func (a *Approvals) List() []Approval {
	a.approvalsMu.Lock()
	out := slices.Collect(maps.Values(a.approvals))
	a.approvalsMu.Unlock()
	sortApprovals(out)
	return out
}

// Revoke forgets the answer for appID's use of a tool, whatever its
// definition hash; it reports whether there was one.
func (a *Approvals) Revoke(appID, tool, server string) (bool, error) {
	a.approvalsMu.Lock()
	defer a.approvalsMu.Unlock()
	k := approvalKey{appID, server, tool}
	if _, ok := a.approvals[k]; !ok {
		return false, nil
	}
	m := maps.Clone(a.approvals)
	delete(m, k)
	if err := a.write(m); err != nil {
		return false, err
	}
	a.approvals = m
	return true, nil
}

func sortApprovals(s []Approval) {
	slices.SortFunc(s, func(x, y Approval) int {
		return cmp.Or(cmp.Compare(x.AppID, y.AppID), cmp.Compare(x.Server, y.Server), cmp.Compare(x.Tool, y.Tool))
	})
}

// write stores m in the file: temporary file, fsync, rename, fsync of the
// directory. The caller holds mu.
func (a *Approvals) write(m map[approvalKey]Approval) error {
	f := approvalsFile{Version: approvalsVersion, Approvals: slices.Collect(maps.Values(m))}
	if f.Approvals == nil {
		f.Approvals = []Approval{}
	}
	sortApprovals(f.Approvals)
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	data = append(data, '\n')
	if err := workspace.WriteFileAtomic(a.path, data); err != nil {
		return fmt.Errorf("approvals: %w", err)
	}
	return nil
}
