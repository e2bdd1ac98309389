package exporter

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/nats-io/nats.go"
)

// PermissionError is a publish or a subscription the NATS server refused
// for the connection's user. The server reports it to the client apart
// from the request that caused it, which would otherwise only time out;
// no retry mends it, only a grant in the user's permissions.
type PermissionError struct {
	Op      string // "publish" or "subscribe"; "" when the server's text names neither
	Subject string // the subject refused; "" when the text names none
	Err     error  // what the server said, wrapping nats.ErrPermissionViolation
}

func (e *PermissionError) Error() string {
	if e.Op == "" || e.Subject == "" {
		return fmt.Sprintf("%v: check the user's permissions (jetlake plan prints those jetlake needs)", e.Err)
	}
	return fmt.Sprintf("nats: permission denied: %s to %q: add it to the user's %s permissions (jetlake plan prints those jetlake needs)",
		e.Op, e.Subject, e.Op)
}

func (e *PermissionError) Unwrap() error { return e.Err }

// permissionText is the server's text of a violation, as nats-server
// sends it: `Permissions Violation for Publish to "<subject>"` or
// `Permissions Violation for Subscription to "<subject>"`, the latter
// with ` using queue "<queue>"` for a queue subscription.
var permissionText = regexp.MustCompile(`(?i)violation for (publish|subscription) to "([^"]+)"`)

// ParsePermissionError returns the *PermissionError that err, an error a
// NATS connection reported, describes, or nil when err is no permissions
// violation.
func ParsePermissionError(err error) *PermissionError {
	if err == nil {
		return nil
	}
	var pe *PermissionError
	if errors.As(err, &pe) {
		return pe
	}
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return nil
	}
	pe = &PermissionError{Err: err}
	if m := permissionText.FindStringSubmatch(err.Error()); m != nil {
		pe.Op, pe.Subject = "publish", m[2]
		if m[1][0] == 's' || m[1][0] == 'S' {
			pe.Op = "subscribe"
		}
	}
	return pe
}

// PermissionWatch hears of the permissions violations a NATS connection
// reports, through the error handler Option installs or through Observe,
// and ends the contexts it handed out with the violation as their cause:
// what waited for an answer that will never come stops at once. The zero
// value is ready to use. Safe for concurrent use.
type PermissionWatch struct {
	mu     sync.Mutex
	next   int
	active map[int]context.CancelCauseFunc
}

// Option returns an error handler for the connection that reports to w.
// It replaces the connection's other error handler; one that has its own
// calls Observe instead.
func (w *PermissionWatch) Option() nats.Option {
	return nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { w.Observe(err) })
}

// Observe takes an error the connection reported. A permissions violation
// ends every context of Context that is still running, with a
// *PermanentError wrapping the *PermissionError as the cause; Observe
// reports whether err was one.
func (w *PermissionWatch) Observe(err error) bool {
	pe := ParsePermissionError(err)
	if pe == nil {
		return false
	}
	cause := &PermanentError{Code: "NATSPermission", Err: pe}
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, cancel := range w.active {
		cancel(cause)
		delete(w.active, id)
	}
	return true
}

// Context returns a copy of ctx that also ends when w observes a
// permissions violation; see Denied. The CancelFunc releases it, as
// context.WithCancel's does.
func (w *PermissionWatch) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	w.mu.Lock()
	if w.active == nil {
		w.active = map[int]context.CancelCauseFunc{}
	}
	id := w.next
	w.next++
	w.active[id] = cancel
	w.mu.Unlock()
	return ctx, func() {
		w.mu.Lock()
		delete(w.active, id)
		w.mu.Unlock()
		cancel(nil)
	}
}

// Denied returns the *PermanentError, wrapping a *PermissionError, that
// ended ctx (a context of PermissionWatch.Context, or one made from it),
// or nil when ctx did not end for a permissions violation.
func Denied(ctx context.Context) error {
	var pe *PermissionError
	if cause := context.Cause(ctx); ctx.Err() != nil && errors.As(cause, &pe) {
		return cause
	}
	return nil
}
