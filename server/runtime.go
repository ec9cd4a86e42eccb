package server

import (
	"context"
	"time"

	"github.com/nexuscocreate/nexus/state"
)

// The nexus/runtime/ methods. The editor names the namespace (an app id,
// or any namespace: the person's editor is not confined to one app).

type rtKeyParams struct {
	AppID     string `json:"appId"`
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
}

func (p *rtKeyParams) check() (string, error) {
	ns, err := namespace(p.AppID, p.Namespace)
	if err != nil {
		return "", err
	}
	if p.Key == "" {
		return "", missing("key", "the runtime key")
	}
	return ns, nil
}

func namespace(appID, ns string) (string, error) {
	switch {
	case ns != "":
		return ns, nil
	case appID != "":
		return appID, nil
	}
	return "", missing("namespace", "the runtime namespace (or appId)")
}

type rtGetResult struct {
	Found     bool       `json:"found"`
	Value     string     `json:"value"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

func (s *Server) runtimeGet(ctx context.Context, p *rtKeyParams) (*rtGetResult, error) {
	ns, err := p.check()
	if err != nil {
		return nil, err
	}
	v, ok, err := s.opts.Runtime.Get(ctx, ns, p.Key)
	if err != nil {
		return nil, err
	}
	res := &rtGetResult{Found: ok, Value: v.Value}
	if !v.ExpiresAt.IsZero() {
		res.ExpiresAt = &v.ExpiresAt
	}
	return res, nil
}

type rtSetParams struct {
	rtKeyParams
	Value      *string `json:"value"`
	TTLSeconds int64   `json:"ttlSeconds"`
}

type emptyResult struct{}

func (s *Server) runtimeSet(ctx context.Context, p *rtSetParams) (*emptyResult, error) {
	ns, err := p.check()
	if err != nil {
		return nil, err
	}
	if p.Value == nil {
		return nil, missing("value", `the value to store ("" is a value)`)
	}
	ttl, err := state.TTLSeconds(p.TTLSeconds)
	if err != nil {
		return nil, err
	}
	if err := s.opts.Runtime.Set(ctx, ns, p.Key, *p.Value, ttl); err != nil {
		return nil, err
	}
	return &emptyResult{}, nil
}

type rtDeleteResult struct {
	Deleted bool `json:"deleted"`
}

func (s *Server) runtimeDelete(ctx context.Context, p *rtKeyParams) (*rtDeleteResult, error) {
	ns, err := p.check()
	if err != nil {
		return nil, err
	}
	deleted, err := s.opts.Runtime.Delete(ctx, ns, p.Key)
	if err != nil {
		return nil, err
	}
	return &rtDeleteResult{Deleted: deleted}, nil
}

type rtListParams struct {
	AppID     string `json:"appId"`
	Namespace string `json:"namespace"`
	Prefix    string `json:"prefix"`
}

type rtListResult struct {
	Keys []string `json:"keys"`
}

func (s *Server) runtimeList(ctx context.Context, p *rtListParams) (*rtListResult, error) {
	ns, err := namespace(p.AppID, p.Namespace)
	if err != nil {
		return nil, err
	}
	keys, err := s.opts.Runtime.List(ctx, ns, p.Prefix)
	if err != nil {
		return nil, err
	}
	if keys == nil {
		keys = []string{}
	}
	return &rtListResult{Keys: keys}, nil
}
