package exporter

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jetlake/jetlake/internal/jsclient"
)

// backoff returns the wait before retry attempt+1: exponential from 200ms to
// 10s, with jitter over the upper half.
func backoff(attempt int) time.Duration {
	d := 200 * time.Millisecond << min(attempt, 6)
	d = min(d, 10*time.Second)
	return d/2 + rand.N(d/2+1)
}

// sleep waits for d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// retry runs fn until it succeeds, fails for good or ctx ends, backing off
// between attempts and logging what it waits for.
func retry(ctx context.Context, log *slog.Logger, what string, fn func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := fn(actx)
		cancel()
		if err == nil {
			if attempt > 0 {
				log.Info(what + " reachable again")
			}
			return nil
		}
		if !retryable(err) {
			return err
		}
		if denied := jsclient.Denied(ctx); denied != nil {
			return denied
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (last error: %w)", what, ctx.Err(), err)
		}
		wait := backoff(attempt)
		log.Warn(what+" unavailable; retrying", "attempt", attempt+1, "retry_in", wait.Round(time.Millisecond), "error", err)
		if !sleep(ctx, wait) {
			return fmt.Errorf("%s: %w (last error: %w)", what, ctx.Err(), err)
		}
	}
}
