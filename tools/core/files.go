package core

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"strings"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/internal/bytesize"
	"github.com/nexuscocreate/nexus/internal/durable"
	"github.com/nexuscocreate/nexus/state"
	"github.com/nexuscocreate/nexus/tools"
)

func (t *Tools) readFileTool() tools.Tool {
	return tools.Tool{
		Definition: tools.Definition{
			Name:  "read_file",
			Title: "Read file",
			Description: fmt.Sprintf("Read a text file of the workspace. The path is relative to the workspace root. "+
				"Returns the content and the file's total number of lines. To read part of a file, pass startLine "+
				"and/or endLine (1-based, inclusive). A file over %s must be read in line ranges; a range whose "+
				"content is over %[1]s returns the lines that fit with truncated: true, and endLine tells where to "+
				"continue. Binary files and the daemon's .nexus/ directory cannot be read.", bytesize.String(t.cfg.ReadLimit)),
			InputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"path": {"type": "string", "description": "File path relative to the workspace root."},
		"startLine": {"type": "integer", "minimum": 1, "description": "First line to return, 1-based (default 1)."},
		"endLine": {"type": "integer", "minimum": 1, "description": "Last line to return, inclusive (default: the last line)."}
	},
	"required": ["path"],
	"additionalProperties": false
}`),
			OutputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"content": {"type": "string", "description": "The lines read, with their line endings."},
		"totalLines": {"type": "integer", "minimum": 0, "description": "Number of lines in the whole file."},
		"startLine": {"type": "integer", "minimum": 0, "description": "First line returned (0 for an empty file)."},
		"endLine": {"type": "integer", "minimum": 0, "description": "Last line returned."},
		"truncated": {"type": "boolean", "description": "True when the range was cut at the read limit."}
	},
	"required": ["content", "totalLines", "startLine", "endLine"],
	"additionalProperties": false
}`),
			Kind:        tools.KindRead,
			Risk:        tools.RiskLow,
			Annotations: readOnly(),
		},
		Handler: t.readFile,
	}
}

type readArgs struct {
	Path      string `json:"path"`
	StartLine *int   `json:"startLine"`
	EndLine   *int   `json:"endLine"`
}

type readResult struct {
	Content    string `json:"content"`
	TotalLines int    `json:"totalLines"`
	StartLine  int    `json:"startLine"`
	EndLine    int    `json:"endLine"`
	Truncated  bool   `json:"truncated,omitempty"`
}

func (t *Tools) readFile(ctx context.Context, inv *tools.Invocation, raw json.RawMessage) (json.RawMessage, error) {
	var a readArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	start, end := 1, math.MaxInt
	if a.StartLine != nil {
		if *a.StartLine < 1 {
			return nil, invalidf("startLine is %d; lines are numbered from 1", *a.StartLine)
		}
		start = *a.StartLine
	}
	if a.EndLine != nil {
		if *a.EndLine < start {
			return nil, invalidf("endLine %d is before startLine %d", *a.EndLine, start)
		}
		end = *a.EndLine
	}
	ranged := a.StartLine != nil || a.EndLine != nil
	p, err := cleanPath(a.Path, false)
	if err != nil {
		return nil, err
	}
	canon, err := t.canonical(p)
	if err != nil {
		return nil, err
	}
	if err := t.allow(inv.Acting(), p, canon, false); err != nil {
		return nil, err
	}
	if cf := tools.ClientFilesFrom(ctx); cf != nil && !t.inDefinitions(canon) {
		return t.readClient(ctx, cf, p, canon, start, end, ranged)
	}
	f, fi, err := t.openRegular(p, canon)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !ranged && fi.Size() > t.cfg.ReadLimit {
		return nil, tools.Errorf(tools.CodeOutputLimit,
			"file %q is %s, over the read limit of %s; pass startLine and endLine to read it in parts",
			p, bytesize.String(fi.Size()), bytesize.String(t.cfg.ReadLimit))
	}
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(binarySniff); bytes.IndexByte(head, 0) >= 0 {
		return nil, invalidf("file %q looks binary (it has a NUL byte); read_file reads text files", p)
	}
	// The whole file is read when no range is given: room for it at once.
	var hint int64
	if !ranged {
		hint = fi.Size()
	}
	res, err := t.readLines(ctx, p, br, start, end, hint)
	if err != nil {
		return nil, err
	}
	return marshalSized(res, len(res.Content)+len(res.Content)/8+128)
}

