package hooks

import (
	"context"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/tools/policy"
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
	h.askMu.Lock()
	defer h.askMu.Unlock()
	if h.stopAsking != nil {
		h.stopAsking()
	}
	if policy.MayAnswer(who) != nil {
		fn = nil
	}
	h.asker, h.askerWho, h.asked = fn, who, map[string]string{}
	h.askCtx, h.stopAsking = context.WithCancel(context.Background())
	if fn == nil {
		return
	}
	for _, st := range h.List() {
		if !st.Trusted && st.Error == "" {
			h.askLocked(st)
		}
	}
}

// ask asks the attached asker about st, a hook found waiting.
func (h *Hooks) ask(st Status) {
	h.askMu.Lock()
	defer h.askMu.Unlock()
	h.askLocked(st)
}

// askLocked asks about st once per asker and pin. The caller holds askMu.
func (h *Hooks) askLocked(st Status) {
	if h.asker == nil || h.asked[st.Name] == st.Pin {
		return
	}
	h.asked[st.Name] = st.Pin
	ask, who, ctx := h.asker, h.askerWho, h.askCtx
	go func() {
		ok, err := ask(ctx, st)
		switch {
		case ctx.Err() != nil:
		case err != nil:
			h.logger.Warn("the editor was not asked to approve the hook; nexus hooks trust approves it", "hook", st.Name, "error", err.Error())
		case !ok:
			h.logger.Info("the person did not approve the hook; it waits", "hook", st.Name)
		default:
			if _, err := h.Trust(who, st.Name, st.Pin); err != nil {
				h.logger.Warn("the hook the person approved in the editor was not approved", "hook", st.Name, "error", err.Error())
			}
		}
	}()
}
