package exporter

import (
	"context"
	"time"
)

// A chore is upkeep the loop starts beside itself when it is due, so that
// no network call holds up deliveries and acks: a walk, an export record's
// write, an intent resolution, a lease round, a table commit or compaction
// pass, intent deletions, the consumer gauges, the idle check. One run of
// a chore is under way at a time. Every tick the loop starts the chores
// that are due, in the order of the list; on the way out it runs those
// that finish work (record writes, commits, deletions) once more, in order
// and on the loop.
type chore struct {
	name string
	// due reports, on the loop, whether the chore is to start at now.
	// final: the runner is on its way out and ticks no more.
	due func(now time.Time, final bool) bool
	// start takes, on the loop, what the work needs, and returns the work.
	start func(now time.Time) choreWork
	// keepOnStop: the work is not cancelled when the run ends (a record
	// write or a commit cut short helps nobody); it bounds itself.
	keepOnStop bool
	// atShutdown: the chore runs on the way out while it is due and its
	// runs succeed; byDeadline: only within the shutdown timeout.
	atShutdown, byDeadline bool
	// queue: the chore works through a queue; while it holds more, the
	// next run starts as soon as one is applied.
	queue bool

	running bool
	done    time.Time // when the last run was applied
}

// choreWork runs beside the loop and returns what to apply on it (nil:
// nothing), and the error that ended the work, if any.
type choreWork func(ctx context.Context) (apply func(), err error)

// startChores starts every chore that is due at now and not running.
func (r *runner) startChores(ctx context.Context, now time.Time) {
	for _, c := range r.chores.list {
		r.tryChore(ctx, c, now)
	}
}

// tryChore starts c when it is due at now and not running.
func (r *runner) tryChore(ctx context.Context, c *chore, now time.Time) {
	if c == nil || c.running || !c.due(now, false) {
		return
	}
	c.running = true
	work := c.start(now)
	wctx := ctx
	if c.keepOnStop {
		wctx = context.WithoutCancel(ctx)
	}
	r.beside(func() func() {
		apply, _ := work(wctx)
		return func() {
			c.running, c.done = false, time.Now()
			if apply != nil {
				apply()
			}
			if c.queue {
				r.tryChore(ctx, c, c.done)
			}
		}
	})
}

// finishChores runs, on the way out, the chores that finish work, in the
// order of the list, each while it is due and its runs succeed; a chore
// bounded by the shutdown timeout runs only before stopBy, and is cut
// short at it. Nothing runs beside the loop any more.
func (r *runner) finishChores(ctx context.Context, stopBy time.Time) {
	base := context.WithoutCancel(ctx)
	for _, c := range r.chores.list {
		if !c.atShutdown || c.running {
			continue
		}
		cctx, cancel := base, context.CancelFunc(func() {})
		if c.byDeadline {
			if !time.Now().Before(stopBy) {
				continue
			}
			cctx, cancel = context.WithDeadline(base, stopBy)
		}
		for cctx.Err() == nil && c.due(time.Now(), true) {
			apply, err := c.start(time.Now())(cctx)
			c.done = time.Now()
			if apply != nil {
				apply()
			}
			if err != nil {
				break
			}
		}
		cancel()
	}
}
