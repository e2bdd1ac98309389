package exporter

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestRetryableTellsPassingTroubleFromWrongSettings(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{errors.New("connection refused"), true},
		{&jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{Code: 404, Description: "stream not found"}, false},
		{&ConfigError{Stream: "S", Consumer: "c", Msg: "AckAll"}, false},
		{&PermanentError{Err: errors.New("AccessDenied")}, false},
		// A collision does not go away by waiting: it stops the exporter.
		{fmt.Errorf("recover: %w", &CollisionError{Key: "k", Intent: "other"}), false},
	}
	for _, tt := range tests {
		if got := retryable(tt.err); got != tt.want {
			t.Errorf("retryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
