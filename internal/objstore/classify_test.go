package objstore

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/internal/failure"
)

// classify puts every answer of the store into its kind, and keeps the
// message and minio-go's error in the chain.
func TestClassifyPutsTheStoresAnswersIntoKinds(t *testing.T) {
	answer := func(code string, status int) error {
		return fmt.Errorf("put k: %w", minio.ErrorResponse{Code: code, StatusCode: status, Message: code})
	}
	var (
		perm      *failure.Permanent
		throttled *failure.Throttled
		fault     *failure.ServerFault
		key       *KeyError
	)
	tests := []struct {
		name string
		err  error
		key  string
		is   func(error) bool
	}{
		{"access denied", answer("AccessDenied", 403), "k", func(err error) bool { return errors.As(err, &perm) && perm.Code == "AccessDenied" }},
		{"not implemented, a 501", answer("NotImplemented", 501), "k", func(err error) bool { return errors.As(err, &perm) && !errors.As(err, &fault) }},
		{"a key refused", answer("KeyTooLongError", 400), "k", func(err error) bool { return errors.As(err, &key) && key.Key == "k" }},
		{"slow down", answer("SlowDown", 503), "k", func(err error) bool { return errors.As(err, &throttled) && !errors.As(err, &fault) }},
		{"slow down without a 503", answer("SlowDown", 400), "k", func(err error) bool { return errors.As(err, &throttled) }},
		{"service unavailable", answer("ServiceUnavailable", 503), "k", func(err error) bool { return errors.As(err, &throttled) }},
		{"internal error", answer("InternalError", 500), "k", func(err error) bool { return errors.As(err, &fault) && !errors.As(err, &throttled) }},
		{"a key code on a request without a key, 500", answer("InvalidObjectName", 500), "", func(err error) bool { return errors.As(err, &fault) && !errors.As(err, &key) }},
		{"exists", answer("PreconditionFailed", 412), "k", func(err error) bool { return errors.Is(err, ErrExists) }},
		{"not found", answer("NoSuchKey", 404), "", func(err error) bool { return errors.Is(err, ErrNotFound) }},
		{"bad request", answer("BadDigest", 400), "k", func(err error) bool {
			return !errors.As(err, &perm) && !errors.As(err, &throttled) && !errors.As(err, &fault) && !errors.As(err, &key)
		}},
		{"no answer", errors.New("connection refused"), "k", func(err error) bool {
			return !errors.As(err, &perm) && !errors.As(err, &throttled) && !errors.As(err, &fault)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classify(tt.err, "b", tt.key, "s3:PutObject")
			if !tt.is(got) {
				t.Errorf("classify(%v) = %#v, not of the kind", tt.err, got)
			}
			if !strings.Contains(got.Error(), tt.err.Error()) {
				t.Errorf("classify(%v) says %q, which lost the message", tt.err, got)
			}
			var er minio.ErrorResponse
			if wantER := errors.As(tt.err, &er); wantER != errors.As(got, &er) {
				t.Errorf("classify(%v) lost minio-go's error from the chain", tt.err)
			}
		})
	}
	if got := classify(answer("InternalError", 500), "b", "k", "s3:PutObject"); got.Error() != answer("InternalError", 500).Error() {
		t.Errorf("a server fault says %q, want the store's error as it was", got)
	}
}
