package core

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/nexuscocreate/nexus/internal/bytesize"
	"github.com/nexuscocreate/nexus/tools"
)

// Files as the editor has them. When the context of a call carries
// [tools.ClientFiles] (an ACP editor's fs/*), read_file, write_file and
// edit_file read and write the files outside the definitions root through
// the editor, so that its unsaved buffers are read and its writes are seen
// where the person works. Definition files never go there: they go through
// the definitions store and its history.
//
// Every check of the file tools happens first (cleanPath, canonical, allow),
// and the editor is given the absolute canonical path. What is on disk
// there is checked as the file tools would open it (clientTarget): a regular
// file with one link, reached through real directories; or nothing yet. The
// editor opens the path itself, later; a read is checked again once the
// editor answered, and its text is returned only if the path still holds.

// readClient is read_file through the editor.
func (t *Tools) readClient(ctx context.Context, cf tools.ClientFiles, p, canon string, start, end int, ranged bool) (json.RawMessage, error) {
	if _, err := t.clientTarget(p, canon, false); err != nil {
		return nil, err
	}
	text, err := cf.ReadTextFile(ctx, t.abs(canon))
	if err != nil {
		return nil, clientError(ctx, "read", p, err)
	}
	if _, err := t.clientTarget(p, canon, false); err != nil {
		return nil, err
	}
	if !ranged && int64(len(text)) > t.cfg.ReadLimit {
		return nil, tools.Errorf(tools.CodeOutputLimit,
			"file %q is %s, over the read limit of %s; pass startLine and endLine to read it in parts",
			p, bytesize.String(int64(len(text))), bytesize.String(t.cfg.ReadLimit))
	}
	if strings.IndexByte(text[:min(len(text), binarySniff)], 0) >= 0 {
		return nil, invalidf("file %q looks binary (it has a NUL byte); read_file reads text files", p)
	}
	var hint int64
	if !ranged {
		hint = int64(len(text))
	}
	res, err := t.readLines(ctx, p, bufio.NewReaderSize(strings.NewReader(text), 64<<10), start, end, hint)
	if err != nil {
		return nil, err
	}
	return marshalSized(res, len(res.Content)+len(res.Content)/8+128)
}

// writeClient is write_file through the editor; it reports whether the
// file was created (it was not on disk before). Missing parent directories
// are created here, as write_file does.
func (t *Tools) writeClient(ctx context.Context, cf tools.ClientFiles, p, canon, content string) (bool, error) {
	existed, err := t.clientTarget(p, canon, true)
	if err != nil {
		return false, err
	}
	if err := cf.WriteTextFile(ctx, t.abs(canon), content); err != nil {
		return false, clientError(ctx, "write", p, err)
	}
	return !existed, nil
}

// editClient is edit_file through the editor: the text the editor has,
// replaced once, written back through it, unless the person was shown a
// change of other text (checkShown).
func (t *Tools) editClient(ctx context.Context, cf tools.ClientFiles, inv *tools.Invocation, p, canon, oldText, newText string) error {
	if _, err := t.clientTarget(p, canon, false); err != nil {
		return err
	}
	abs := t.abs(canon)
	cur, err := cf.ReadTextFile(ctx, abs)
	if err != nil {
		return clientError(ctx, "read", p, err)
	}
	if err := checkShown(inv, p, canon, true, sha256Hex([]byte(cur))); err != nil {
		return err
	}
	if len(cur) > maxEditFileSize {
		return invalidf("file %q is %s; edit_file edits files up to %s", p, bytesize.String(int64(len(cur))), bytesize.String(maxEditFileSize))
	}
	next, err := replaceOnce(p, []byte(cur), oldText, newText)
	if err != nil {
		return err
	}
	if _, err := t.clientTarget(p, canon, false); err != nil {
		return err
	}
	if err := cf.WriteTextFile(ctx, abs, string(next)); err != nil {
		return clientError(ctx, "write", p, err)
	}
	return nil
}

// clientTarget checks what is on disk at canonical path canon before the
// editor is given it, and reports whether a file is there: a regular file
// with one link, opened and verified as the file tools open one; or
// nothing, below directories verified the same way (created first, when
// create is set).
func (t *Tools) clientTarget(p, canon string, create bool) (bool, error) {
	if canon == "" {
		return false, invalidf("path %q is a directory, not a file", p)
	}
	f, _, err := t.openRegular(p, canon)
	if err == nil {
		f.Close()
		return true, nil
	}
	if _, lerr := t.root.Lstat(canon); !errors.Is(lerr, fs.ErrNotExist) {
		return false, err
	}
	// Nothing there: the editor may have an unsaved buffer of it. The
	// directories above, as far as they exist, must be real ones.
	dir := parentDir(canon)
	for !create && dir != "" {
		_, err := t.root.Lstat(dir)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return false, fsError("open", p, err)
		}
		dir = parentDir(dir)
	}
	parent, err := t.openParent(p, dir, create)
	if err != nil {
		return false, err
	}
	parent.Close()
	return false, nil
}

// parentDir is the directory of a canonical path, "" for the workspace
// root.
func parentDir(canon string) string {
	if d := path.Dir(canon); d != "." {
		return d
	}
	return ""
}

// clientError is the tool error of an editor that failed to read or write
// a file; a call that ended meanwhile ends with its context's error.
func clientError(ctx context.Context, op, p string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return tools.Errorf(tools.CodeExecutionFailed, "%s %q: the editor failed: %v", op, p, err)
}
