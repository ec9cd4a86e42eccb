package state

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ChangeType is what a commit did to a path.
type ChangeType int

const (
	Added ChangeType = iota + 1
	Modified
	Deleted
)

func (c ChangeType) String() string {
	switch c {
	case Added:
		return "added"
	case Modified:
		return "modified"
	case Deleted:
		return "deleted"
	}
	return "unknown"
}

var changeLetters = map[ChangeType]byte{Added: 'A', Modified: 'M', Deleted: 'D'}

// commitRecord is what the index keeps of one commit.
type commitRecord struct {
	hash, parent plumbing.Hash
	when         time.Time
	author       string
	message      string
	changes      []pathChange
}

type pathChange struct {
	path   string
	change ChangeType
}

// historyIndex maps every path to the commits that changed it, so that the
// history of one path is a lookup rather than a walk of the repository. It
// lives in memory and in an append-only file beside the repository; on open
// it is checked against the branch and caught up or rebuilt.
type historyIndex struct {
	path    string
	commits []*commitRecord
	pos     map[plumbing.Hash]int
	byPath  map[string][]int // positions in commits, ascending
}

const indexHeader = "nexus-history-index v1"

func newHistoryIndex(path string) *historyIndex {
	return &historyIndex{path: path, pos: map[plumbing.Hash]int{}, byPath: map[string][]int{}}
}

// load reads the index file. It returns whether the file must be rewritten:
// a torn last line or a broken chain keeps only the part before it.
func (ix *historyIndex) load() (rewrite bool, err error) {
	data, err := os.ReadFile(ix.path)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	// The records' strings are slices of this one string.
	text := string(data)
	header, text, ok := strings.Cut(text, "\n")
	if !ok || header != indexHeader {
		return true, nil
	}
	n := strings.Count(text, "\n")
	ix.commits = make([]*commitRecord, 0, n)
	ix.pos = make(map[plumbing.Hash]int, n)
	recs := make([]commitRecord, n)
	for i := range n {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		rec := &recs[i]
		if err := parseIndexLine(line, rec); err != nil || (len(ix.commits) > 0 && rec.parent != ix.commits[len(ix.commits)-1].hash) ||
			(len(ix.commits) == 0 && !rec.parent.IsZero()) {
			return true, nil
		}
		ix.add(rec)
	}
	return text != "", nil // a torn last line
}

func (ix *historyIndex) add(rec *commitRecord) {
	p := len(ix.commits)
	ix.commits = append(ix.commits, rec)
	ix.pos[rec.hash] = p
	for _, c := range rec.changes {
		ix.byPath[c.path] = append(ix.byPath[c.path], p)
	}
}

// truncate drops the commits from position n on.
func (ix *historyIndex) truncate(n int) {
	for _, rec := range ix.commits[n:] {
		delete(ix.pos, rec.hash)
		for _, c := range rec.changes {
			ps := ix.byPath[c.path]
			for len(ps) > 0 && ps[len(ps)-1] >= n {
				ps = ps[:len(ps)-1]
			}
			if len(ps) == 0 {
				delete(ix.byPath, c.path)
			} else {
				ix.byPath[c.path] = ps
			}
		}
	}
	ix.commits = ix.commits[:n]
}

// catchUp makes the index describe exactly the history of head: commits the
// index has beyond head are dropped, and commits it lacks are read from the
// repository and diffed against their parents. It reports whether the index
// changed, so that the caller rewrites the file.
func (ix *historyIndex) catchUp(r *repo, head plumbing.Hash) (changed bool, err error) {
	var missing []plumbing.Hash
	h := head
	for !h.IsZero() {
		if _, ok := ix.pos[h]; ok {
			break
		}
		missing = append(missing, h)
		c, err := r.readCommit(h)
		if err != nil {
			return false, fmt.Errorf("index history: %w", err)
		}
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		} else {
			h = plumbing.ZeroHash
		}
	}
	keep := 0
	if !h.IsZero() {
		keep = ix.pos[h] + 1
	}
	if keep < len(ix.commits) {
		ix.truncate(keep)
		changed = true
	}
	for i := len(missing) - 1; i >= 0; i-- {
		rec, err := recordCommit(r, missing[i])
		if err != nil {
			return false, err
		}
		ix.add(rec)
		changed = true
	}
	return changed, nil
}

// recordCommit builds the index record of a commit by diffing its tree
// against its first parent's.
func recordCommit(r *repo, h plumbing.Hash) (*commitRecord, error) {
	c, err := r.readCommit(h)
	if err != nil {
		return nil, err
	}
	rec := &commitRecord{hash: h, when: c.Author.When.UTC(), author: c.Author.Name, message: c.Message}
	parentTree := plumbing.ZeroHash
	if len(c.ParentHashes) > 0 {
		rec.parent = c.ParentHashes[0]
		pc, err := r.readCommit(rec.parent)
		if err != nil {
			return nil, err
		}
		parentTree = pc.TreeHash
	}
	if err := diffTrees(r, parentTree, c.TreeHash, "", &rec.changes); err != nil {
		return nil, fmt.Errorf("diff commit %s: %w", h, err)
	}
	sort.Slice(rec.changes, func(i, j int) bool { return rec.changes[i].path < rec.changes[j].path })
	return rec, nil
}

