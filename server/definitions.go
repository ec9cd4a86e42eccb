package server

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
)

// The nexus/definitions/ methods. The editor writes as "editor"; paths are
// relative to the definitions root, or to <root>/<appId>/ when appId is
// given (a leading "/" is the root either way).

// defPath resolves a request's path against its appId.
func (s *Server) defPath(appID, p string, dir bool) (string, error) {
	if appID != "" && !slices.Contains(s.opts.Apps, appID) {
		return "", notFound("unknown app %q: apps are declared in .nexus/config.yaml", appID)
	}
	if !dir && strings.TrimPrefix(p, "/") == "" {
		return "", missing("path", "the definition file, relative to the definitions root")
	}
	full, err := state.Address(appID, p, dir)
	if err != nil {
		return "", invalid("path %q: %v", p, err)
	}
	return full, nil
}

func (s *Server) editorWrite(message, expected string) state.WriteOptions {
	return state.WriteOptions{Message: message, ExpectedRevision: expected}
}

// editor is the party of every request of the editor: the person.
var editor = access.Person(state.AuthorEditor)

// defs is the definitions store as the editor sees it.
func (s *Server) defs() *state.View { return s.opts.Definitions.For(editor) }

type defGetParams struct {
	AppID    string `json:"appId"`
	Path     string `json:"path"`
	Revision string `json:"revision"`
}

type defGetResult struct {
	Content  string `json:"content"`
	Revision string `json:"revision"`
}

func (s *Server) definitionsGet(_ context.Context, p *defGetParams) (*defGetResult, error) {
	full, err := s.defPath(p.AppID, p.Path, false)
	if err != nil {
		return nil, err
	}
	f, err := s.defs().Get(full, p.Revision)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(f.Content) {
		return nil, precondition("definition %q is not UTF-8 text", full)
	}
	return &defGetResult{Content: string(f.Content), Revision: f.Revision}, nil
}

type defSetParams struct {
	AppID            string  `json:"appId"`
	Path             string  `json:"path"`
	Content          *string `json:"content"`
	CommitMessage    string  `json:"commitMessage"`
	ExpectedRevision string  `json:"expectedRevision"`
}

type revisionResult struct {
	Revision string `json:"revision"`
}

func (s *Server) definitionsSet(_ context.Context, p *defSetParams) (*revisionResult, error) {
	full, err := s.defPath(p.AppID, p.Path, false)
	if err != nil {
		return nil, err
	}
	if p.Content == nil {
		return nil, missing("content", `the file's new text ("" for an empty file)`)
	}
	rev, err := s.defs().Set(full, []byte(*p.Content), s.editorWrite(p.CommitMessage, p.ExpectedRevision))
	if err != nil {
		return nil, err
	}
	return &revisionResult{Revision: rev}, nil
}

type defApplyDiffParams struct {
	AppID            string `json:"appId"`
	Path             string `json:"path"`
	Diff             string `json:"diff"`
	CommitMessage    string `json:"commitMessage"`
	ExpectedRevision string `json:"expectedRevision"`
}

type revisionContentResult struct {
	Revision string `json:"revision"`
	Content  string `json:"content"`
}

func (s *Server) definitionsApplyDiff(_ context.Context, p *defApplyDiffParams) (*revisionContentResult, error) {
	full, err := s.defPath(p.AppID, p.Path, false)
	if err != nil {
		return nil, err
	}
	if p.Diff == "" {
		return nil, missing("diff", "a unified diff of the file")
	}
	rev, content, err := s.defs().ApplyDiff(full, p.Diff, s.editorWrite(p.CommitMessage, p.ExpectedRevision))
	if err != nil {
		return nil, err
	}
	return &revisionContentResult{Revision: rev, Content: string(content)}, nil
}

type defDeleteParams struct {
	AppID            string `json:"appId"`
	Path             string `json:"path"`
	CommitMessage    string `json:"commitMessage"`
	ExpectedRevision string `json:"expectedRevision"`
}

func (s *Server) definitionsDelete(_ context.Context, p *defDeleteParams) (*revisionResult, error) {
	full, err := s.defPath(p.AppID, p.Path, false)
	if err != nil {
		return nil, err
	}
	rev, err := s.defs().Delete(full, s.editorWrite(p.CommitMessage, p.ExpectedRevision))
	if err != nil {
		return nil, err
	}
	return &revisionResult{Revision: rev}, nil
}

