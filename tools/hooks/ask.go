package hooks

import (
	"context"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools/trust"
)

// Asker asks the person whether to approve a hook that waits for
// approval, showing st (what it runs, its files and their hashes); it
// returns true when they approve. ctx ends when the question no longer
// matters (the asker was replaced).
type Asker func(ctx context.Context, st Status) (bool, error)

// SetAsker attaches fn (nil detaches) as the asker of the person, on the
// surface who (the editor): it is asked at once about every hook waiting
// for approval, and then about each hook a call or a prompt finds waiting.
// Each hook (name and pin) is asked about once per asker: a refusal, or no
// answer, leaves it waiting until it is approved another way (nexus hooks
// trust). The call or prompt that found it waiting is denied all the
// same; an approval counts from the next. An asker that is not the person
// (policy.MayAnswer) is never attached.
func (h *Hooks) SetAsker(who access.Party, fn Asker) {
	if !h.asking.Set(who, fn) {
		return
	}
	for _, st := range h.List() {
		if !st.Trusted && st.Error == "" {
			h.ask(st)
		}
	}
}

// ask asks the attached asker, if any, about st, a hook found waiting:
// once per asker and pin.
func (h *Hooks) ask(st Status) {
	h.asking.Ask(trust.Question[Status]{
		Name: st.Name, Pin: st.Pin, State: st,
		Approve: func(who access.Party, name, pin string) error {
			_, err := h.Trust(who, name, pin)
			return err
		},
		What: "hook", Key: "hook", How: "nexus hooks trust", Logger: h.logger,
	})
}