// diffTrees appends the file changes between two trees, skipping subtrees
// whose hashes are equal. A zero hash is the empty tree.
func diffTrees(r *repo, a, b plumbing.Hash, prefix string, out *[]pathChange) error {
	ea, err := treeEntries(r, a)
	if err != nil {
		return err
	}
	eb, err := treeEntries(r, b)
	if err != nil {
		return err
	}
	for name, x := range ea {
		y, ok := eb[name]
		p := joinPath(prefix, name)
		switch {
		case !ok:
			if err := emitAll(r, x, p, Deleted, out); err != nil {
				return err
			}
		case x.Hash == y.Hash && x.Mode == y.Mode:
		case x.Mode == filemode.Dir && y.Mode == filemode.Dir:
			if err := diffTrees(r, x.Hash, y.Hash, p, out); err != nil {
				return err
			}
		case x.Mode != filemode.Dir && y.Mode != filemode.Dir:
			*out = append(*out, pathChange{p, Modified})
		default:
			if err := emitAll(r, x, p, Deleted, out); err != nil {
				return err
			}
			if err := emitAll(r, y, p, Added, out); err != nil {
				return err
			}
		}
	}
	for name, y := range eb {
		if _, ok := ea[name]; !ok {
			if err := emitAll(r, y, joinPath(prefix, name), Added, out); err != nil {
				return err
			}
		}
	}
	return nil
}

func emitAll(r *repo, e object.TreeEntry, p string, change ChangeType, out *[]pathChange) error {
	if e.Mode != filemode.Dir {
		*out = append(*out, pathChange{p, change})
		return nil
	}
	entries, err := treeEntries(r, e.Hash)
	if err != nil {
		return err
	}
	for name, sub := range entries {
		if err := emitAll(r, sub, joinPath(p, name), change, out); err != nil {
			return err
		}
	}
	return nil
}

func treeEntries(r *repo, h plumbing.Hash) (map[string]object.TreeEntry, error) {
	m := map[string]object.TreeEntry{}
	if h.IsZero() {
		return m, nil
	}
	t, err := r.readTree(h)
	if err != nil {
		return nil, err
	}
	for _, e := range t.Entries {
		if e.Mode == filemode.Submodule {
			continue
		}
		m[e.Name] = e
	}
	return m, nil
}

// appendFile appends records to the index file, in one write. The file is
// a cache of the repository: it is not synced, and a torn tail is rebuilt
// on open.
func (ix *historyIndex) appendFile(recs ...*commitRecord) error {
	f, err := os.OpenFile(ix.path, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, rec := range recs {
		b.WriteString(formatIndexLine(rec))
	}
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// rewriteFile writes the whole index file anew.
func (ix *historyIndex) rewriteFile() error {
	var b strings.Builder
	b.WriteString(indexHeader + "\n")
	for _, rec := range ix.commits {
		b.WriteString(formatIndexLine(rec))
	}
	return writeFileSync(ix.path, []byte(b.String()))
}

func formatIndexLine(rec *commitRecord) string {
	var b strings.Builder
	parent := "-"
	if !rec.parent.IsZero() {
		parent = rec.parent.String()
	}
	fmt.Fprintf(&b, "%s\t%s\t%d\t%s\t%s", rec.hash, parent, rec.when.UnixNano(),
		strconv.Quote(rec.author), strconv.Quote(rec.message))
	for _, c := range rec.changes {
		b.WriteByte('\t')
		b.WriteByte(changeLetters[c.change])
		b.WriteString(strconv.Quote(c.path))
	}
	b.WriteByte('\n')
	return b.String()
}

// parseIndexLine parses a line that formatIndexLine wrote into rec.
func parseIndexLine(line string, rec *commitRecord) error {
	field := func() string {
		f, rest, _ := strings.Cut(line, "\t")
		line = rest
		return f
	}
	var ok bool
	if rec.hash, ok = parseHash(field()); !ok {
		return errors.New("malformed index line")
	}
	if parent := field(); parent != "-" {
		if rec.parent, ok = parseHash(parent); !ok {
			return errors.New("malformed parent")
		}
	}
	ns, err := strconv.ParseInt(field(), 10, 64)
	if err != nil {
		return err
	}
	rec.when = time.Unix(0, ns).UTC()
	if rec.author, err = strconv.Unquote(field()); err != nil {
		return err
	}
	if rec.message, err = strconv.Unquote(field()); err != nil {
		return err
	}
	if line != "" {
		rec.changes = make([]pathChange, 0, strings.Count(line, "\t")+1)
	}
	for line != "" {
		c := field()
		if len(c) < 3 {
			return errors.New("malformed change")
		}
		var ct ChangeType
		switch c[0] {
		case 'A':
			ct = Added
		case 'M':
			ct = Modified
		case 'D':
			ct = Deleted
		default:
			return errors.New("malformed change")
		}
		p, err := strconv.Unquote(c[1:])
		if err != nil {
			return errors.New("malformed change")
		}
		rec.changes = append(rec.changes, pathChange{p, ct})
	}
	return nil
}

// parseHash parses a commit id written in hex.
func parseHash(s string) (h plumbing.Hash, ok bool) {
	if len(s) != hex.EncodedLen(len(h)) {
		return h, false
	}
	_, err := hex.Decode(h[:], []byte(s))
	return h, err == nil
}
