package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"strings"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/internal/bytesize"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
)

// The review of a write. Before the person answers a question about
// write_file or edit_file, the policy asks the tool's Preview for the
// change it would make: computed here from the arguments and the file as
// the handler would find it (the definitions store, the editor's buffer,
// the disk), never taken from the caller. The person is shown it; once
// they allow the call, the handler is given it (tools.Invocation.Shown)
// and writes only if the file still holds the content the change was
// computed from: what the person was shown is what runs.

// withPreview returns the tool t with its Preview.
func withPreview(t tools.Tool, p tools.Previewer) tools.Tool {
	t.Preview = p
	return t
}

// previewWrite is write_file's Preview.
func (t *Tools) previewWrite(ctx context.Context, inv *tools.Invocation, raw json.RawMessage) ([]tools.ProposedChange, error) {
	a, err := decodeWrite(raw)
	if err != nil {
		return nil, err
	}
	_, canon, now, err := t.targetNow(ctx, inv.Acting(), a.Path, false)
	if err != nil {
		return nil, err
	}
	return []tools.ProposedChange{proposedChange(canon, now, []byte(*a.Content))}, nil
}

// previewEdit is edit_file's Preview.
func (t *Tools) previewEdit(ctx context.Context, inv *tools.Invocation, raw json.RawMessage) ([]tools.ProposedChange, error) {
	a, err := decodeEdit(raw)
	if err != nil {
		return nil, err
	}
	p, canon, now, err := t.targetNow(ctx, inv.Acting(), a.Path, true)
	if err != nil {
		return nil, err
	}
	if !now.whole {
		return nil, invalidf("file %q is over %s; edit_file edits files up to %[2]s", p, bytesize.String(maxEditFileSize))
	}
	next, err := replaceOnce(p, now.content, a.OldText, *a.NewText)
	if err != nil {
		return nil, err
	}
	return []tools.ProposedChange{proposedChange(canon, now, next)}, nil
}

// decodeWrite reads and checks write_file's arguments.
func decodeWrite(raw json.RawMessage) (writeArgs, error) {
	var a writeArgs
	if err := decode(raw, &a); err != nil {
		return a, err
	}
	if a.Content == nil {
		return a, invalidf("content is missing")
	}
	return a, nil
}

// decodeEdit reads and checks edit_file's arguments.
func decodeEdit(raw json.RawMessage) (editArgs, error) {
	var a editArgs
	if err := decode(raw, &a); err != nil {
		return a, err
	}
	if a.OldText == "" {
		return a, invalidf("oldText is empty; give the exact text to replace")
	}
	if a.NewText == nil {
		return a, invalidf("newText is missing")
	}
	return a, nil
}

// targetNow is target, and what the file holds now (fileNow).
func (t *Tools) targetNow(ctx context.Context, party access.Party, path string, mustExist bool) (p, canon string, now current, err error) {
	if p, canon, err = t.target(party, path); err != nil {
		return "", "", current{}, err
	}
	now, err = t.fileNow(ctx, party, p, canon, mustExist)
	return p, canon, now, err
}

// target checks a path given to a writing tool as its handler does, and
// returns it clean and canonical.
func (t *Tools) target(party access.Party, path string) (p, canon string, err error) {
	if p, err = cleanPath(path, false); err != nil {
		return "", "", err
	}
	if canon, err = t.canonical(p); err != nil {
		return "", "", err
	}
	if err := t.allow(party, p, canon, true); err != nil {
		return "", "", err
	}
	return p, canon, nil
}

// current is what a file holds as a write would find it.
type current struct {
	exists bool
	// content is the whole content when whole is set, else its first
	// maxEditFileSize+1 bytes.
	content []byte
	whole   bool
	sum     string // SHA-256 of the whole content, in hex; "" when absent
}

