package exporter

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/failure"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/objstore"
)

func TestRetryableTellsPassingTroubleFromWrongSettings(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{errors.New("connection refused"), true},
		{&jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{Code: 404, Description: "stream not found"}, false},
		{&jsclient.ConfigError{Stream: "S", Consumer: "c", Msg: "AckAll"}, false},
		{&failure.Permanent{Err: errors.New("AccessDenied")}, false},
		// A collision does not go away by waiting: it stops the exporter.
		{fmt.Errorf("recover: %w", &objstore.CollisionError{Key: "k", Intent: "other"}), false},
	}
	for _, tt := range tests {
		if got := retryable(tt.err); got != tt.want {
			t.Errorf("retryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestResolveWaitsForALiveWriterOnlyUnderPinnedFailover(t *testing.T) {
	tests := []struct {
		ackWait time.Duration
		alive   bool
		want    time.Duration
	}{
		// The writer is gone: a request it completed may still land.
		{2 * time.Minute, false, writerGone},
		{10 * time.Second, false, 7 * time.Second}, // one attempt (5s) + 2s is shorter
		// A paused instance may still be sending: one attempt's timeout.
		{2 * time.Minute, true, 40*time.Second + 2*time.Second},
		{time.Hour, true, 5*time.Minute + 2*time.Second},
	}
	for _, tt := range tests {
		if got := resolveAfter(tt.ackWait, tt.alive); got != tt.want {
			t.Errorf("resolveAfter(%s, alive %v) = %s, want %s", tt.ackWait, tt.alive, got, tt.want)
		}
	}
}
