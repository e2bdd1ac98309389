package exporter

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/jetlake/jetlake/internal/failure"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/state"
)

// The one classifier of errors: what stops a connector (permanent), what
// set-up retries (retryable), what stops a batch's retries (see
// batchSteps.do), and the kind upload_errors_total counts (errorKind).
// It reads the kinds of internal/failure and the adapters' own errors, into
// which the adapters put their client libraries' errors; it reads no
// library's errors itself.

// permanent reports whether err is one that waiting does not mend, and
// that stops the connector: a wrong setting (jsclient.ConfigError), a
// refusal of the store or server (failure.Permanent), or another
// writer's object at a key (objstore.CollisionError), a state bucket that
// can lose entries by itself (state.UnsafeBucketError).
func permanent(err error) bool {
	var ce *jsclient.ConfigError
	var coll *objstore.CollisionError
	var ub *state.UnsafeBucketError
	return errors.As(err, &ce) || failure.IsPermanent(err) || errors.As(err, &coll) || errors.As(err, &ub)
}

// retryable reports whether a set-up error may go away by itself: a network
// problem or a server that is not ready, as opposed to a wrong setting or a
// request JetStream refuses as made (jsclient.Refused).
func retryable(err error) bool {
	return !permanent(err) && !jsclient.Refused(err)
}

// errorKind classifies a failed store or state operation for the
// upload_errors_total metric.
func errorKind(err error) string {
	var coll *objstore.CollisionError
	var throttled *failure.Throttled
	var fault *failure.ServerFault
	var ne net.Error
	switch {
	case errors.Is(err, ErrAbandoned):
		return "abandoned"
	case errors.As(err, &coll):
		return "collision"
	case failure.IsPermanent(err):
		return "permanent"
	case keyError(err) != nil:
		return "key"
	case errors.As(err, &throttled):
		return "throttled"
	case errors.As(err, &fault):
		return "server"
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &ne), strings.Contains(err.Error(), "connection refused"):
		return "network"
	}
	return "other"
}