type defRestoreParams struct {
	AppID            string `json:"appId"`
	Path             string `json:"path"`
	Revision         string `json:"revision"`
	CommitMessage    string `json:"commitMessage"`
	ExpectedRevision string `json:"expectedRevision"`
}

func (s *Server) definitionsRestore(_ context.Context, p *defRestoreParams) (*revisionContentResult, error) {
	full, err := s.defPath(p.AppID, p.Path, false)
	if err != nil {
		return nil, err
	}
	if p.Revision == "" {
		return nil, missing("revision", "the commit whose content to restore")
	}
	rev, content, err := s.defs().Restore(full, p.Revision, s.editorWrite(p.CommitMessage, p.ExpectedRevision))
	if err != nil {
		return nil, err
	}
	return &revisionContentResult{Revision: rev, Content: string(content)}, nil
}

type defListParams struct {
	AppID     string `json:"appId"`
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

type defEntry struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"`
	Size int64  `json:"size"`
}

type defListResult struct {
	Entries []defEntry `json:"entries"`
}

func (s *Server) definitionsList(_ context.Context, p *defListParams) (*defListResult, error) {
	dir, err := s.defPath(p.AppID, p.Path, true)
	if err != nil {
		return nil, err
	}
	entries, err := s.defs().List(dir, p.Recursive)
	if err != nil {
		return nil, err
	}
	res := &defListResult{Entries: make([]defEntry, 0, len(entries))}
	for _, e := range entries {
		t := "FILE"
		if e.Dir {
			t = "DIRECTORY"
		}
		res.Entries = append(res.Entries, defEntry{Name: e.Name, Path: s.display(p.AppID, p.Path, e.Path), Type: t, Size: e.Size})
	}
	return res, nil
}

// display writes a root-relative path the way the request addressed it.
func (s *Server) display(appID, requested, full string) string {
	return state.Display(appID, full, strings.HasPrefix(requested, "/"))
}

type defHistoryParams struct {
	AppID     string `json:"appId"`
	Path      string `json:"path"`
	Limit     int    `json:"limit"`
	PageToken string `json:"pageToken"`
}

type historyEntry struct {
	Revision  string    `json:"revision"`
	Author    string    `json:"author"`
	Message   string    `json:"message"`
	Timestamp time.Time `json:"timestamp"`
	Change    string    `json:"change"`
}

type defHistoryResult struct {
	Entries       []historyEntry `json:"entries"`
	NextPageToken string         `json:"nextPageToken,omitempty"`
}

func (s *Server) definitionsHistory(_ context.Context, p *defHistoryParams) (*defHistoryResult, error) {
	full, err := s.defPath(p.AppID, p.Path, false)
	if err != nil {
		return nil, err
	}
	if p.Limit < 0 {
		return nil, invalid("limit %d is negative", p.Limit)
	}
	entries, next, err := s.defs().History(full, p.Limit, p.PageToken)
	if err != nil {
		return nil, err
	}
	res := &defHistoryResult{NextPageToken: next, Entries: make([]historyEntry, len(entries))}
	for i, e := range entries {
		res.Entries[i] = historyEntry{Revision: e.Revision, Author: e.Author, Message: strings.TrimSuffix(e.Message, "\n"),
			Timestamp: e.Time, Change: changeName(e.Change)}
	}
	return res, nil
}

type defDiffParams struct {
	AppID        string `json:"appId"`
	Path         string `json:"path"`
	FromRevision string `json:"fromRevision"`
	ToRevision   string `json:"toRevision"`
}

type defDiffResult struct {
	Diff string `json:"diff"`
}

func (s *Server) definitionsDiff(_ context.Context, p *defDiffParams) (*defDiffResult, error) {
	full, err := s.defPath(p.AppID, p.Path, false)
	if err != nil {
		return nil, err
	}
	if p.FromRevision == "" {
		return nil, missing("fromRevision", "the revision to diff from")
	}
	d, err := s.defs().Diff(full, strings.TrimPrefix(p.Path, "/"), p.FromRevision, p.ToRevision)
	if err != nil {
		return nil, err
	}
	if !utf8.ValidString(d) {
		return nil, precondition("the diff of %q is not UTF-8 text", full)
	}
	return &defDiffResult{Diff: d}, nil
}
