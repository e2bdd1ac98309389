package exporter

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jetlake/jetlake/internal/failure"
	"github.com/jetlake/jetlake/internal/objstore"
)

// errorKind reads the kinds the adapters put their errors into, in the
// order it always has: a collision or a permanent failure before anything
// it may wrap.
func TestErrorKindCountsEachKindOfFailure(t *testing.T) {
	cause := errors.New("the store said no")
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("upload: %w", ErrAbandoned), "abandoned"},
		{&objstore.CollisionError{Key: "k"}, "collision"},
		{fmt.Errorf("put k: %w", &failure.Permanent{Code: "AccessDenied", Err: cause}), "permanent"},
		{&failure.Permanent{Code: "NotImplemented", Err: &failure.ServerFault{Err: cause}}, "permanent"},
		{&objstore.KeyError{Key: "k", Err: cause}, "key"},
		{fmt.Errorf("put k: %w", &failure.Throttled{Err: cause}), "throttled"},
		{&failure.ServerFault{Err: cause}, "server"},
		{context.DeadlineExceeded, "timeout"},
		{errors.New("dial tcp: connection refused"), "network"},
		{cause, "other"},
	}
	for _, tt := range tests {
		if got := errorKind(tt.err); got != tt.want {
			t.Errorf("errorKind(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
