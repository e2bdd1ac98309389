package jsclient

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/jetlake/jetlake/internal/failure"
)

// PermissionError is a publish or a subscription the NATS server refused
// for the connection's user. The server reports it to the client apart
// from the request that caused it, which would otherwise only time out;
// no retry mends it, only a grant in the user's permissions.
type PermissionError struct {
	Op      string // "publish" or "subscribe"; "" when the server's text names neither
	Subject string // the subject refused; "" when the text names none
	// Grant is the permission to add: Subject, or for the ack of a
	// message the wildcard that covers every ack of its consumer.
	Grant string
	Err   error // what the server said, wrapping nats.ErrPermissionViolation
}

func (e *PermissionError) Error() string {
	if e.Op == "" || e.Subject == "" {
		return fmt.Sprintf("%v: check the user's permissions (jetlake plan prints those jetlake needs)", e.Err)
	}
	grant := "it"
	if e.Grant != e.Subject {
		grant = strconv.Quote(e.Grant)
	}
	return fmt.Sprintf("nats: permission denied: %s to %q: add %s to the user's %s permissions (jetlake plan prints those jetlake needs)",
		e.Op, e.Subject, grant, e.Op)
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
		pe.Op, pe.Subject, pe.Grant = "publish", m[2], m[2]
		if m[1][0] == 's' || m[1][0] == 'S' {
			pe.Op = "subscribe"
		}
		if pe.Op == "publish" {
			pe.Grant = ackGrant(pe.Subject)
		}
	}
	return pe
}

// ackGrant is the grant that covers subject when it is the ack subject of
// a message (see parseAckReply): $JS.ACK.<stream>.<consumer>.>, or with a
// domain $JS.ACK.<domain>.*.<stream>.<consumer>.>, as plan prints them.
// Any other subject is its own grant.
func ackGrant(subject string) string {
	tokens := strings.Split(subject, ".")
	if len(tokens) < 9 || tokens[0] != "$JS" || tokens[1] != "ACK" {
		return subject
	}
	if len(tokens) == 9 {
		return strings.Join(tokens[:4], ".") + ".>"
	}
	if len(tokens) >= 11 {
		return strings.Join([]string{"$JS", "ACK", tokens[2], "*", tokens[4], tokens[5], ">"}, ".")
	}
	return subject
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
// *failure.Permanent wrapping the *PermissionError as the cause; Observe
// reports whether err was one.
func (w *PermissionWatch) Observe(err error) bool {
	pe := ParsePermissionError(err)
	if pe == nil {
		return false
	}
	cause := &failure.Permanent{Code: "NATSPermission", Err: pe}
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

// Denied returns the *failure.Permanent, wrapping a *PermissionError, that
// ended ctx (a context of PermissionWatch.Context, or one made from it),
// or nil when ctx did not end for a permissions violation.
func Denied(ctx context.Context) error {
	var pe *PermissionError
	if cause := context.Cause(ctx); ctx.Err() != nil && errors.As(cause, &pe) {
		return cause
	}
	return nil
}
