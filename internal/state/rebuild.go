package state

import (
	"time"

	"github.com/jetlake/jetlake/internal/progress"
)

// When the export record is missing, or claims what nothing else shows, it
// is rebuilt from the lake: the lake is the record of last resort. What the
// lake holds of a stream (its data objects, rejected objects and loss
// markers, as ranges) and the consumer are the evidence.

// Base returns the sequence up to which every sequence is exported or out
// of scope, by lake, what the lake holds of the stream (sorted, disjoint
// ranges): the sequences below the lowest one it holds were never in the
// connector's scope (it started later, with deliver_policy "new" or after
// the stream had removed them) or left the lake with the oldest objects.
// Above it, the lake decides, not the consumer's ack floor: a purge moves
// the ack floor past what it removed, exported or not. A consumer that is
// there (found) and whose ack floor is lower still holds the sequences
// between unacked: the batches in flight when the connector's first object
// was stored. Without a lake, the ack floor is all there is.
func Base(ackFloor uint64, found bool, lake []progress.Range) uint64 {
	switch {
	case len(lake) == 0:
		return ackFloor
	case found:
		return min(ackFloor, lake[0].First-1)
	}
	return lake[0].First - 1
}

// evidence returns the sequences the consumer and the lake show exported:
// every sequence up to base, and those of lake.
func evidence(base uint64, lake []progress.Range) progress.Set {
	var shown progress.Set
	if base > 0 {
		shown.Add(progress.Range{First: 1, Last: base})
	}
	shown.AddAll(lake)
	return shown
}

// claimed returns the sequences rec says are exported, as sorted ranges.
func claimed(rec *Record) []progress.Range {
	var c progress.Set
	if rec.Floor > 0 {
		c.Add(progress.Range{First: 1, Last: rec.Floor})
	}
	c.AddAll(rec.Done.Ranges())
	return c.Runs()
}

// Unconfirmed returns the sequences rec claims that neither base (see
// Base) nor lake (what the lake holds of the stream, sorted and disjoint
// ranges) show exported. For a consumer that sees the whole
// stream a record jetlake wrote has none: its floor and done ranges pass
// only sequences stored in an object or a loss marker. A filtered
// consumer's record passes the other subjects' sequences too.
func Unconfirmed(rec *Record, base uint64, lake []progress.Range) []progress.Range {
	shown := evidence(base, lake)
	var out []progress.Range
	for _, r := range claimed(rec) {
		out = append(out, shown.Outside(r)...)
	}
	return out
}

// Rebuilt returns the export record of the stream created at created that
// the evidence supports: every sequence up to base (see Base) and those of
// lake, sorted and disjoint ranges. When keep is not nil, what it claims up to cut is kept too: the
// part of a filtered consumer's record that the lake and the stream do not
// contradict.
func Rebuilt(created time.Time, base uint64, lake []progress.Range, keep *Record, cut uint64, now time.Time) Record {
	shown := evidence(base, lake)
	if keep != nil {
		var kept []progress.Range
		for _, r := range claimed(keep) {
			if r.First > cut {
				break
			}
			kept = append(kept, progress.Range{First: r.First, Last: min(r.Last, cut)})
		}
		shown.AddAll(kept)
	}
	floor := shown.Absorb(base)
	return Record{StreamCreated: created, Floor: floor, Done: progress.SeqsOf(shown.Runs()), Updated: now.UTC()}
}

// Merged returns what rec and more say together: the floor and done
// ranges of both. more is believed as rec is: both must be of the same
// stream.
func Merged(floor uint64, done []progress.Range, more *Record) (uint64, []progress.Range) {
	var d progress.Set
	d.AddAll(done)
	d.AddAll(more.Done.Ranges())
	floor = d.Absorb(max(floor, more.Floor))
	return floor, d.Runs()
}
