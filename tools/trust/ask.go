package trust

import (
	"context"
	"log/slog"
	"sync"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools/policy"
)

// Asking is the person's asker of approvals on one surface (the editor),
// who it answers for, and the pin each entry was asked about, so that an
// entry (name and pin) is asked about once per asker. S is what the
// asker is shown of an entry. The zero value asks no one; it is safe for
// concurrent use.
type Asking[S any] struct {
	// mu guards the fields below.
	mu    sync.Mutex
	fn    func(ctx context.Context, st S) (bool, error)
	who   access.Party
	asked map[string]string
	ctx   context.Context
	stop  context.CancelFunc
}

// Set attaches fn (nil detaches) as the asker of the person on the
// surface who, replacing the asker before and ending its questions. An
// asker that is not the person (policy.MayAnswer) is never attached. It
// reports whether an asker is attached.
func (a *Asking[S]) Set(who access.Party, fn func(ctx context.Context, st S) (bool, error)) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stop != nil {
		a.stop()
	}
	if policy.MayAnswer(who) != nil {
		fn = nil
	}
	a.fn, a.who, a.asked = fn, who, map[string]string{}
	a.ctx, a.stop = context.WithCancel(context.Background())
	return fn != nil
}

// Stop detaches the asker and ends its questions.
func (a *Asking[S]) Stop() {
	a.Set(access.Party{}, nil)
}

// Forget has the entry name asked about afresh (its successor).
func (a *Asking[S]) Forget(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.asked, name)
}

// Question is what [Asking.Ask] asks about, and how it says what became of
// the answer.
type Question[S any] struct {
	// Name and Pin are the entry's; State is what the asker is shown.
	Name, Pin string
	State     S
	// Approve approves the entry at Pin on the say-so of who, the person
	// who answered yes.
	Approve func(who access.Party, name, pin string) error
	// Until end the question early: the entry was approved another way,
	// or it went.
	Until []<-chan struct{}
	// What names the entry in the log ("MCP server", "hook"), Key is the
	// log attribute of its name ("server", "hook"), and How says how else
	// it is approved ("nexus mcp trust").
	What, Key, How string
	Logger         *slog.Logger
}

// Ask asks the attached asker about q, in the background, unless no asker
// is attached or it was asked about this entry at this pin already. A yes
// approves the entry; a no, or no answer, leaves it waiting until it is
// approved another way.
func (a *Asking[S]) Ask(q Question[S]) {
	a.mu.Lock()
	if a.fn == nil || a.asked[q.Name] == q.Pin {
		a.mu.Unlock()
		return
	}
	a.asked[q.Name] = q.Pin
	ask, who := a.fn, a.who
	ctx, cancel := context.WithCancel(a.ctx)
	a.mu.Unlock()
	for _, ch := range q.Until {
		go func() {
			select {
			case <-ch:
			case <-ctx.Done():
			}
			cancel()
		}()
	}
	go func() {
		defer cancel()
		ok, err := ask(ctx, q.State)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			q.Logger.Warn("the editor was not asked to approve the "+q.What+"; "+q.How+" approves it", q.Key, q.Name, "error", err.Error())
		case !ok:
			q.Logger.Info("the person did not approve the "+q.What+"; it waits", q.Key, q.Name)
		default:
			if err := q.Approve(who, q.Name, q.Pin); err != nil {
				q.Logger.Warn("the "+q.What+" the person approved in the editor was not approved", q.Key, q.Name, "error", err.Error())
			}
		}
	}()
}
