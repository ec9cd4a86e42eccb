package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuscocreate/nexus/access"
)

// completer answers completion/complete for party with the completions of
// the hub server behind the reference: a ref/prompt's exposed name is the
// server's prompt under its own name; a ref/resource's URI (or URI
// template) is the server that lists it. A reference to nothing exposed
// is invalid params; one to what party may not read is refused.
func (g *Gateway) completer(party access.Party) func(context.Context, *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	return func(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
		return g.complete(ctx, party, req)
	}
}

func (g *Gateway) complete(ctx context.Context, party access.Party, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	p := *req.Params
	p.Meta = nil
	ref := *p.Ref
	var server string
	g.mu.Lock()
	switch ref.Type {
	case "ref/prompt":
		if pr, ok := g.promptRefs[ref.Name]; ok {
			server, ref.Name = pr.server, pr.name
		}
	case "ref/resource":
		if e, ok := g.templateEntries[ref.URI]; ok {
			server = e.server
		} else if e, ok := g.resourceEntries[ref.URI]; ok {
			server = e.server
		}
	}
	g.mu.Unlock()
	if server == "" {
		what := "prompt " + ref.Name
		if ref.Type == "ref/resource" {
			what = "resource " + ref.URI
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete: no " + what + " is exposed here"}
	}
	if err := g.sessionOwned(server); err != nil {
		return nil, err
	}
	p.Ref = &ref
	return g.opts.Hub.As(party).Complete(ctx, server, &p)
}
