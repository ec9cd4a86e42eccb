package state

import "errors"

// Errors of the state layer. Transports map them to their own codes with
// errors.Is; the wrapped message names what was wrong.
var (
	// ErrNotFound: the path, revision or key does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: expectedRevision is not the path's current revision.
	ErrConflict = errors.New("revision conflict")
	// ErrInvalid: the request itself is malformed (a bad path, content that
	// is not UTF-8 text, a bad revision).
	ErrInvalid = errors.New("invalid argument")
	// ErrTooLarge: the content is over the configured limit.
	ErrTooLarge = errors.New("too large")
	// ErrPatch: a diff does not apply to the current content.
	ErrPatch = errors.New("diff does not apply")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store closed")
	// ErrUnavailable: the store's backend (a Redis server) cannot be
	// reached now; the same call may work later.
	ErrUnavailable = errors.New("store unavailable")
)
