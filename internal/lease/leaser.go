package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nuid"

	"github.com/jetlake/jetlake/internal/statekey"
)

// Leaser holds this instance's membership and partition leases in the
// state bucket. A round, every third of the lease TTL, renews what the
// instance holds, lists the live instances and the leases, and claims free
// partitions up to the instance's share; the runner hands over what is
// beyond it. A Leaser never changes once made: rounds may run beside the
// runner, one at a time, and the runner keeps what they change.
//
// What a round reads back is input, not truth: anyone who can write to the
// bucket can leave a key without a TTL or with a value no instance wrote.
// An entry whose value is not a holder, or that nobody wrote for longer
// than staleAfter, blocks nothing: such a membership key counts as no
// instance, and such a lease is taken over with its revision.
type Leaser struct {
	store     *Store
	holder    Holder
	value     []byte
	memberKey string
	ttl       time.Duration // the shortest lease_ttl of the partitioned entries
}

// NewLeaser returns a Leaser for a new instance of connector, whose
// membership key lives ttl.
func NewLeaser(store *Store, connector string, ttl time.Duration) *Leaser {
	h := NewHolder(nuid.Next())
	return &Leaser{store: store, holder: h, value: leaseValue(h), memberKey: statekey.Members(connector) + h.Instance, ttl: ttl}
}

// TTL is the shortest lease_ttl of the partitioned entries: the life of the
// membership key, and a third of it the time between rounds.
func (l *Leaser) TTL() time.Duration { return l.ttl }

// MemberKey is this instance's membership key.
func (l *Leaser) MemberKey() string { return l.memberKey }

// Release ends a lease this instance holds; one that is not its own any
// more is not an error.
func (l *Leaser) Release(ctx context.Context, key string, rev uint64) error {
	err := l.store.Release(ctx, key, rev)
	if errors.Is(err, ErrLost) {
		return nil
	}
	return err
}

// GroupSnap is what a round needs of a partitioned entry.
type GroupSnap struct {
	Prefix     string // of its lease keys
	Partitions int
	TTL        time.Duration
	Held       map[int]bool // held by this instance, renewed or not
	Busy       map[int]bool // being handed over: never claimed back meanwhile
}

// RoundResult is what a lease round found and did.
type RoundResult struct {
	MemberRev uint64
	Renewed   map[string]uint64 // lease key → new revision
	Lost      map[string]bool
	Failed    map[string]error
	Claimed   map[string]uint64
	Shares    []int // per group; -1 when the listing failed
	// Uneven, per group: the live instances' holdings differ by more than
	// one, so those beyond their share hand partitions over. Within one,
	// nobody moves: a share that shifts when an instance joins or leaves
	// does not cost a handover by itself.
	Uneven  []bool
	Members int
	// Ignored are the entries the round did not believe; Listed, that
	// every listing succeeded, so that Ignored names all there are.
	Ignored []Ignored
	Listed  bool
}

