package exporter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nuid"

	"github.com/jetlake/jetlake/exporter/lease"
	"github.com/jetlake/jetlake/exporter/statekey"
)

// leaser holds this instance's membership and partition leases in the
// state bucket. A round, every third of the lease TTL, renews what the
// instance holds, lists the live instances and the leases, and claims free
// partitions up to the instance's share; the runner hands over what is
// beyond it. Rounds run beside the loop, one at a time; the loop applies
// their results and owns every field but store, holder and value.
//
// What a round reads back is input, not truth: anyone who can write to the
// bucket can leave a key without a TTL or with a value no instance wrote.
// An entry whose value is not a holder, or that nobody wrote for longer
// than staleAfter, blocks nothing: such a membership key counts as no
// instance, and such a lease is taken over with its revision.
type leaser struct {
	store     *lease.Store
	holder    lease.Holder
	value     []byte
	memberKey string
	ttl       time.Duration // the shortest lease_ttl of the partitioned entries
	memberRev uint64        // revision of the membership key; 0 when not written
	busy      bool          // a round is under way
	last      time.Time     // when the last round started
	// warned holds the entries a round did not believe and the loop
	// warned about, key → revision, so that each is reported once.
	warned map[string]uint64
}

// newLeaser returns a leaser for a new instance of connector.
func newLeaser(store *lease.Store, connector string, ttl time.Duration) *leaser {
	h := lease.NewHolder(nuid.Next())
	return &leaser{store: store, holder: h, value: leaseValue(h), memberKey: statekey.Members(connector) + h.Instance, ttl: ttl, warned: map[string]uint64{}}
}

// release ends a lease this instance holds; one that is not its own any
// more is not an error.
func (l *leaser) release(ctx context.Context, key string, rev uint64) error {
	err := l.store.Release(ctx, key, rev)
	if errors.Is(err, lease.ErrLost) {
		return nil
	}
	return err
}

// groupSnap is what a round needs of a partitioned entry.
type groupSnap struct {
	prefix     string
	partitions int
	ttl        time.Duration
	held       map[int]bool // held by this instance, renewed or not
	busy       map[int]bool // being handed over: never claimed back meanwhile
}

// roundResult is what a lease round found and did.
type roundResult struct {
	memberRev uint64
	renewed   map[string]uint64 // lease key → new revision
	lost      map[string]bool
	failed    map[string]error
	claimed   map[string]uint64
	shares    []int // per group; -1 when the listing failed
	// uneven, per group: the live instances' holdings differ by more than
	// one, so those beyond their share hand partitions over. Within one,
	// nobody moves: a share that shifts when an instance joins or leaves
	// does not cost a handover by itself.
	uneven  []bool
	members int
	// ignored are the entries the round did not believe; listed, that
	// every listing succeeded, so that ignored names all there are.
	ignored []ignoredEntry
	listed  bool
}

// ignoredEntry is a lease or membership key a round did not believe.
type ignoredEntry struct {
	key   string
	rev   uint64
	value []byte
	found string // what the key holds
	does  string // what the round makes of it
}

// staleAfter is how long after its last write a lease or membership key
// written with TTL ttl counts as expired, whatever TTL it carries: twice
// ttl. A key written as jetlake writes it is gone after ttl; one that is
// still there later was written without a TTL or with a longer one, by
// hand or by a forger, and its holder stopped renewing it long ago.
func staleAfter(ttl time.Duration) time.Duration { return 2 * ttl }

// bucketNow is the state bucket's clock as far as entries show it: the
// latest time one of them was written, or at if that is later. A round
// lists the membership keys after writing its own, so this is the server's
// time of that write. The server's clock, not this host's, judges how old
// an entry is: a host whose clock runs ahead takes no live lease for a
// stale one.
func bucketNow(at time.Time, entries []lease.Entry) time.Time {
	for _, e := range entries {
		if e.Created.After(at) {
			at = e.Created
		}
	}
	return at
}

// liveMembers returns the sorted ids of the instances that the membership
// entries under prefix name, self among them, and the entries it does not
// believe: a value that is not a holder or names another instance than
// its key, or a last write older than staleAfter(ttl) at now, the
// bucket's clock.
func liveMembers(entries []lease.Entry, prefix, self string, now time.Time, ttl time.Duration) ([]string, []ignoredEntry) {
	ids := []string{self}
	var ignored []ignoredEntry
	for _, e := range entries {
		id := strings.TrimPrefix(e.Key, prefix)
		if id == self {
			continue
		}
		const does = "it counts as no instance"
		h, err := lease.ParseHolder(e.Value)
		switch {
		case err != nil:
			ignored = append(ignored, ignoredEntry{key: e.Key, rev: e.Revision, value: e.Value, found: "not a holder: " + err.Error(), does: does})
		case h.Instance != id:
			ignored = append(ignored, ignoredEntry{key: e.Key, rev: e.Revision, value: e.Value, found: fmt.Sprintf("a holder naming instance %q, not the key's %q", h.Instance, id), does: does})
		case now.Sub(e.Created) > staleAfter(ttl):
			ignored = append(ignored, ignoredEntry{key: e.Key, rev: e.Revision, value: e.Value, found: notRenewed(h, e, now), does: does})
		default:
			ids = append(ids, id)
		}
	}
	return sortedIDs(ids, self), ignored
}

