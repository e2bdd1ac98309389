// Package lease keeps leases on the keys of a JetStream key-value bucket.
//
// A lease is a key whose value names its holder. It is taken with a create
// that fails when the key exists, renewed with an update that names the
// revision the holder last wrote, and released with a delete that names it
// too: whoever loses a race learns it from the server, never from a clock.
// Every write carries a per-message TTL, so the lease of a holder that
// stops renewing disappears by itself and can be taken again.
//
// What a bucket holds is not always what a Store wrote: a key written by
// hand without a TTL, or with a value no holder wrote, never disappears by
// itself. A caller that judges such an entry dead (by its value, or by how
// long ago it was written: Entry.Created) takes it over with TakeOver,
// which names the revision it judged, so that a holder that renewed it
// meanwhile keeps it.
package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrHeld is returned by Claim when another holder has the lease.
var ErrHeld = errors.New("lease: held by another")

// ErrLost is returned by Renew and Release when the lease is no longer the
// caller's: it expired, or another holder took it after that.
var ErrLost = errors.New("lease: lost")

// Store takes, renews and releases leases in one bucket.
type Store struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	prefix string // the subject prefix of the bucket's keys
}

// Open returns a Store on bucket, which must exist. It lets the bucket's
// stream take per-message TTLs when it does not yet (a setting the server
// lets a stream gain but never lose).
func Open(ctx context.Context, js jetstream.JetStream, bucket string) (*Store, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("lease: bucket %s: %w", bucket, err)
	}
	stream, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return nil, fmt.Errorf("lease: bucket %s: %w", bucket, err)
	}
	if cfg := stream.CachedInfo().Config; !cfg.AllowMsgTTL {
		cfg.AllowMsgTTL = true
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			return nil, fmt.Errorf("lease: bucket %s: allow per-key TTLs: %w", bucket, err)
		}
	}
	return &Store{js: js, kv: kv, prefix: "$KV." + bucket + "."}, nil
}

// Claim takes the lease on key for ttl, with value naming the holder, and
// returns its revision. It returns ErrHeld when the key exists.
func (s *Store) Claim(ctx context.Context, key string, value []byte, ttl time.Duration) (uint64, error) {
	rev, err := s.kv.Create(ctx, key, value, jetstream.KeyTTL(ttl))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, ErrHeld
	}
	if err != nil {
		return 0, fmt.Errorf("lease: claim %s: %w", key, err)
	}
	return rev, nil
}

// TakeOver takes the lease on key, whose last revision, as the caller
// found it, is rev, but which the caller judges dead, and returns its new
// revision. It returns ErrHeld when rev is not the key's last revision any
// more: its holder renewed it, or another took it over first.
func (s *Store) TakeOver(ctx context.Context, key string, rev uint64, value []byte, ttl time.Duration) (uint64, error) {
	ack, err := s.js.Publish(ctx, s.prefix+key, value,
		jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(ttl))
	if wrongRevision(err) {
		return 0, ErrHeld
	}
	if err != nil {
		return 0, fmt.Errorf("lease: take over %s: %w", key, err)
	}
	return ack.Sequence, nil
}

// Renew extends the lease on key, last written at revision rev, by ttl
// from now and returns its new revision. It returns ErrLost when rev is
// not the key's last revision.
func (s *Store) Renew(ctx context.Context, key string, rev uint64, value []byte, ttl time.Duration) (uint64, error) {
	ack, err := s.js.Publish(ctx, s.prefix+key, value,
		jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(ttl))
	if wrongRevision(err) {
		return 0, ErrLost
	}
	if err != nil {
		return 0, fmt.Errorf("lease: renew %s: %w", key, err)
	}
	return ack.Sequence, nil
}

// Release ends the lease on key, last written at revision rev, so that
// another may claim it at once. It returns ErrLost when rev is not the
// key's last revision: the lease was not the caller's any more.
func (s *Store) Release(ctx context.Context, key string, rev uint64) error {
	err := s.kv.Delete(ctx, key, jetstream.LastRevision(rev))
	if wrongRevision(err) {
		return ErrLost
	}
	if err != nil {
		return fmt.Errorf("lease: release %s: %w", key, err)
	}
	return nil
}

// wrongRevision reports whether err is the server's refusal of a write that
// named another revision than the key's last.
func wrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// Entry is a lease as List found it.
type Entry struct {
	Key      string
	Value    []byte
	Revision uint64
	Created  time.Time // when this revision was written, by the server's clock
}

// List returns the leases whose keys match filter ("lease.a.>"), in no
// particular order. Expired and released leases are not among them.
func (s *Store) List(ctx context.Context, filter string) ([]Entry, error) {
	w, err := s.kv.WatchFiltered(ctx, []string{filter}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("lease: list %s: %w", filter, err)
	}
	defer w.Stop()
	var out []Entry
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lease: list %s: %w", filter, ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("lease: list %s: watcher stopped", filter)
			}
			if e == nil {
				// Every current value has been sent.
				return out, nil
			}
			out = append(out, Entry{Key: e.Key(), Value: e.Value(), Revision: e.Revision(), Created: e.Created()})
		}
	}
}