// readLines reads the lines start..end of a file and counts all its lines.
// The content is cut, at a line boundary, at the read limit. sizeHint is
// how many bytes are expected (0 when unknown). The content is built in a
// strings.Builder, whose string is not copied again.
func (t *Tools) readLines(ctx context.Context, p string, br *bufio.Reader, start, end int, sizeHint int64) (readResult, error) {
	var (
		out       strings.Builder
		kept      = -1 // where the content was cut, once it was
		total     int
		lineStart int    // out.Len() where the current line began
		atStart   = true // the next byte begins a line
		cut       bool
		last      int // last line kept whole
	)
	if sizeHint > 0 {
		out.Grow(int(min(sizeHint, t.cfg.ReadLimit)))
	}
	for i := 0; ; i++ {
		if i&1023 == 0 && ctx.Err() != nil {
			return readResult{}, ctx.Err()
		}
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if atStart {
				total++
				lineStart = out.Len()
			}
			atStart = chunk[len(chunk)-1] == '\n'
			if total >= start && total <= end && !cut {
				if int64(out.Len()+len(chunk)) > t.cfg.ReadLimit {
					if total == start {
						return readResult{}, tools.Errorf(tools.CodeOutputLimit,
							"line %d of %q alone is over the read limit of %s", total, p, bytesize.String(t.cfg.ReadLimit))
					}
					kept, cut = lineStart, true
				} else {
					out.Write(chunk)
					if atStart {
						last = total
					}
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			return readResult{}, fsError("read", p, err)
		}
	}
	if !atStart && total >= start && total <= end && !cut {
		last = total // the last line has no newline
	}
	if total == 0 {
		if start > 1 {
			return readResult{}, invalidf("startLine %d is past the end of %q, which is empty", start, p)
		}
		return readResult{}, nil
	}
	if start > total {
		return readResult{}, invalidf("startLine %d is past the end of %q, which has %d lines", start, p, total)
	}
	content := out.String()
	if cut {
		content = content[:kept]
	}
	return readResult{Content: content, TotalLines: total, StartLine: start, EndLine: last, Truncated: cut}, nil
}

func (t *Tools) writeFileTool() tools.Tool {
	return tools.Tool{
		Definition: tools.Definition{
			Name:  "write_file",
			Title: "Write file",
			Description: "Create or overwrite a file of the workspace with the given content. The path is relative " +
				"to the workspace root; missing parent directories are created. The write is atomic: readers see " +
				"the old or the new content, never a mix. The file is written without an executable bit, even when " +
				"it had one, unless executable is true, which asks the person first. Files under the definitions " +
				"root are committed to the definitions history, and the result carries the new revision. The " +
				"daemon's .nexus/ directory cannot be written.",
			InputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"path": {"type": "string", "description": "File path relative to the workspace root."},
		"content": {"type": "string", "description": "The whole new content of the file."},
		"executable": {"type": "boolean", "description": "Make the file executable (as chmod +x). The person is asked first, whatever the policy allows. Default false: the file is not executable."}
	},
	"required": ["path", "content"],
	"additionalProperties": false
}`),
			OutputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"path": {"type": "string"},
		"bytesWritten": {"type": "integer", "minimum": 0},
		"created": {"type": "boolean", "description": "True when the file did not exist before."},
		"revision": {"type": "string", "description": "The definitions history revision, for a definition file."}
	},
	"required": ["path", "bytesWritten", "created"],
	"additionalProperties": false
}`),
			Kind: tools.KindEdit,
			Risk: tools.RiskMedium,
			// It replaces what the file held; the same content again
			// changes nothing more.
			Annotations: &tools.Annotations{Destructive: true, Idempotent: true},
		},
		Handler: t.writeFile,
		Touches: t.touchesPath,
	}
}

type writeArgs struct {
	Path       string  `json:"path"`
	Content    *string `json:"content"`
	Executable bool    `json:"executable"`
}