// notRenewed says what a stale entry is.
func notRenewed(h lease.Holder, e lease.Entry, now time.Time) string {
	return fmt.Sprintf("instance %s (pid %d on %s), not renewed since %s (%s ago, more than twice lease_ttl: written without a TTL or with a longer one)",
		h.Instance, h.PID, h.Host, e.Created.UTC().Format(time.RFC3339), now.Sub(e.Created).Round(time.Second))
}

// leaseOpTimeout bounds one lease operation.
const leaseOpTimeout = 5 * time.Second

// round renews, lists and claims; see leaser. It only reads the leaser's
// fields that never change.
func (l *leaser) round(ctx context.Context, memberRev uint64, held []heldLease, groups []groupSnap) *roundResult {
	res := &roundResult{renewed: map[string]uint64{}, lost: map[string]bool{}, failed: map[string]error{}, claimed: map[string]uint64{}}
	res.memberRev = l.renewMember(ctx, memberRev)
	l.renewHeld(ctx, held, groups, res)
	var members []lease.Entry
	memberPrefix := strings.TrimSuffix(l.memberKey, l.holder.Instance)
	err := l.op(ctx, func(ctx context.Context) (err error) {
		members, err = l.store.List(ctx, memberPrefix+">")
		return err
	})
	res.shares = make([]int, len(groups))
	res.uneven = make([]bool, len(groups))
	if err != nil {
		for i := range res.shares {
			res.shares[i] = -1
		}
		return res
	}
	res.listed = true
	now := bucketNow(time.Time{}, members)
	ids, ignored := liveMembers(members, memberPrefix, l.holder.Instance, now, l.ttl)
	res.ignored = append(res.ignored, ignored...)
	res.members = len(ids)
	for i, g := range groups {
		share := Share(g.partitions, ids, l.holder.Instance)
		res.shares[i] = share
		var leases []lease.Entry
		err := l.op(ctx, func(ctx context.Context) (err error) {
			leases, err = l.store.List(ctx, g.prefix+">")
			return err
		})
		if err != nil {
			res.shares[i] = -1
			res.listed = false
			continue
		}
		ls := readLeases(g, leases, ids, bucketNow(now, leases), res)
		res.uneven[i] = ls.uneven(g.partitions)
		l.claimShare(ctx, g, ls, share, res)
	}
	return res
}

// op runs one lease operation, bounded by leaseOpTimeout.
func (l *leaser) op(ctx context.Context, f func(ctx context.Context) error) error {
	octx, cancel := context.WithTimeout(ctx, leaseOpTimeout)
	defer cancel()
	return f(octx)
}

// renewMember renews this instance's membership entry at memberRev (0:
// none yet), or claims it anew when it was lost or never held. It returns
// the entry's revision, 0 when the claim failed too.
func (l *leaser) renewMember(ctx context.Context, memberRev uint64) uint64 {
	rev := memberRev
	if memberRev != 0 {
		err := l.op(ctx, func(ctx context.Context) (err error) {
			rev, err = l.store.Renew(ctx, l.memberKey, memberRev, l.value, l.ttl)
			return err
		})
		if errors.Is(err, lease.ErrLost) {
			rev = 0
		} else if err != nil {
			rev = memberRev
		}
	}
	if rev == 0 {
		_ = l.op(ctx, func(ctx context.Context) (err error) {
			rev, err = l.store.Claim(ctx, l.memberKey, l.value, l.ttl)
			return err
		})
	}
	return rev
}

// renewHeld renews every lease held, each with its group's ttl, into
// res: renewed, lost (another holds it now) or failed.
func (l *leaser) renewHeld(ctx context.Context, held []heldLease, groups []groupSnap, res *roundResult) {
	ttlOf := map[string]time.Duration{}
	for _, g := range groups {
		ttlOf[g.prefix] = g.ttl
	}
	for _, h := range held {
		ttl := ttlOf[h.key[:strings.LastIndexByte(h.key, '.')+1]]
		err := l.op(ctx, func(ctx context.Context) error {
			rev, err := l.store.Renew(ctx, h.key, h.rev, l.value, ttl)
			res.renewed[h.key] = rev
			return err
		})
		switch {
		case errors.Is(err, lease.ErrLost):
			delete(res.renewed, h.key)
			res.lost[h.key] = true
		case err != nil:
			delete(res.renewed, h.key)
			res.failed[h.key] = err
		}
	}
}

