package rpc

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/state"
)

func TestToStatus(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want codes.Code
	}{
		{fmt.Errorf("get runtime key %q: redis at 127.0.0.1:6379 is unreachable (EOF): %w", "k", state.ErrUnavailable), codes.Unavailable},
		{fmt.Errorf("runtime database x: %w", state.ErrClosed), codes.Unavailable},
		{fmt.Errorf("key: %w", state.ErrInvalid), codes.InvalidArgument},
		{fmt.Errorf("value: %w", state.ErrTooLarge), codes.InvalidArgument},
		{fmt.Errorf("get: %w", context.Canceled), codes.Canceled},
		{fmt.Errorf("something else"), codes.Internal},
	} {
		st := status.Convert(toStatus(tc.err))
		if st.Code() != tc.want || st.Message() != tc.err.Error() {
			t.Errorf("toStatus(%v) = %v %q; want %v with the error's message", tc.err, st.Code(), st.Message(), tc.want)
		}
	}
}
