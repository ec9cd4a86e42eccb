package rpc

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/state"
)

// toStatus maps a domain error to a gRPC status at the edge. The message is
// the domain's, which names what was wrong.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codes.Internal
	switch {
	case errors.Is(err, access.ErrDenied):
		code = codes.PermissionDenied
	case errors.Is(err, state.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, state.ErrConflict):
		code = codes.Aborted
	case errors.Is(err, state.ErrInvalid), errors.Is(err, state.ErrTooLarge):
		code = codes.InvalidArgument
	case errors.Is(err, state.ErrPatch):
		code = codes.FailedPrecondition
	case errors.Is(err, state.ErrClosed), errors.Is(err, state.ErrUnavailable):
		code = codes.Unavailable
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	}
	return status.Error(code, err.Error())
}
