package server

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/nexuscocreate/nexus/tools"
)

// The pending calls of a slow editor hold a bounded number of bytes: past
// it, statuses in between are dropped and final ones go without their
// arguments and result.
func TestOutboxBoundsCallBytes(t *testing.T) {
	o := newOutbox(nil, 10000, 1<<20, slog.New(slog.DiscardHandler))
	args := json.RawMessage(`"` + strings.Repeat("a", 200<<10) + `"`)
	for i := range 10 {
		o.event(tools.Call{ID: fmt.Sprint(i), Status: tools.StatusRunning, ArgumentsJSON: args})
	}
	if o.calls != 5 || o.callBytes > 1<<20 || o.dropped.calls != 5 {
		t.Fatalf("%d calls pending with %d bytes, %d dropped", o.calls, o.callBytes, o.dropped.calls)
	}
	// A final status always gets in, without its arguments when they do not fit.
	o.event(tools.Call{ID: "9", Status: tools.StatusCompleted, ArgumentsJSON: args, ResultJSON: json.RawMessage(`{}`)})
	final := o.items[outKey{outCall, "9"}].(tools.Call)
	if !final.ArgumentsTruncated || final.ArgumentsSize != len(args) || string(final.ArgumentsJSON) != `""` || o.calls != 6 || o.callBytes > 1<<20 {
		t.Errorf("final status kept as %+v; %d calls, %d bytes", final, o.calls, o.callBytes)
	}
	// One that fits keeps them, replacing its pending status.
	o.event(tools.Call{ID: "0", Status: tools.StatusCompleted, ArgumentsJSON: args})
	if c := o.items[outKey{outCall, "0"}].(tools.Call); c.ArgumentsTruncated || !c.Done() || o.calls != 6 {
		t.Errorf("final status of a pending call: %+v, %d calls", c, o.calls)
	}
	keys, _ := o.take(nil, nil)
	if len(keys) != 7 || o.calls != 0 || o.callBytes != 0 { // 6 calls and the notice of what was dropped
		t.Errorf("after take: %d items taken, %d calls and %d bytes pending", len(keys), o.calls, o.callBytes)
	}
}
