package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools"
)

func (t *Tools) listDirectoryTool() tools.Tool {
	return tools.Tool{
		Definition: tools.Definition{
			Name:  "list_directory",
			Title: "List directory",
			Description: fmt.Sprintf("List the entries of a directory of the workspace. The path is relative to the "+
				"workspace root; \"\" or \".\" is the root. Each entry has its name, its path from the workspace "+
				"root, its type (file, directory, symlink or other) and its size in bytes (files only). With "+
				"recursive: true the whole tree is listed, depth first in name order; symlinks are listed but not "+
				"followed, and .git and .nexus directories are listed but not entered. At most %d entries are "+
				"returned; then truncated is true.", maxListEntries),
			InputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"path": {"type": "string", "description": "Directory path relative to the workspace root; \"\" or \".\" for the root."},
		"recursive": {"type": "boolean", "description": "List the whole tree below the directory (default false)."}
	},
	"required": ["path"],
	"additionalProperties": false
}`),
			OutputSchema: json.RawMessage(`{
	"type": "object",
	"properties": {
		"entries": {
			"type": "array",
			"items": {
				"type": "object",
				"properties": {
					"name": {"type": "string"},
					"path": {"type": "string", "description": "Path relative to the workspace root."},
					"type": {"enum": ["file", "directory", "symlink", "other"]},
					"size": {"type": "integer", "minimum": 0}
				},
				"required": ["name", "path", "type", "size"],
				"additionalProperties": false
			}
		},
		"truncated": {"type": "boolean"}
	},
	"required": ["entries"],
	"additionalProperties": false
}`),
			Kind:        tools.KindRead,
			Risk:        tools.RiskLow,
			Annotations: readOnly(),
		},
		Handler: t.listDirectory,
	}
}

type listArgs struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

type listEntry struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"`
	Size int64  `json:"size"`
}

type listResult struct {
	Entries   []listEntry `json:"entries"`
	Truncated bool        `json:"truncated,omitempty"`
}

func (t *Tools) listDirectory(ctx context.Context, inv *tools.Invocation, raw json.RawMessage) (json.RawMessage, error) {
	var a listArgs
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	p, err := cleanPath(a.Path, true)
	if err != nil {
		return nil, err
	}
	canon, err := t.canonical(p)
	if err != nil {
		return nil, err
	}
	party := inv.Acting()
	if err := t.allowDir(party, p, canon); err != nil {
		return nil, err
	}
	d, err := t.openDir(p, canon)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	res := listResult{Entries: []listEntry{}}
	descend := func(e walkEntry) bool {
		return a.Recursive && !strings.EqualFold(e.name, ".git") && !strings.EqualFold(e.name, privateDir)
	}
	err = t.walk(ctx, party, d, canon, p, descend, func(e walkEntry) error {
		if len(res.Entries) == t.listLimit {
			res.Truncated = true
			return errStop
		}
		le := listEntry{Name: e.name, Path: e.display, Type: fileType(e.info.Mode())}
		if e.info.Mode().IsRegular() {
			le.Size = e.info.Size()
		}
		res.Entries = append(res.Entries, le)
		return nil
	})
	if err != nil && err != errStop {
		return nil, err
	}
	return marshal(res)
}

// errStop ends a walk early without an error.
var errStop = errors.New("stop walking")

// walkEntry is an entry met by walk.
type walkEntry struct {
	name    string
	canon   string // canonical path
	display string // path as shown to the caller
	info    os.FileInfo
}

// walk visits the entries of the open directory d, at canonical path canon,
// in name order, depth first, that the party may see ([Tools.visible]):
// nothing else is visited or entered. It enters real directories (never symlinks)
// for which descend is true; a directory that cannot be opened, or that
// changed into something else while walking, is not entered. Entries are
// looked at through the workspace root only.
func (t *Tools) walk(ctx context.Context, party access.Party, d *os.File, canon, display string, descend func(walkEntry) bool, visit func(walkEntry) error) error {
	des, err := d.ReadDir(-1)
	if err != nil && len(des) == 0 {
		return fsError("list", display, err)
	}
	slices.SortFunc(des, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, de := range des {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := walkEntry{name: de.Name(), canon: displayPath(canon, de.Name()), display: displayPath(display, de.Name())}
		if e.info, err = t.root.Lstat(e.canon); err != nil {
			continue // gone since the directory was read
		}
		if !t.visible(party, e) {
			continue
		}
		if err := visit(e); err != nil {
			return err
		}
		if !e.info.IsDir() || !descend(e) {
			continue
		}
		sub, err := t.openDir(e.display, e.canon)
		if err != nil {
			continue
		}
		err = t.walk(ctx, party, sub, e.canon, e.display, descend, visit)
		sub.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