type writeResult struct {
	Path         string `json:"path"`
	BytesWritten int    `json:"bytesWritten"`
	Created      bool   `json:"created"`
	Revision     string `json:"revision,omitempty"`
}

func (t *Tools) writeFile(ctx context.Context, inv *tools.Invocation, raw json.RawMessage) (json.RawMessage, error) {
	a, err := decodeWrite(raw)
	if err != nil {
		return nil, err
	}
	party := inv.Acting()
	p, canon, err := t.target(party, a.Path)
	if err != nil {
		return nil, err
	}
	if _, ok := inv.ShownChange(canon); ok {
		now, err := t.fileNow(ctx, party, p, canon, false)
		if err != nil {
			return nil, err
		}
		if err := checkShown(inv, p, canon, now.exists, now.sum); err != nil {
			return nil, err
		}
	}
	content := []byte(*a.Content)
	res := writeResult{Path: p, BytesWritten: len(content)}
	if t.inDefinitions(canon) {
		if a.Executable {
			return nil, invalidf("%q is under the definitions root, whose files are kept in its history without an executable bit: executable cannot be set there", p)
		}
		defs, rel, err := t.definition(party, p, canon)
		if err != nil {
			return nil, err
		}
		_, err = defs.Get(rel, "")
		res.Created = errors.Is(err, state.ErrNotFound)
		res.Revision, err = defs.Set(rel, content, state.WriteOptions{Message: "write_file " + p})
		if err != nil {
			return nil, stateError("write", p, err)
		}
		return marshal(res)
	}
	if cf := tools.ClientFilesFrom(ctx); cf != nil {
		if res.Created, err = t.writeClient(ctx, cf, p, canon, *a.Content); err != nil {
			return nil, err
		}
		if err := t.setExecutable(p, canon, a.Executable); err != nil {
			return nil, err
		}
		return marshal(res)
	}
	if res.Created, err = t.writeAtomic(p, canon, content, writeOptions{executable: a.Executable}); err != nil {
		return nil, err
	}
	return marshal(res)
}

func (t *Tools) editFileTool() tools.Tool {
	return tools.Tool{
		Definition: tools.Definition{
			Name:  "edit_file",
			Title: "Edit file",
			Description: "Replace one exact piece of text in an existing file of the workspace. oldText must occur " +
				"exactly once in the file (include enough surrounding lines to make it unique) and is replaced by " +
				"newText; an empty newText deletes it. Whitespace and line endings must match exactly. The write " +
				"is atomic. Files under the definitions root are committed to the definitions history, and the " +
				"result carries the new revision.",
			InputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"path": {"type": "string", "description": "File path relative to the workspace root."},
		"oldText": {"type": "string", "minLength": 1, "description": "The exact text to replace; it must occur exactly once."},
		"newText": {"type": "string", "description": "The text to put in its place."}
	},
	"required": ["path", "oldText", "newText"],
	"additionalProperties": false
}`),
			OutputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"path": {"type": "string"},
		"replacements": {"type": "integer", "const": 1},
		"revision": {"type": "string", "description": "The definitions history revision, for a definition file."}
	},
	"required": ["path", "replacements"],
	"additionalProperties": false
}`),
			Kind: tools.KindEdit,
			Risk: tools.RiskMedium,
			// It replaces text; again, it replaces the text the first
			// call made when that holds the old text too.
			Annotations: &tools.Annotations{Destructive: true},
		},
		Handler: t.editFile,
		Touches: t.touchesPath,
	}
}

type editArgs struct {
	Path    string  `json:"path"`
	OldText string  `json:"oldText"`
	NewText *string `json:"newText"`
}

type editResult struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
	Revision     string `json:"revision,omitempty"`
}

