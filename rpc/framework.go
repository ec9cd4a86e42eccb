package rpc

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/nexuscocreate/nexus/events"
	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
	"github.com/nexuscocreate/nexus/state"
)

// frameworkService is the CoreFramework API: a thin adapter from protobuf
// to the state layer, and to the ToolManager for tool execution and
// permission checks.
type frameworkService struct {
	nexusv1.UnimplementedCoreFrameworkServer

	defs    *state.Definitions
	runtime state.Runtime
	bus     *events.Bus
	logger  *slog.Logger
	apps    apps
	tools   *toolService
}

var _ nexusv1.CoreFrameworkServer = (*frameworkService)(nil)

func (s *frameworkService) GetDefinitionFileContent(ctx context.Context, req *nexusv1.GetDefinitionFileContentRequest) (*nexusv1.GetDefinitionFileContentResponse, error) {
	v, p, err := s.definitionPath(ctx, req.GetAppId(), req.GetPath())
	if err != nil {
		return nil, err
	}
	f, err := v.Get(p, req.GetRevision())
	if err != nil {
		return nil, toStatus(err)
	}
	if err := validText(p, f.Content); err != nil {
		return nil, err
	}
	return &nexusv1.GetDefinitionFileContentResponse{Content: string(f.Content), Revision: f.Revision}, nil
}

// definitionPath resolves who acts and the root-relative path of a
// definition request, and returns the store as the caller sees it.
func (s *frameworkService) definitionPath(ctx context.Context, appID, path string) (*state.View, string, error) {
	c, err := s.apps.caller(ctx, appID)
	if err != nil {
		return nil, "", err
	}
	p, err := c.defPath(path)
	return s.defs.For(c.party), p, err
}

// validText refuses to send a file that is not UTF-8 (only a file put on
// disk by hand can be): protobuf strings must be valid UTF-8.
func validText(p string, b []byte) error {
	if !utf8.Valid(b) {
		return status.Errorf(codes.FailedPrecondition, "definition %q is not UTF-8 text", p)
	}
	return nil
}

func write(message, expected string) state.WriteOptions {
	return state.WriteOptions{Message: message, ExpectedRevision: expected}
}

func (s *frameworkService) SetDefinitionFileContent(ctx context.Context, req *nexusv1.SetDefinitionFileContentRequest) (*nexusv1.SetDefinitionFileContentResponse, error) {
	v, p, err := s.definitionPath(ctx, req.GetAppId(), req.GetPath())
	if err != nil {
		return nil, err
	}
	rev, err := v.Set(p, []byte(req.GetContent()), write(req.GetCommitMessage(), req.GetExpectedRevision()))
	if err != nil {
		return nil, toStatus(err)
	}
	return &nexusv1.SetDefinitionFileContentResponse{Revision: rev}, nil
}

func (s *frameworkService) ApplyDefinitionDiff(ctx context.Context, req *nexusv1.ApplyDefinitionDiffRequest) (*nexusv1.ApplyDefinitionDiffResponse, error) {
	v, p, err := s.definitionPath(ctx, req.GetAppId(), req.GetPath())
	if err != nil {
		return nil, err
	}
	rev, content, err := v.ApplyDiff(p, req.GetDiff(), write(req.GetCommitMessage(), req.GetExpectedRevision()))
	if err != nil {
		return nil, toStatus(err)
	}
	return &nexusv1.ApplyDefinitionDiffResponse{Revision: rev, Content: string(content)}, nil
}

func (s *frameworkService) DeleteDefinitionFile(ctx context.Context, req *nexusv1.DeleteDefinitionFileRequest) (*nexusv1.DeleteDefinitionFileResponse, error) {
	v, p, err := s.definitionPath(ctx, req.GetAppId(), req.GetPath())
	if err != nil {
		return nil, err
	}
	rev, err := v.Delete(p, write(req.GetCommitMessage(), req.GetExpectedRevision()))
	if err != nil {
		return nil, toStatus(err)
	}
	return &nexusv1.DeleteDefinitionFileResponse{Revision: rev}, nil
}