// groupLeases is what the leases of one partitioned entry say.
type groupLeases struct {
	taken   map[int]bool   // partitions a live holder has
	dead    map[int]uint64 // partition → revision of a lease taken as free
	holding map[string]int // live member → partitions it holds
}

// uneven reports whether two live members' holdings differ by more than
// one partition.
func (gl *groupLeases) uneven(partitions int) bool {
	lo, hi := partitions, 0
	for _, n := range gl.holding {
		lo, hi = min(lo, n), max(hi, n)
	}
	return hi-lo > 1
}

// readLeases reads the leases of g, listed at now, among the live members
// ids. Entries that are no partition's lease, not a holder's, or stale are
// ignored into res; a forged or stale one leaves its partition free, to be
// taken over by revision.
func readLeases(g groupSnap, leases []lease.Entry, ids []string, now time.Time, res *roundResult) *groupLeases {
	gl := &groupLeases{taken: map[int]bool{}, dead: map[int]uint64{}, holding: make(map[string]int, len(ids))}
	for _, id := range ids {
		gl.holding[id] = 0
	}
	for _, e := range leases {
		k, ok := statekey.LeasePartition(e.Key, g.prefix, g.partitions)
		if !ok {
			// Another name for a partition ("01", "+1") would block it,
			// and a takeover of its revision never succeeds: it is no
			// partition's lease.
			res.ignored = append(res.ignored, ignoredEntry{key: e.Key, rev: e.Revision, value: e.Value,
				found: "a key that names none of the " + strconv.Itoa(g.partitions) + " partitions", does: "it is no partition's lease"})
			continue
		}
		h, err := lease.ParseHolder(e.Value)
		switch {
		case err != nil:
			gl.dead[k] = e.Revision
			res.ignored = append(res.ignored, ignoredEntry{key: e.Key, rev: e.Revision, value: e.Value, found: "not a holder: " + err.Error(),
				does: "its partition counts as free"})
		case now.Sub(e.Created) > staleAfter(g.ttl):
			gl.dead[k] = e.Revision
			res.ignored = append(res.ignored, ignoredEntry{key: e.Key, rev: e.Revision, value: e.Value, found: notRenewed(h, e, now),
				does: "the lease counts as expired"})
		default:
			gl.taken[k] = true
			if _, live := gl.holding[h.Instance]; live {
				gl.holding[h.Instance]++
			}
		}
	}
	return gl
}

// claimShare claims free partitions of g, in random order, until this
// instance holds its share: a lease judged dead is taken over by its
// revision, so that whoever renewed or took it meanwhile keeps it.
func (l *leaser) claimShare(ctx context.Context, g groupSnap, gl *groupLeases, share int, res *roundResult) {
	mine := 0
	for k := range g.held {
		if !res.lost[statekey.LeaseAt(g.prefix, k)] {
			mine++
		}
	}
	var free []int
	for k := range g.partitions {
		if !gl.taken[k] && !g.held[k] && !g.busy[k] {
			free = append(free, k)
		}
	}
	rand.Shuffle(len(free), func(a, b int) { free[a], free[b] = free[b], free[a] })
	for _, k := range free {
		if mine >= share {
			break
		}
		key := statekey.LeaseAt(g.prefix, k)
		var rev uint64
		err := l.op(ctx, func(ctx context.Context) (err error) {
			if deadRev, ok := gl.dead[k]; ok {
				rev, err = l.store.TakeOver(ctx, key, deadRev, l.value, g.ttl)
			} else {
				rev, err = l.store.Claim(ctx, key, l.value, g.ttl)
			}
			return err
		})
		if err == nil {
			res.claimed[key] = rev
			mine++
		}
	}
}

// Share is how many of n partitions the instance self holds when the
// instances ids (sorted, self among them) share them: n/len(ids), and one
// more for the first n%len(ids) of them, so that shares differ by at most
// one and add up to n.
func Share(n int, ids []string, self string) int {
	rank := 0
	for i, id := range ids {
		if id == self {
			rank = i
		}
	}
	share := n / len(ids)
	if rank < n%len(ids) {
		share++
	}
	return share
}