func (t *Tools) editFile(ctx context.Context, inv *tools.Invocation, raw json.RawMessage) (json.RawMessage, error) {
	a, err := decodeEdit(raw)
	if err != nil {
		return nil, err
	}
	party := inv.Acting()
	p, canon, err := t.target(party, a.Path)
	if err != nil {
		return nil, err
	}
	res := editResult{Path: p, Replacements: 1}
	if t.inDefinitions(canon) {
		defs, rel, err := t.definition(party, p, canon)
		if err != nil {
			return nil, err
		}
		cur, err := defs.Get(rel, "")
		if err != nil {
			return nil, stateError("read", p, err)
		}
		if err := checkShown(inv, p, canon, true, sha256Hex(cur.Content)); err != nil {
			return nil, err
		}
		next, err := replaceOnce(p, cur.Content, a.OldText, *a.NewText)
		if err != nil {
			return nil, err
		}
		res.Revision, err = defs.Set(rel, next, state.WriteOptions{Message: "edit_file " + p,
			ExpectedRevision: cur.Revision})
		if err != nil {
			return nil, stateError("write", p, err)
		}
		return marshal(res)
	}
	if cf := tools.ClientFilesFrom(ctx); cf != nil {
		if err := t.editClient(ctx, cf, inv, p, canon, a.OldText, *a.NewText); err != nil {
			return nil, err
		}
		if err := t.setExecutable(p, canon, false); err != nil {
			return nil, err
		}
		return marshal(res)
	}
	f, fi, err := t.openRegular(p, canon)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxEditFileSize {
		f.Close()
		return nil, invalidf("file %q is %s; edit_file edits files up to %s", p, bytesize.String(fi.Size()), bytesize.String(maxEditFileSize))
	}
	cur, err := io.ReadAll(io.LimitReader(f, maxEditFileSize+1))
	f.Close()
	if err != nil {
		return nil, fsError("read", p, err)
	}
	if err := checkShown(inv, p, canon, true, sha256Hex(cur)); err != nil {
		return nil, err
	}
	next, err := replaceOnce(p, cur, a.OldText, *a.NewText)
	if err != nil {
		return nil, err
	}
	if _, err := t.writeAtomic(p, canon, next, writeOptions{mustExist: true}); err != nil {
		return nil, err
	}
	return marshal(res)
}

// replaceOnce replaces the one occurrence of old in content; overlapping
// occurrences count as several.
func replaceOnce(p string, content []byte, old, new string) ([]byte, error) {
	first, n := -1, 0
	for i := 0; i <= len(content); {
		j := bytes.Index(content[i:], []byte(old))
		if j < 0 {
			break
		}
		if first < 0 {
			first = i + j
		}
		n++
		i += j + 1
	}
	switch {
	case n == 0:
		return nil, invalidf("oldText not found in %q; read the file and copy the text exactly, whitespace included", p)
	case n > 1:
		return nil, invalidf("oldText occurs %d times; include more context so that it occurs once in %q", n, p)
	}
	out := make([]byte, 0, len(content)-len(old)+len(new))
	out = append(out, content[:first]...)
	out = append(out, new...)
	return append(out, content[first+len(old):]...), nil
}

// definition returns the store as the party sees it, and the path
// relative to the definitions root, for a write under the definitions root.
// The party is the author of the commit.
func (t *Tools) definition(party access.Party, p, canon string) (*state.View, string, error) {
	if canon == t.defRel {
		return nil, "", invalidf("path %q is the definitions root, a directory", p)
	}
	if t.cfg.Definitions == nil {
		return nil, "", tools.Errorf(tools.CodeExecutionFailed, "path %q is under the definitions root, but no definitions store is open", p)
	}
	return t.cfg.Definitions.For(party), t.defPath(canon), nil
}

// stateError maps an error of the definitions store to a tool error.
func stateError(op, p string, err error) error {
	switch {
	case errors.Is(err, state.ErrNotFound):
		return invalidf("no such file: %q", p)
	case errors.Is(err, state.ErrInvalid), errors.Is(err, state.ErrTooLarge):
		return invalidf("%s %q: %v", op, p, err)
	case errors.Is(err, state.ErrConflict):
		return tools.Errorf(tools.CodeExecutionFailed, "%s %q: the file changed during the call; read it again and retry", op, p)
	case errors.Is(err, access.ErrDenied):
		return tools.Errorf(tools.CodePermissionDenied, "%s %q: %v", op, p, err)
	}
	return tools.Errorf(tools.CodeExecutionFailed, "%s %q: %v", op, p, err)
}

// writeOptions are the options of [Tools.writeAtomic].
type writeOptions struct {
	// mustExist: the file must exist; else it and its missing parent
	// directories are created.
	mustExist bool
	// executable: the file gets an executable bit (where it has a read
	// bit, as chmod +x); else it has none, even when it had.
	executable bool
}

