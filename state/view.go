package state

import (
	"github.com/nexuscocreate/nexus/access"
)

// View is the definitions store as one party sees it: every method checks
// the party's access ([access.Party.Definition]) before it reads or writes,
// lists only what the party may see, and writes with the party as author.
// Every door (gRPC, the editor, the core tools) goes through a View; only the
// daemon itself (disk sync) uses the store directly.
type View struct {
	s *Definitions
	p access.Party
}

// For returns the store as p sees it.
func (s *Definitions) For(p access.Party) *View { return &View{s: s, p: p} }

func (v *View) check(path string, write bool) (string, error) {
	path, err := CleanPath(path)
	if err != nil {
		return "", err
	}
	return path, v.p.Definition(path, write)
}

// write fills in the author: the party's own.
func (v *View) write(w WriteOptions) WriteOptions {
	w.Author = v.p.Author()
	return w
}

// Get is [Definitions.Get] for the party.
func (v *View) Get(path, rev string) (File, error) {
	path, err := v.check(path, false)
	if err != nil {
		return File{}, err
	}
	return v.s.Get(path, rev)
}

// Set is [Definitions.Set] for the party, which is the commit's author.
func (v *View) Set(path string, content []byte, w WriteOptions) (string, error) {
	path, err := v.check(path, true)
	if err != nil {
		return "", err
	}
	return v.s.Set(path, content, v.write(w))
}

// ApplyDiff is [Definitions.ApplyDiff] for the party.
func (v *View) ApplyDiff(path, diff string, w WriteOptions) (string, []byte, error) {
	path, err := v.check(path, true)
	if err != nil {
		return "", nil, err
	}
	return v.s.ApplyDiff(path, diff, v.write(w))
}

// Delete is [Definitions.Delete] for the party.
func (v *View) Delete(path string, w WriteOptions) (string, error) {
	path, err := v.check(path, true)
	if err != nil {
		return "", err
	}
	return v.s.Delete(path, v.write(w))
}

// Restore is [Definitions.Restore] for the party.
func (v *View) Restore(path, rev string, w WriteOptions) (string, []byte, error) {
	path, err := v.check(path, true)
	if err != nil {
		return "", nil, err
	}
	return v.s.Restore(path, rev, v.write(w))
}

// History is [Definitions.History] for the party.
func (v *View) History(path string, limit int, pageToken string) ([]HistoryEntry, string, error) {
	path, err := v.check(path, false)
	if err != nil {
		return nil, "", err
	}
	return v.s.History(path, limit, pageToken)
}

// Diff is [Definitions.Diff] for the party.
func (v *View) Diff(path, display, from, to string) (string, error) {
	path, err := v.check(path, false)
	if err != nil {
		return "", err
	}
	return v.s.Diff(path, display, from, to)
}

// List is [Definitions.List] for the party: the directory must be one the
// party may see, and the entries are those it may read, or directories
// that hold something it may read. No other name appears.
func (v *View) List(dir string, recursive bool) ([]Entry, error) {
	dir, err := CleanDir(dir)
	if err != nil {
		return nil, err
	}
	if !v.p.MayList(dir) {
		return nil, v.p.Definition(dir, false)
	}
	entries, err := v.s.List(dir, recursive)
	if err != nil {
		return nil, err
	}
	out := entries[:0]
	for _, e := range entries {
		if v.p.MayRead(e.Path) || (e.Dir && v.p.MayList(e.Path)) {
			out = append(out, e)
		}
	}
	return out, nil
}