// leaseRound starts a round when one is due.
func (r *runner) leaseRound(ctx context.Context, now time.Time) {
	l := r.e.leases
	if l == nil || l.busy || now.Sub(l.last) < l.ttl/3 {
		return
	}
	l.busy, l.last = true, now
	held, groups := r.partitionsHeld(), r.groupSnaps()
	memberRev := l.memberRev
	r.beside(func() func() {
		res := l.round(ctx, memberRev, held, groups)
		return func() {
			l.busy = false
			r.applyRound(res, now)
		}
	})
}

// groupSnaps describes the partitioned entries for a round.
func (r *runner) groupSnaps() []groupSnap {
	out := make([]groupSnap, len(r.groups))
	for i, g := range r.groups {
		out[i] = groupSnap{prefix: g.prefix, partitions: len(g.parts), ttl: g.cfg.LeaseTTL, held: map[int]bool{}, busy: map[int]bool{}}
		for _, s := range g.parts {
			switch p := s.part; {
			case p.handing:
				out[i].busy[p.k] = true
			case p.rev != 0:
				out[i].held[p.k] = true
			}
		}
	}
	return out
}

// applyRound applies a round that started at started: renewed leases
// last from then, lost ones are handed over without release, claimed ones
// are pulled, and partitions beyond the instance's share are handed over.
func (r *runner) applyRound(res *roundResult, started time.Time) {
	l := r.e.leases
	l.memberRev = res.memberRev
	r.warnIgnored(res)
	name := r.e.cfg.Name
	for gi, g := range r.groups {
		for _, s := range g.parts {
			p := s.part
			if p.rev == 0 || p.lost {
				if rev, ok := res.claimed[p.key]; ok && p.rev == 0 && !p.handing {
					p.rev, p.renewed = rev, started
					r.log.Info("partition claimed", "stream", s.cfg.Stream, "consumer", s.cfg.Consumer, "partition", p.k)
					r.pull(s)
				}
				continue
			}
			switch rev, ok := res.renewed[p.key]; {
			case ok:
				p.rev, p.renewed = rev, started
				r.e.m.leaseRenewals.WithLabelValues(name, s.cfg.Stream, "renewed").Inc()
			case res.lost[p.key]:
				r.e.m.leaseRenewals.WithLabelValues(name, s.cfg.Stream, "lost").Inc()
				r.handOver(s, true, "the lease expired and another instance holds it")
			case res.failed[p.key] != nil:
				r.e.m.leaseRenewals.WithLabelValues(name, s.cfg.Stream, "failed").Inc()
				if ttl := g.cfg.LeaseTTL; started.Sub(p.renewed) >= ttl-ttl/10 {
					r.handOver(s, true, "the lease could not be renewed within lease_ttl: "+res.failed[p.key].Error())
				} else {
					r.log.Warn("lease renewal failed; trying again", "stream", s.cfg.Stream, "partition", p.k, "error", res.failed[p.key])
				}
			}
		}
		share := res.shares[gi]
		if share < 0 || !res.uneven[gi] {
			continue
		}
		var mine []*streamState
		for _, s := range g.parts {
			if s.part.rev != 0 && !s.part.handing {
				mine = append(mine, s)
			}
		}
		// Beyond the share: hand over the highest partitions.
		for i := len(mine) - 1; i >= share; i-- {
			r.handOver(mine[i], false, "rebalancing: "+strconv.Itoa(res.members)+" instances share "+strconv.Itoa(len(g.parts))+" partitions")
		}
	}
	r.holdings()
}

// warnIgnored warns once about each entry a round did not believe, as
// long as the entry stays as it was.
func (r *runner) warnIgnored(res *roundResult) {
	l := r.e.leases
	seen := make(map[string]uint64, len(res.ignored))
	for _, ig := range res.ignored {
		seen[ig.key] = ig.rev
		if rev, ok := l.warned[ig.key]; ok && rev == ig.rev {
			continue
		}
		r.log.Warn("state bucket: an entry no live instance wrote is ignored; "+ig.does,
			"key", ig.key, "revision", ig.rev, "found", ig.found, "value", lease.ValueStart(ig.value))
	}
	if res.listed {
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
	l := r.e.leases
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
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseOpTimeout)
			err := l.release(rctx, p.key, p.rev)
			cancel()
			if err != nil {
				r.log.Warn("lease release failed; it expires by itself", "stream", s.cfg.Stream, "partition", p.k, "error", err)
			}
			continue
		}
		if !p.handing {
			p.since = time.Now()
		}
		r.released(s, r.e.release(ctx, s.leaseRef()))
	}
	if l.memberRev != 0 {
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseOpTimeout)
		_ = l.release(mctx, l.memberKey, l.memberRev)
		cancel()
	}
}
