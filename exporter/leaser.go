package exporter

import (
	"context"
	"strconv"
	"time"

	"github.com/jetlake/jetlake/internal/lease"
)

// leasing is this instance's leases as the runner keeps them: the
// Leaser, which rounds use beside the loop, and what the loop changes.
type leasing struct {
	*lease.Leaser
	memberRev uint64    // revision of the membership key; 0 when not written
	last      time.Time // when the last round started
	// warned holds the entries a round did not believe and the loop
	// warned about, key → revision, so that each is reported once.
	warned map[string]uint64
}

// leaseChore runs a lease round every third of the lease TTL. Nil
// without partitioned entries.
func (r *runner) leaseChore() *chore {
	l := r.leases
	if l == nil {
		return nil
	}
	return &chore{
		name: "leases",
		due:  func(now time.Time, final bool) bool { return !final && now.Sub(l.last) >= l.TTL()/3 },
		start: func(now time.Time) choreWork {
			l.last = now
			held, groups := r.partitionsHeld(), r.groupSnaps()
			memberRev := l.memberRev
			return func(ctx context.Context) (func(), error) {
				res := l.Round(ctx, memberRev, held, groups)
				return func() { r.applyRound(ctx, res, now) }, nil
			}
		},
	}
}

// groupSnaps describes the partitioned entries for a round.
func (r *runner) groupSnaps() []lease.GroupSnap {
	out := make([]lease.GroupSnap, len(r.groups))
	for i, g := range r.groups {
		out[i] = lease.GroupSnap{Prefix: g.prefix, Partitions: len(g.parts), TTL: g.cfg.LeaseTTL, Held: map[int]bool{}, Busy: map[int]bool{}}
		for _, s := range g.parts {
			switch p := s.part; {
			case p.handing:
				out[i].Busy[p.k] = true
			case p.rev != 0:
				out[i].Held[p.k] = true
			}
		}
	}
	return out
}

// applyRound applies a round that started at started: renewed leases
// last from then, lost ones are handed over without release, claimed ones
// are pulled, and partitions beyond the instance's share are handed over.
func (r *runner) applyRound(ctx context.Context, res *lease.RoundResult, started time.Time) {
	l := r.leases
	l.memberRev = res.MemberRev
	r.warnIgnored(res)
	name := r.cfg.Name
	for gi, g := range r.groups {
		for _, s := range g.parts {
			p := s.part
			if p.rev == 0 || p.lost {
				if rev, ok := res.Claimed[p.key]; ok && p.rev == 0 && !p.handing {
					p.rev, p.renewed = rev, started
					r.log.Info("partition claimed", "stream", s.cfg.Stream, "consumer", s.cfg.Consumer, "partition", p.k)
					r.pull(s)
				}
				continue
			}
			switch rev, ok := res.Renewed[p.key]; {
			case ok:
				p.rev, p.renewed = rev, started
				r.m.LeaseRenewals.WithLabelValues(name, s.cfg.Stream, "renewed").Inc()
			case res.Lost[p.key]:
				r.m.LeaseRenewals.WithLabelValues(name, s.cfg.Stream, "lost").Inc()
				s.handOver(ctx, true, "the lease expired and another instance holds it")
			case res.Failed[p.key] != nil:
				r.m.LeaseRenewals.WithLabelValues(name, s.cfg.Stream, "failed").Inc()
				if ttl := g.cfg.LeaseTTL; started.Sub(p.renewed) >= ttl-ttl/10 {
					s.handOver(ctx, true, "the lease could not be renewed within lease_ttl: "+res.Failed[p.key].Error())
				} else {
					r.log.Warn("lease renewal failed; trying again", "stream", s.cfg.Stream, "partition", p.k, "error", res.Failed[p.key])
				}
			}
		}
		share := res.Shares[gi]
		if share < 0 || !res.Uneven[gi] {
			continue
		}
		var mine []*streamWriter
		for _, s := range g.parts {
			if s.part.rev != 0 && !s.part.handing {
				mine = append(mine, s)
			}
		}
		// Beyond the share: hand over the highest partitions.
		for i := len(mine) - 1; i >= share; i-- {
			mine[i].handOver(ctx, false, "rebalancing: "+strconv.Itoa(res.Members)+" instances share "+strconv.Itoa(len(g.parts))+" partitions")
		}
	}
	r.holdings()
}

// warnIgnored warns once about each entry a round did not believe, as
// long as the entry stays as it was.
func (r *runner) warnIgnored(res *lease.RoundResult) {
	l := r.leases
	seen := make(map[string]uint64, len(res.Ignored))
	for _, ig := range res.Ignored {
		seen[ig.Key] = ig.Rev
		if rev, ok := l.warned[ig.Key]; ok && rev == ig.Rev {
			continue
		}
		r.log.Warn("state bucket: an entry no live instance wrote is ignored; "+ig.Does,
			"key", ig.Key, "revision", ig.Rev, "found", ig.Found, "value", lease.ValueStart(ig.Value))
	}
	if res.Listed {
		// Every entry there is was listed: forget those that went.
		l.warned = seen
		return
	}
	for k, rev := range seen {
		l.warned[k] = rev
	}
}

// leave releases, on the way out, the membership and every lease this
// instance holds, so that the others take its partitions at once instead of
// after lease_ttl. Partitions whose messages are all acked are unpinned
// first; any other is left to the pin's own timeout.
func (r *runner) leave(ctx context.Context, clean bool) {
	l := r.leases
	if l == nil {
		return
	}
	r.stoppingNow = true
	for _, s := range r.streams {
		p := s.part
		if p == nil || p.rev == 0 || p.lost {
			continue
		}
		if !clean {
			// Messages are held still: the next holder gets them after
			// AckWait, once the pin moved.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lease.OpTimeout)
			err := l.Release(rctx, p.key, p.rev)
			cancel()
			if err != nil {
				r.log.Warn("lease release failed; it expires by itself", "stream", s.cfg.Stream, "partition", p.k, "error", err)
			}
			continue
		}
		if !p.handing {
			p.since = time.Now()
		}
		s.released(r.release(ctx, s.leaseRef()))
	}
	if l.memberRev != 0 {
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lease.OpTimeout)
		_ = l.Release(mctx, l.MemberKey(), l.memberRev)
		cancel()
	}
}