// Ignored is a lease or membership key a round did not believe.
type Ignored struct {
	Key   string
	Rev   uint64
	Value []byte
	Found string // what the key holds
	Does  string // what the round makes of it
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
func bucketNow(at time.Time, entries []Entry) time.Time {
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
func liveMembers(entries []Entry, prefix, self string, now time.Time, ttl time.Duration) ([]string, []Ignored) {
	ids := []string{self}
	var ignored []Ignored
	for _, e := range entries {
		id := strings.TrimPrefix(e.Key, prefix)
		if id == self {
			continue
		}
		const does = "it counts as no instance"
		h, err := ParseHolder(e.Value)
		switch {
		case err != nil:
			ignored = append(ignored, Ignored{Key: e.Key, Rev: e.Revision, Value: e.Value, Found: "not a holder: " + err.Error(), Does: does})
		case h.Instance != id:
			ignored = append(ignored, Ignored{Key: e.Key, Rev: e.Revision, Value: e.Value, Found: fmt.Sprintf("a holder naming instance %q, not the key's %q", h.Instance, id), Does: does})
		case now.Sub(e.Created) > staleAfter(ttl):
			ignored = append(ignored, Ignored{Key: e.Key, Rev: e.Revision, Value: e.Value, Found: notRenewed(h, e, now), Does: does})
		default:
			ids = append(ids, id)
		}
	}
	return sortedIDs(ids, self), ignored
}

// notRenewed says what a stale entry is.
func notRenewed(h Holder, e Entry, now time.Time) string {
	return fmt.Sprintf("instance %s (pid %d on %s), not renewed since %s (%s ago, more than twice lease_ttl: written without a TTL or with a longer one)",
		h.Instance, h.PID, h.Host, e.Created.UTC().Format(time.RFC3339), now.Sub(e.Created).Round(time.Second))
}

// OpTimeout bounds one lease operation.
const OpTimeout = 5 * time.Second

// Round renews the membership key at memberRev (0: none yet) and the
// leases held, lists the live instances and each group's leases, and
// claims free partitions up to this instance's share. It changes nothing
// of l: rounds may run beside the runner.
func (l *Leaser) Round(ctx context.Context, memberRev uint64, held []Held, groups []GroupSnap) *RoundResult {
	res := &RoundResult{Renewed: map[string]uint64{}, Lost: map[string]bool{}, Failed: map[string]error{}, Claimed: map[string]uint64{}}
	res.MemberRev = l.renewMember(ctx, memberRev)
	l.renewHeld(ctx, held, groups, res)
	var members []Entry
	memberPrefix := strings.TrimSuffix(l.memberKey, l.holder.Instance)
	err := l.op(ctx, func(ctx context.Context) (err error) {
		members, err = l.store.List(ctx, memberPrefix+">")
		return err
	})
	res.Shares = make([]int, len(groups))
	res.Uneven = make([]bool, len(groups))
	if err != nil {
		for i := range res.Shares {
			res.Shares[i] = -1
		}
		return res
	}
	res.Listed = true
	now := bucketNow(time.Time{}, members)
	ids, ignored := liveMembers(members, memberPrefix, l.holder.Instance, now, l.ttl)
	res.Ignored = append(res.Ignored, ignored...)
	res.Members = len(ids)
	for i, g := range groups {
		share := Share(g.Partitions, ids, l.holder.Instance)
		res.Shares[i] = share
		var leases []Entry
		err := l.op(ctx, func(ctx context.Context) (err error) {
			leases, err = l.store.List(ctx, g.Prefix+">")
			return err
		})
		if err != nil {
			res.Shares[i] = -1
			res.Listed = false
			continue
		}
		ls := readLeases(g, leases, ids, bucketNow(now, leases), res)
		res.Uneven[i] = ls.uneven(g.Partitions)
		l.claimShare(ctx, g, ls, share, res)
	}
	return res
}

// op runs one lease operation, bounded by OpTimeout.
func (l *Leaser) op(ctx context.Context, f func(ctx context.Context) error) error {
	octx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	return f(octx)
}

// renewMember renews this instance's membership entry at memberRev (0:
// none yet), or claims it anew when it was lost or never held. It returns
// the entry's revision, 0 when the claim failed too.
func (l *Leaser) renewMember(ctx context.Context, memberRev uint64) uint64 {
	rev := memberRev
	if memberRev != 0 {
		err := l.op(ctx, func(ctx context.Context) (err error) {
			rev, err = l.store.Renew(ctx, l.memberKey, memberRev, l.value, l.ttl)
			return err
		})
		if errors.Is(err, ErrLost) {
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
func (l *Leaser) renewHeld(ctx context.Context, held []Held, groups []GroupSnap, res *RoundResult) {
	ttlOf := map[string]time.Duration{}
	for _, g := range groups {
		ttlOf[g.Prefix] = g.TTL
	}
	for _, h := range held {
		ttl := ttlOf[h.Key[:strings.LastIndexByte(h.Key, '.')+1]]
		err := l.op(ctx, func(ctx context.Context) error {
			rev, err := l.store.Renew(ctx, h.Key, h.Rev, l.value, ttl)
			res.Renewed[h.Key] = rev
			return err
		})
		switch {
		case errors.Is(err, ErrLost):
			delete(res.Renewed, h.Key)
			res.Lost[h.Key] = true
		case err != nil:
			delete(res.Renewed, h.Key)
			res.Failed[h.Key] = err
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
func readLeases(g GroupSnap, leases []Entry, ids []string, now time.Time, res *RoundResult) *groupLeases {
	gl := &groupLeases{taken: map[int]bool{}, dead: map[int]uint64{}, holding: make(map[string]int, len(ids))}
	for _, id := range ids {
		gl.holding[id] = 0
	}
	for _, e := range leases {
		k, ok := statekey.LeasePartition(e.Key, g.Prefix, g.Partitions)
		if !ok {
			// Another name for a partition ("01", "+1") would block it,
			// and a takeover of its revision never succeeds: it is no
			// partition's lease.
			res.Ignored = append(res.Ignored, Ignored{Key: e.Key, Rev: e.Revision, Value: e.Value,
				Found: "a key that names none of the " + strconv.Itoa(g.Partitions) + " partitions", Does: "it is no partition's lease"})
			continue
		}
		h, err := ParseHolder(e.Value)
		switch {
		case err != nil:
			gl.dead[k] = e.Revision
			res.Ignored = append(res.Ignored, Ignored{Key: e.Key, Rev: e.Revision, Value: e.Value, Found: "not a holder: " + err.Error(),
				Does: "its partition counts as free"})
		case now.Sub(e.Created) > staleAfter(g.TTL):
			gl.dead[k] = e.Revision
			res.Ignored = append(res.Ignored, Ignored{Key: e.Key, Rev: e.Revision, Value: e.Value, Found: notRenewed(h, e, now),
				Does: "the lease counts as expired"})
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
func (l *Leaser) claimShare(ctx context.Context, g GroupSnap, gl *groupLeases, share int, res *RoundResult) {
	mine := 0
	for k := range g.Held {
		if !res.Lost[statekey.LeaseAt(g.Prefix, k)] {
			mine++
		}
	}
	var free []int
	for k := range g.Partitions {
		if !gl.taken[k] && !g.Held[k] && !g.Busy[k] {
			free = append(free, k)
		}
	}
	rand.Shuffle(len(free), func(a, b int) { free[a], free[b] = free[b], free[a] })
	for _, k := range free {
		if mine >= share {
			break
		}
		key := statekey.LeaseAt(g.Prefix, k)
		var rev uint64
		err := l.op(ctx, func(ctx context.Context) (err error) {
			if deadRev, ok := gl.dead[k]; ok {
				rev, err = l.store.TakeOver(ctx, key, deadRev, l.value, g.TTL)
			} else {
				rev, err = l.store.Claim(ctx, key, l.value, g.TTL)
			}
			return err
		})
		if err == nil {
			res.Claimed[key] = rev
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

// Held is a lease this instance holds, as a round renews it.
type Held struct {
	Key string
	Rev uint64
}

// leaseValue encodes a holder.
func leaseValue(h Holder) []byte {
	b, _ := json.Marshal(h)
	return b
}

// sortedIDs returns the instance ids of membership entries, sorted, with
// self among them.
func sortedIDs(ids []string, self string) []string {
	if !slices.Contains(ids, self) {
		ids = append(ids, self)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
