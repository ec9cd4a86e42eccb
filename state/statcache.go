package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// racyMargin is how much older than the moment it was seen a file's
// change time must be for its stat to vouch for its content: a write in
// the same tick of the file system's clock as the stat leaves the stat
// unchanged, and those clocks are coarse (git calls such files "racily
// clean").
const racyMargin = 2 * time.Second

const statCacheHeader = "nexus-stat-cache v1"

// statKey is what a file's stat says of its content: a write changes the
// change time (which no program can set) and a rename the inode.
type statKey struct {
	size, mtime, ctime int64
	ino                uint64
}

type statEntry struct {
	key  statKey
	seen int64 // when the stat was taken, in Unix nanoseconds
	blob plumbing.Hash
}

// statCache remembers the blob id of each file on disk under the stat it
// had when it was read, as git's index does, so that a scan of the tree
// reads only the files whose stat changed. It lives in memory and in a
// file beside the repository, written after the store's open and at its
// close; a missing or damaged file is an empty cache.
type statCache struct {
	path string

	mu      sync.Mutex
	entries map[string]statEntry
	dirty   bool
	saving  sync.Mutex // one save at a time

	hits, misses atomic.Int64 // lookups answered, and files read
}

func newStatCache(path string) *statCache {
	c := &statCache{path: path, entries: map[string]statEntry{}}
	c.load()
	return c
}

// lookup returns the blob id recorded for a file whose stat is key, when
// the stat vouches for the content.
func (c *statCache) lookup(p string, key statKey) (plumbing.Hash, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[p]
	if !ok || e.key != key || e.key.ctime >= e.seen-int64(racyMargin) {
		c.misses.Add(1)
		return plumbing.ZeroHash, false
	}
	c.hits.Add(1)
	return e.blob, true
}

// store records the blob id of a file read after a stat taken at seen.
func (c *statCache) store(p string, key statKey, seen time.Time, blob plumbing.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[p] = statEntry{key: key, seen: seen.UnixNano(), blob: blob}
	c.dirty = true
}

// keepOnly drops the entries of files a scan of the whole tree did not find.
func (c *statCache) keepOnly(onDisk map[string]diskFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.entries {
		if _, ok := onDisk[p]; !ok {
			delete(c.entries, p)
			c.dirty = true
		}
	}
}

func (c *statCache) load() {
	data, err := os.ReadFile(c.path)
	if err != nil {
		return
	}
	body, sum, ok := bytes.Cut(data, []byte("\nsha256 "))
	if !ok || string(sum) != statCacheSum(body)+"\n" {
		return
	}
	lines := strings.Split(string(body), "\n")
	if lines[0] != statCacheHeader {
		return
	}
	entries := make(map[string]statEntry, len(lines)-1)
	for _, line := range lines[1:] {
		p, e, err := parseStatLine(line)
		if err != nil {
			return
		}
		entries[p] = e
	}
	c.entries = entries
}

// save writes the cache's file when it changed since the last save. The
// file is replaced by a rename and not synced: one lost in a crash is an
// empty cache.
func (c *statCache) save() error {
	c.saving.Lock()
	defer c.saving.Unlock()
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return nil
	}
	var b strings.Builder
	b.WriteString(statCacheHeader)
	for p, e := range c.entries {
		fmt.Fprintf(&b, "\n%s\t%d\t%d\t%d\t%d\t%d\t%s", strconv.Quote(p), e.key.size, e.key.mtime, e.key.ctime, e.key.ino, e.seen, e.blob)
	}
	c.dirty = false
	c.mu.Unlock()
	body := b.String()
	tmp := c.path + ".tmp"
	err := os.WriteFile(tmp, []byte(body+"\nsha256 "+statCacheSum([]byte(body))+"\n"), 0o644)
	if err == nil {
		err = os.Rename(tmp, c.path)
	}
	if err != nil {
		c.mu.Lock()
		c.dirty = true // the next save tries again
		c.mu.Unlock()
	}
	return err
}

func statCacheSum(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

func parseStatLine(line string) (string, statEntry, error) {
	f := strings.Split(line, "\t")
	if len(f) != 7 {
		return "", statEntry{}, errors.New("malformed stat cache line")
	}
	p, err := strconv.Unquote(f[0])
	if err != nil {
		return "", statEntry{}, err
	}
	var e statEntry
	var errs [5]error
	e.key.size, errs[0] = strconv.ParseInt(f[1], 10, 64)
	e.key.mtime, errs[1] = strconv.ParseInt(f[2], 10, 64)
	e.key.ctime, errs[2] = strconv.ParseInt(f[3], 10, 64)
	e.key.ino, errs[3] = strconv.ParseUint(f[4], 10, 64)
	e.seen, errs[4] = strconv.ParseInt(f[5], 10, 64)
	if err := errors.Join(errs[:]...); err != nil {
		return "", statEntry{}, err
	}
	var ok bool
	if e.blob, ok = parseHash(f[6]); !ok {
		return "", statEntry{}, errors.New("malformed blob id")
	}
	return p, e, nil
}

// statKeyOf returns the stat key of a file's info, when the system gives
// one.
func statKeyOf(info fs.FileInfo) (statKey, bool) {
	ctime, ino, ok := changeTimeAndInode(info)
	if !ok {
		return statKey{}, false
	}
	return statKey{size: info.Size(), mtime: info.ModTime().UnixNano(), ctime: ctime, ino: ino}, true
}

// FileKey is what a file's stat says of its content (size, modification
// and change times, inode), for a cache of contents by stat: a write
// changes the change time, which no program can set, and a rename the
// inode.
type FileKey struct {
	Size, MTime, CTime int64
	Inode              uint64
}

// FileKeyOf returns the key of a file's lstat info; false where the system
// gives no change time and inode.
func FileKeyOf(info fs.FileInfo) (FileKey, bool) {
	k, ok := statKeyOf(info)
	return FileKey{Size: k.size, MTime: k.mtime, CTime: k.ctime, Inode: k.ino}, ok
}
