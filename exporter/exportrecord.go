package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jetlake/jetlake/exporter/progress"
)

// exportRecord is what the state bucket keeps about one stream and
// consumer, beside the intents: every sequence up to Floor is in a stored
// object or loss marker (or is not in the consumer's scope), and so is
// every sequence of Done. Every stored sequence above Floor that Done does
// not name is in an intent: intents are forgotten only once the recorded
// floor passes them. At start the exporter compares the record with the
// stream, and what the stream no longer holds and the record does not
// name is lost.
type exportRecord struct {
	StreamCreated time.Time     `json:"stream_created"`
	Floor         uint64        `json:"floor"`
	Done          progress.Seqs `json:"done"`
	Updated       time.Time     `json:"updated"`
}

// claims returns the highest sequence the record says is exported.
func (r *exportRecord) claims() uint64 { return max(r.Floor, r.Done.Last()) }

// maxRecordDone bounds the encoded Done ranges a record keeps; beyond it
// only the floor is kept, and the intents name what is stored above it.
const maxRecordDone = 256 << 10

// errNoRecord is returned by an intentStore's Get for a key that is not
// there.
var errNoRecord = errors.New("no export record")

// loadRecord returns the export record at key and its revision, or a nil
// record and revision 0 when there is none. A value that is no record
// (written by hand, or damaged) is an *unreadableRecordError, with the
// revision, so that the next write replaces it.
func loadRecord(ctx context.Context, st intentStore, key string) (*exportRecord, uint64, error) {
	value, rev, err := st.Get(ctx, key)
	if errors.Is(err, errNoRecord) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("export record %s: %w", key, err)
	}
	var rec exportRecord
	if err := json.Unmarshal(value, &rec); err != nil {
		return nil, rev, &unreadableRecordError{Key: key, Err: err}
	}
	return &rec, rev, nil
}

// unreadableRecordError reports a state-bucket value that is no export
// record.
type unreadableRecordError struct {
	Key string
	Err error
}

func (e *unreadableRecordError) Error() string {
	return fmt.Sprintf("export record %s can not be read: %v", e.Key, e.Err)
}

func (e *unreadableRecordError) Unwrap() error { return e.Err }

// lastSeqFunc returns the stream's last sequence: no record may claim a
// sequence past it.
type lastSeqFunc func(ctx context.Context) (uint64, error)

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

// saveRecord stores rec at key, merged with what is there: another
// instance (the one pinned before, or after) may have written a higher
// floor, and what either says is exported is. A stored record that claims
// more than rec is checked against the stream's last sequence first
// (lastSeq): one that claims sequences the stream never had is not merged
// but replaced, and reported in untrusted. It returns the floor stored.
func saveRecord(ctx context.Context, st intentStore, key string, rec exportRecord, lastSeq lastSeqFunc) (floor uint64, untrusted *UntrustedRecordError, err error) {
	for attempt := 0; ; attempt++ {
		cur, rev, err := loadRecord(ctx, st, key)
		var bad *unreadableRecordError
		if err != nil && !errors.As(err, &bad) {
			return 0, nil, err
		}
		out := rec
		if cur != nil && cur.StreamCreated.Equal(rec.StreamCreated) {
			if cur.claims() > rec.claims() {
				last, err := lastSeq(ctx)
				if err != nil {
					return 0, nil, fmt.Errorf("export record %s: the stream's last sequence: %w", key, err)
				}
				if cur.claims() > last {
					untrusted = &UntrustedRecordError{Key: key, Claims: cur.claims(), LastSeq: last}
					cur = nil
				}
			}
			if cur != nil {
				out = mergeRecords(rec, *cur)
			}
		}
		value, err := json.Marshal(&out)
		if err != nil {
			return 0, nil, err
		}
		if len(value) > maxRecordDone {
			out.Done = progress.Seqs{}
			if value, err = json.Marshal(&out); err != nil {
				return 0, nil, err
			}
		}
		_, err = st.Update(ctx, key, value, rev)
		if err == nil {
			return out.Floor, untrusted, nil
		}
		if !errors.Is(err, errRecordChanged) || attempt == 4 {
			return 0, nil, fmt.Errorf("export record %s: %w", key, err)
		}
	}
}

// errRecordChanged is returned by an intentStore's Update when the key's
// revision is not the one given: another writer came first.
var errRecordChanged = errors.New("export record changed meanwhile")

// mergeRecords returns what both records say is exported: the higher floor,
// and the union of the done ranges above it.
func mergeRecords(a, b exportRecord) exportRecord {
	var done progress.Set
	done.AddAll(a.Done.Ranges())
	done.AddAll(b.Done.Ranges())
	out := exportRecord{StreamCreated: a.StreamCreated, Floor: done.Absorb(max(a.Floor, b.Floor)), Updated: a.Updated}
	out.Done = progress.SeqsOf(done.Runs())
	return out
}

// ledgerRecord returns the export record of l, a ledger of the stream
// created at created.
func ledgerRecord(l *progress.Ledger, created, now time.Time) exportRecord {
	return exportRecord{StreamCreated: created, Floor: l.Floor(), Done: progress.SeqsOf(l.Done()), Updated: now.UTC()}
}
