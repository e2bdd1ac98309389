package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jetlake/jetlake/internal/progress"
)

// Record is what the state bucket keeps about one stream and
// consumer, beside the intents: every sequence up to Floor is in a stored
// object or loss marker (or is not in the consumer's scope), and so is
// every sequence of Done. Every stored sequence above Floor that Done does
// not name is in an intent: intents are forgotten only once the recorded
// floor passes them. At start the exporter compares the record with the
// stream, and what the stream no longer holds and the record does not
// name is lost.
type Record struct {
	StreamCreated time.Time     `json:"stream_created"`
	Floor         uint64        `json:"floor"`
	Done          progress.Seqs `json:"done"`
	Updated       time.Time     `json:"updated"`
}

// claims returns the highest sequence the record says is exported.
func (r *Record) Claims() uint64 { return max(r.Floor, r.Done.Last()) }

// MaxRecordDone bounds the encoded Done ranges a record keeps; beyond it
// only the floor is kept, and the intents name what is stored above it.
const MaxRecordDone = 256 << 10

// ErrNoRecord is returned by an intentStore's Get for a key that is not
// there.
var ErrNoRecord = errors.New("no export record")

// LoadRecord returns the export record at key and its revision, or a nil
// record and revision 0 when there is none. A value that is no record
// (written by hand, or damaged) is an *unreadableRecordError, with the
// revision, so that the next write replaces it.
func LoadRecord(ctx context.Context, st Store, key string) (*Record, uint64, error) {
	value, rev, err := st.Get(ctx, key)
	if errors.Is(err, ErrNoRecord) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("export record %s: %w", key, err)
	}
	var rec Record
	if err := json.Unmarshal(value, &rec); err != nil {
		return nil, rev, &UnreadableRecordError{Key: key, Err: err}
	}
	return &rec, rev, nil
}

// UnreadableRecordError reports a state-bucket value that is no export
// record.
type UnreadableRecordError struct {
	Key string
	Err error
}

func (e *UnreadableRecordError) Error() string {
	return fmt.Sprintf("export record %s can not be read: %v", e.Key, e.Err)
}

func (e *UnreadableRecordError) Unwrap() error { return e.Err }

// LastSeqFunc returns the stream's last sequence: no record may claim a
// sequence past it.
type LastSeqFunc func(ctx context.Context) (uint64, error)

// UntrustedRecordError reports a stored export record that claims
// sequences the stream never had: saveRecord replaced it with its own.
type UntrustedRecordError struct {
	Key     string
	Claims  uint64 // the highest sequence it claimed
	LastSeq uint64 // the stream's last sequence
}

func (e *UntrustedRecordError) Error() string {
	return fmt.Sprintf("export record %s claimed sequences up to %d, past the stream's last sequence %d: it was not written by jetlake for this stream and was replaced", e.Key, e.Claims, e.LastSeq)
}

// SaveRecord stores rec at key, merged with what is there: another
// instance (the one pinned before, or after) may have written a higher
// floor, and what either says is exported is. A stored record that claims
// more than rec is checked against the stream's last sequence first
// (lastSeq): one that claims sequences the stream never had is not merged
// but replaced, and reported in untrusted. It returns the floor stored.
func SaveRecord(ctx context.Context, st Store, key string, rec Record, lastSeq LastSeqFunc) (floor uint64, untrusted *UntrustedRecordError, err error) {
	for attempt := 0; ; attempt++ {
		cur, rev, err := LoadRecord(ctx, st, key)
		var bad *UnreadableRecordError
		if err != nil && !errors.As(err, &bad) {
			return 0, nil, err
		}
		out := rec
		if cur != nil && cur.StreamCreated.Equal(rec.StreamCreated) {
			if cur.Claims() > rec.Claims() {
				last, err := lastSeq(ctx)
				if err != nil {
					return 0, nil, fmt.Errorf("export record %s: the stream's last sequence: %w", key, err)
				}
				if cur.Claims() > last {
					untrusted = &UntrustedRecordError{Key: key, Claims: cur.Claims(), LastSeq: last}
					cur = nil
				}
			}
			if cur != nil {
				out = MergeRecords(rec, *cur)
			}
		}
		value, err := json.Marshal(&out)
		if err != nil {
			return 0, nil, err
		}
		if len(value) > MaxRecordDone {
			out.Done = progress.Seqs{}
			if value, err = json.Marshal(&out); err != nil {
				return 0, nil, err
			}
		}
		_, err = st.Update(ctx, key, value, rev)
		if err == nil {
			return out.Floor, untrusted, nil
		}
		if !errors.Is(err, ErrRecordChanged) || attempt == 4 {
			return 0, nil, fmt.Errorf("export record %s: %w", key, err)
		}
	}
}

// ErrRecordChanged is returned by an intentStore's Update when the key's
// revision is not the one given: another writer came first.
var ErrRecordChanged = errors.New("export record changed meanwhile")

// MergeRecords returns what both records say is exported: the higher floor,
// and the union of the done ranges above it.
func MergeRecords(a, b Record) Record {
	var done progress.Set
	done.AddAll(a.Done.Ranges())
	done.AddAll(b.Done.Ranges())
	out := Record{StreamCreated: a.StreamCreated, Floor: done.Absorb(max(a.Floor, b.Floor)), Updated: a.Updated}
	out.Done = progress.SeqsOf(done.Runs())
	return out
}

// LedgerRecord returns the export record of l, a ledger of the stream
// created at created. The record holds a copy of l's done ranges: it is
// taken on the writer's loop and written beside it while l changes in
// place.
func LedgerRecord(l *progress.Ledger, created, now time.Time) Record {
	done := slices.Clone(l.Done())
	return Record{StreamCreated: created, Floor: l.Floor(), Done: progress.SeqsOf(done), Updated: now.UTC()}
}

// Belief is what a record read back for a stream is worth.
type Belief int

const (
	// Absent: there is no record.
	Absent Belief = iota
	// Believed: the record is of this stream and claims nothing it never
	// had.
	Believed
	// Forged: the record claims sequences past the stream's last. No
	// sequence past the last was ever delivered, so no process exported
	// it: jetlake did not write the record for this stream, and none of
	// it is believed.
	Forged
	// Earlier: the record is of an earlier stream of the same name.
	Earlier
)

// Judge says what rec, read back for the stream created at created whose
// last sequence is lastSeq (read after the record), is worth.
func Judge(rec *Record, created time.Time, lastSeq uint64) Belief {
	switch {
	case rec == nil:
		return Absent
	case !rec.StreamCreated.Equal(created):
		return Earlier
	case rec.Claims() > lastSeq:
		return Forged
	}
	return Believed
}
