package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetlake/jetlake/internal/jsclient"
)

// violation is the error nats.go hands the error handler for the server's
// text.
func violation(text string) error {
	return fmt.Errorf("%w: %s", nats.ErrPermissionViolation, text)
}

// A violation is permanent: retry gives up at once.
func TestAViolationIsNotRetried(t *testing.T) {
	var w jsclient.PermissionWatch
	running, stop := w.Context(context.Background())
	defer stop()
	w.Observe(violation(`Permissions Violation for Publish to "$JS.ACK.S.c.>"`))
	<-running.Done()
	if denied := jsclient.Denied(running); denied == nil || retryable(denied) {
		t.Fatalf("Denied: %v; retry would retry it", denied)
	}
}

func TestRetryStopsWithTheViolationInsteadOfRetryingTheTimeOut(t *testing.T) {
	var w jsclient.PermissionWatch
	ctx, stop := w.Context(context.Background())
	defer stop()
	attempts := 0
	done := make(chan error, 1)
	go func() {
		done <- retry(ctx, slog.New(slog.DiscardHandler), "jetstream", func(actx context.Context) error {
			attempts++
			// The server's answer to a refused request is the
			// violation, apart from it: the request itself only
			// waits.
			time.AfterFunc(50*time.Millisecond, func() {
				w.Observe(violation(`Permissions Violation for Publish to "$JS.API.STREAM.INFO.S"`))
			})
			<-actx.Done()
			return actx.Err()
		})
	}()
	select {
	case err := <-done:
		var pe *jsclient.PermissionError
		if !errors.As(err, &pe) || pe.Subject != "$JS.API.STREAM.INFO.S" || attempts != 1 {
			t.Fatalf("retry: %v after %d attempts, want the violation after 1", err, attempts)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("retry went on after the violation")
	}
}