func (s *frameworkService) RestoreDefinitionFile(ctx context.Context, req *nexusv1.RestoreDefinitionFileRequest) (*nexusv1.RestoreDefinitionFileResponse, error) {
	v, p, err := s.definitionPath(ctx, req.GetAppId(), req.GetPath())
	if err != nil {
		return nil, err
	}
	if req.GetRevision() == "" {
		return nil, status.Error(codes.InvalidArgument, "revision is required: the commit whose content to restore")
	}
	rev, content, err := v.Restore(p, req.GetRevision(), write(req.GetCommitMessage(), req.GetExpectedRevision()))
	if err != nil {
		return nil, toStatus(err)
	}
	return &nexusv1.RestoreDefinitionFileResponse{Revision: rev, Content: string(content)}, nil
}

func (s *frameworkService) ListDefinitionDirectory(ctx context.Context, req *nexusv1.ListDefinitionDirectoryRequest) (*nexusv1.ListDefinitionDirectoryResponse, error) {
	c, err := s.apps.caller(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	dir, err := c.defDir(req.GetPath())
	if err != nil {
		return nil, err
	}
	entries, err := s.defs.For(c.party).List(dir, req.GetRecursive())
	if err != nil {
		return nil, toStatus(err)
	}
	abs := strings.HasPrefix(req.GetPath(), "/")
	resp := &nexusv1.ListDefinitionDirectoryResponse{Entries: make([]*nexusv1.DefinitionEntry, 0, len(entries))}
	for _, e := range entries {
		t := nexusv1.EntryType_FILE
		if e.Dir {
			t = nexusv1.EntryType_DIRECTORY
		}
		resp.Entries = append(resp.Entries, &nexusv1.DefinitionEntry{Name: e.Name, Path: c.display(e.Path, abs), Type: t, Size: e.Size})
	}
	return resp, nil
}

func (s *frameworkService) GetDefinitionFileHistory(ctx context.Context, req *nexusv1.GetDefinitionFileHistoryRequest) (*nexusv1.GetDefinitionFileHistoryResponse, error) {
	v, p, err := s.definitionPath(ctx, req.GetAppId(), req.GetPath())
	if err != nil {
		return nil, err
	}
	if req.GetLimit() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "limit %d is negative", req.GetLimit())
	}
	entries, next, err := v.History(p, int(req.GetLimit()), req.GetPageToken())
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &nexusv1.GetDefinitionFileHistoryResponse{NextPageToken: next, Entries: make([]*nexusv1.HistoryEntry, len(entries))}
	for i, e := range entries {
		resp.Entries[i] = &nexusv1.HistoryEntry{Revision: e.Revision, Author: e.Author, Message: e.Message,
			Timestamp: timestamppb.New(e.Time), Change: changeType(e.Change)}
	}
	return resp, nil
}

func changeType(c state.ChangeType) nexusv1.ChangeType {
	switch c {
	case state.Added:
		return nexusv1.ChangeType_ADDED
	case state.Modified:
		return nexusv1.ChangeType_MODIFIED
	case state.Deleted:
		return nexusv1.ChangeType_DELETED
	}
	return nexusv1.ChangeType_CHANGE_UNSPECIFIED
}

func (s *frameworkService) GetDefinitionFileDiff(ctx context.Context, req *nexusv1.GetDefinitionFileDiffRequest) (*nexusv1.GetDefinitionFileDiffResponse, error) {
	v, p, err := s.definitionPath(ctx, req.GetAppId(), req.GetPath())
	if err != nil {
		return nil, err
	}
	d, err := v.Diff(p, strings.TrimPrefix(req.GetPath(), "/"), req.GetFromRevision(), req.GetToRevision())
	if err != nil {
		return nil, toStatus(err)
	}
	if !utf8.Valid([]byte(d)) {
		return nil, status.Errorf(codes.FailedPrecondition, "the diff of %q is not UTF-8 text", req.GetPath())
	}
	return &nexusv1.GetDefinitionFileDiffResponse{Diff: d}, nil
}