// writeAtomic replaces the file at canonical path canon with content: a
// temporary file in the same directory, synced, renamed over it, and the
// directory synced. A new file is 0644 (0755 when executable) less the
// umask; an existing one keeps its permissions but the executable bits,
// which are dropped or set (see [execMode]). It reports whether the file
// was created.
func (t *Tools) writeAtomic(p, canon string, content []byte, o writeOptions) (bool, error) {
	if canon == "" {
		return false, invalidf("path %q is a directory, not a file", p)
	}
	dir, base := path.Split(canon)
	dir = strings.TrimSuffix(dir, "/")
	parent, err := t.openParent(p, dir, !o.mustExist)
	if err != nil {
		return false, err
	}
	defer parent.Close()

	created := false
	perm := execMode(0o644, o.executable)
	fi, err := parent.Lstat(base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if o.mustExist {
			return false, invalidf("no such file: %q", p)
		}
		created = true
	case err != nil:
		return false, fsError("write", p, err)
	default:
		if err := regular(p, fi); err != nil {
			return false, err
		}
		if err := singleLink(p, nil, fi); err != nil {
			return false, err
		}
		perm = execMode(fi.Mode().Perm(), o.executable)
	}

	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := "." + base + ".nexus-tmp-" + hex.EncodeToString(rnd[:])
	if len(tmp) > 255 {
		tmp = ".nexus-tmp-" + hex.EncodeToString(rnd[:])
	}
	f, err := parent.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return false, fsError("write", p, err)
	}
	err = func() error {
		if !created {
			if err := f.Chmod(perm); err != nil {
				return err
			}
		}
		if _, err := f.Write(content); err != nil {
			return err
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = parent.Rename(tmp, base)
	}
	if err != nil {
		parent.Remove(tmp)
		return false, fsError("write", p, err)
	}
	if err := durable.SyncRootDir(parent, "."); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fsError("sync directory of", p, err)
	}
	return created, nil
}

// execMode is perm without its executable bits, or, when executable,
// with an executable bit wherever it has a read bit (0644 becomes 0755,
// 0600 becomes 0700), as chmod +x does under a usual umask.
func execMode(perm fs.FileMode, executable bool) fs.FileMode {
	perm &^= 0o111
	if executable {
		perm |= (perm & 0o444) >> 2
	}
	return perm
}

// setExecutable gives the file at canonical path canon the executable bits
// execMode says, once the editor wrote it: the editor keeps a file's mode.
// A file the editor has not put on disk is left alone, unless it was to be
// executable.
func (t *Tools) setExecutable(p, canon string, executable bool) error {
	f, fi, err := t.openRegular(p, canon)
	if err != nil {
		_, lerr := t.root.Lstat(canon)
		switch {
		case errors.Is(lerr, fs.ErrNotExist) && !executable:
			return nil
		case errors.Is(lerr, fs.ErrNotExist):
			return tools.Errorf(tools.CodeExecutionFailed, "the editor wrote %q but has not saved it to disk, so it could not be made executable: save it and write it again", p)
		}
		return err
	}
	defer f.Close()
	if mode := execMode(fi.Mode().Perm(), executable); mode != fi.Mode().Perm() {
		if err := f.Chmod(mode); err != nil {
			return fsError("chmod", p, err)
		}
	}
	return nil
}

// decode reads the arguments of a call. Unknown fields never get here:
// every core tool's input schema sets additionalProperties to false, and the
// manager validates the arguments before a handler runs
// (TestCoreToolsHaveQuickSchemas checks the schemas).
func decode(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalidf("arguments: %v", err)
	}
	return nil
}

// marshal encodes a result, leaving <, > and & as they are: file content
// stays readable and grows less.
func marshal(v any) (json.RawMessage, error) { return marshalSized(v, 0) }

// marshalSized is marshal with room for about size bytes made at once.
func marshalSized(v any, size int) (json.RawMessage, error) {
	var buf bytes.Buffer
	buf.Grow(size)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, tools.Errorf(tools.CodeExecutionFailed, "encoding the result: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