// fileNow reads the file at canonical path canon as write_file and
// edit_file would find it: in the definitions store, in the editor (the
// call's tools.ClientFiles), or on disk. An absent file is no error unless
// mustExist is set, when the error is the handler's.
func (t *Tools) fileNow(ctx context.Context, party access.Party, p, canon string, mustExist bool) (current, error) {
	if t.inDefinitions(canon) {
		defs, rel, err := t.definition(party, p, canon)
		if err != nil {
			return current{}, err
		}
		f, err := defs.Get(rel, "")
		switch {
		case errors.Is(err, state.ErrNotFound) && !mustExist:
			return current{}, nil
		case err != nil:
			return current{}, stateError("read", p, err)
		}
		return currentOf(f.Content), nil
	}
	if cf := tools.ClientFilesFrom(ctx); cf != nil {
		existed, err := t.clientTarget(p, canon, false)
		if err != nil {
			return current{}, err
		}
		text, err := cf.ReadTextFile(ctx, t.abs(canon))
		switch {
		case err != nil && !existed && !mustExist:
			return current{}, nil // nothing on disk, and no buffer
		case err != nil:
			return current{}, clientError(ctx, "read", p, err)
		}
		return currentOf([]byte(text)), nil
	}
	f, _, err := t.openRegular(p, canon)
	if err != nil {
		if _, lerr := t.root.Lstat(canon); errors.Is(lerr, fs.ErrNotExist) && !mustExist && canon != "" {
			return current{}, nil
		}
		return current{}, err
	}
	defer f.Close()
	h := sha256.New()
	var head bytes.Buffer
	if _, err := io.Copy(io.MultiWriter(h, &limitedBuffer{&head, maxEditFileSize + 1}), f); err != nil {
		return current{}, fsError("read", p, err)
	}
	return current{exists: true, content: head.Bytes(), whole: head.Len() <= maxEditFileSize,
		sum: hex.EncodeToString(h.Sum(nil))}, nil
}

func currentOf(content []byte) current {
	if content == nil {
		content = []byte{}
	}
	return current{exists: true, content: content, whole: true, sum: sha256Hex(content)}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// limitedBuffer keeps the first n bytes written to it, and takes the rest
// without keeping it.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// proposedChange is the change of the file at path from what it holds now
// to after, as the person is shown it (see tools.ProposedChange).
func proposedChange(path string, now current, after []byte) tools.ProposedChange {
	c := tools.ProposedChange{Path: path, Action: tools.ChangeModified, BeforeSHA256: now.sum}
	var before []byte
	if now.exists {
		before = now.content
	} else {
		c.Action = tools.ChangeAdded
	}
	big := now.exists && (!now.whole || len(before) > tools.MaxPreviewContent) || len(after) > tools.MaxPreviewContent
	c.Binary = now.exists && state.IsBinary(before) || state.IsBinary(after)
	switch {
	case big:
		c.Truncated = true // no diff of a file this size
	default:
		c.Diff = state.FileDiff(path, before, after)
		if len(c.Diff) > tools.MaxPreviewDiff {
			c.Diff, c.Truncated = cutLines(c.Diff, tools.MaxPreviewDiff), true
		}
	}
	if !c.Binary {
		if now.exists && now.whole && len(before) <= tools.MaxPreviewContent {
			s := string(before)
			c.Before = &s
		}
		if len(after) <= tools.MaxPreviewContent {
			s := string(after)
			c.After = &s
		}
	}
	return c
}

// cutLines is s cut to at most n bytes, at the end of a line.
func cutLines(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i >= 0 {
		return s[:i+1]
	}
	return ""
}

// checkShown refuses a write of the file at canonical path canon, whose
// content is now (its SHA-256, "" when absent), when the person was shown
// a change computed from other content: nothing is written then.
func checkShown(inv *tools.Invocation, p, canon string, exists bool, sum string) error {
	shown, ok := inv.ShownChange(canon)
	if !ok {
		return nil
	}
	if shown.Action == tools.ChangeAdded && !exists || shown.Action != tools.ChangeAdded && exists && sum == shown.BeforeSHA256 {
		return nil
	}
	return tools.Errorf(tools.CodeExecutionFailed, "%s changed after the person was shown the change; nothing was written: read it again and retry", p)
}