// watchBuffer is how many changes a watcher may fall behind before it is
// dropped with RESOURCE_EXHAUSTED and must resubscribe.
const watchBuffer = 8192

func (s *frameworkService) WatchDefinitions(req *nexusv1.WatchDefinitionsRequest, stream nexusv1.CoreFramework_WatchDefinitionsServer) error {
	c, err := s.apps.caller(stream.Context(), req.GetAppId())
	if err != nil {
		return err
	}
	dir, err := c.defDir(req.GetPathPrefix())
	if err != nil {
		return err
	}
	if !c.party.MayList(dir) {
		return toStatus(c.party.Definition(dir, false))
	}
	abs := strings.HasPrefix(req.GetPathPrefix(), "/")
	sub := s.bus.Subscribe(func(ev any) bool {
		ch, ok := ev.(state.DefinitionChange)
		return ok && underDir(ch.Path, dir) && c.party.MayRead(ch.Path)
	}, watchBuffer)
	defer sub.Close()
	if err := live(stream); err != nil {
		return err
	}
	return forward(stream.Context(), sub, func(ev any) error {
		ch := ev.(state.DefinitionChange)
		return stream.Send(&nexusv1.DefinitionChange{Path: c.display(ch.Path, abs), Revision: ch.Revision, Author: ch.Author,
			Change: changeType(ch.Change), Timestamp: timestamppb.New(ch.Time), Message: ch.Message})
	})
}

// underDir reports whether p is dir or lies below it ("" is the root).
func underDir(p, dir string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}

// live tells the client that its subscription is in place by sending the
// stream's headers: a client that waits for them (stream.Header()) misses
// no change made after that.
func live(stream grpc.ServerStream) error {
	return stream.SendHeader(metadata.MD{})
}

// forward sends the events of a subscription until the client goes away or
// the subscription ends.
func forward(ctx context.Context, sub *events.Subscription, send func(any) error) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-sub.C:
			if !ok {
				if errors.Is(sub.Err(), events.ErrOverflow) {
					return status.Error(codes.ResourceExhausted, "the watcher fell behind and was dropped: read faster, or watch again and reread the state")
				}
				return status.Error(codes.Unavailable, "the daemon is shutting down")
			}
			if err := send(ev); err != nil {
				return err
			}
		}
	}
}

func (s *frameworkService) GetRuntimeValue(ctx context.Context, req *nexusv1.GetRuntimeValueRequest) (*nexusv1.GetRuntimeValueResponse, error) {
	ns, err := s.runtimeNamespace(ctx, req.GetAppId(), req.GetNamespace())
	if err != nil {
		return nil, err
	}
	v, ok, err := s.runtime.Get(ctx, ns, req.GetKey())
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &nexusv1.GetRuntimeValueResponse{Found: ok, Value: v.Value}
	if !v.ExpiresAt.IsZero() {
		resp.ExpiresAt = timestamppb.New(v.ExpiresAt)
	}
	return resp, nil
}

func (s *frameworkService) runtimeNamespace(ctx context.Context, appID, ns string) (string, error) {
	c, err := s.apps.caller(ctx, appID)
	if err != nil {
		return "", err
	}
	return c.namespace(ns)
}

func (s *frameworkService) SetRuntimeValue(ctx context.Context, req *nexusv1.SetRuntimeValueRequest) (*nexusv1.SetRuntimeValueResponse, error) {
	ns, err := s.runtimeNamespace(ctx, req.GetAppId(), req.GetNamespace())
	if err != nil {
		return nil, err
	}
	ttl, err := state.TTLSeconds(req.GetTtlSeconds())
	if err != nil {
		return nil, toStatus(err)
	}
	if err := s.runtime.Set(ctx, ns, req.GetKey(), req.GetValue(), ttl); err != nil {
		return nil, toStatus(err)
	}
	return &nexusv1.SetRuntimeValueResponse{}, nil
}

func (s *frameworkService) DeleteRuntimeValue(ctx context.Context, req *nexusv1.DeleteRuntimeValueRequest) (*nexusv1.DeleteRuntimeValueResponse, error) {
	ns, err := s.runtimeNamespace(ctx, req.GetAppId(), req.GetNamespace())
	if err != nil {
		return nil, err
	}
	deleted, err := s.runtime.Delete(ctx, ns, req.GetKey())
	if err != nil {
		return nil, toStatus(err)
	}
	return &nexusv1.DeleteRuntimeValueResponse{Deleted: deleted}, nil
}

func (s *frameworkService) ListRuntimeKeys(ctx context.Context, req *nexusv1.ListRuntimeKeysRequest) (*nexusv1.ListRuntimeKeysResponse, error) {
	ns, err := s.runtimeNamespace(ctx, req.GetAppId(), req.GetNamespace())
	if err != nil {
		return nil, err
	}
	keys, err := s.runtime.List(ctx, ns, req.GetPrefix())
	if err != nil {
		return nil, toStatus(err)
	}
	return &nexusv1.ListRuntimeKeysResponse{Keys: keys}, nil
}

func (s *frameworkService) WatchRuntimeValues(req *nexusv1.WatchRuntimeValuesRequest, stream nexusv1.CoreFramework_WatchRuntimeValuesServer) error {
	ns, err := s.runtimeNamespace(stream.Context(), req.GetAppId(), req.GetNamespace())
	if err != nil {
		return err
	}
	prefix := req.GetPrefix()
	sub := s.bus.Subscribe(func(ev any) bool {
		ch, ok := ev.(state.RuntimeChange)
		return ok && ch.Namespace == ns && strings.HasPrefix(ch.Key, prefix)
	}, watchBuffer)
	defer sub.Close()
	if err := live(stream); err != nil {
		return err
	}
	return forward(stream.Context(), sub, func(ev any) error {
		ch := ev.(state.RuntimeChange)
		return stream.Send(&nexusv1.RuntimeChange{Namespace: ch.Namespace, Key: ch.Key, Change: ch.Change,
			Value: ch.Value, Timestamp: timestamppb.New(ch.Time)})
	})
}

var logLevels = map[string]slog.Level{
	"": slog.LevelInfo, "debug": slog.LevelDebug, "info": slog.LevelInfo,
	"warn": slog.LevelWarn, "warning": slog.LevelWarn, "error": slog.LevelError,
}

func (s *frameworkService) LogMessage(ctx context.Context, req *nexusv1.LogMessageRequest) (*nexusv1.LogMessageResponse, error) {
	c, err := s.apps.caller(ctx, req.GetAppId())
	if err != nil {
		return nil, err
	}
	level, ok := logLevels[strings.ToLower(req.GetLevel())]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "level %q is not one of debug, info, warn, error", req.GetLevel())
	}
	if req.GetMessage() == "" {
		return nil, status.Error(codes.InvalidArgument, "message is empty")
	}
	source := "app"
	if c.party.IsPerson() {
		source = "cli"
	}
	attrs := []slog.Attr{slog.String("source", source), slog.String("app", c.appID)}
	if req.GetTaskId() != "" {
		attrs = append(attrs, slog.String("task", req.GetTaskId()))
	}
	if req.GetRequestId() != "" {
		attrs = append(attrs, slog.String("request", req.GetRequestId()))
	}
	if len(req.GetContext()) > 0 {
		var kv []any
		for k, v := range req.GetContext() {
			kv = append(kv, slog.String(k, v))
		}
		attrs = append(attrs, slog.Group("context", kv...))
	}
	s.logger.LogAttrs(ctx, level, req.GetMessage(), attrs...)
	s.bus.Publish(events.Log{Source: source, Level: level.String(), Message: req.GetMessage(), AppID: c.appID, TaskID: req.GetTaskId(),
		RequestID: req.GetRequestId(), Context: req.GetContext(), Time: time.Now()})
	return &nexusv1.LogMessageResponse{Success: true}, nil
}
