package state

import (
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// The state bucket is the only cursor of a consumer that keeps its state in
// memory (the default), and the only list of the batches in flight: a
// bucket that loses entries by itself makes jetlake export sequences again,
// or skip them. A bucket jetlake creates keeps them on disk and never
// expires them; an existing one is used only if it does the same.

// UnsafeBucketError reports a state bucket that can lose what it holds:
// jetlake refuses to run on it.
type UnsafeBucketError struct {
	Bucket string
	Why    string // what loses entries, and how to mend it
}

func (e *UnsafeBucketError) Error() string {
	return fmt.Sprintf("state bucket %s: %s", e.Bucket, e.Why)
}

// Unsafe says why a state bucket whose stream is configured as cfg can
// lose entries by itself, with the fix, or returns "": it keeps them in
// memory, expires them after an age, or drops the oldest when full.
// Limits that refuse writes instead (discard new) lose nothing: a write
// fails, loudly.
func Unsafe(bucket string, cfg jetstream.StreamConfig) string {
	remake := fmt.Sprintf("copy what it holds elsewhere if you need it, delete it (nats kv del %s) and let jetlake create it", bucket)
	switch {
	case cfg.Storage == jetstream.MemoryStorage:
		return "it keeps its entries in memory: a server restart loses the export records and intents, and jetlake would export sequences again or skip them; " + remake + " (file storage)"
	case cfg.MaxAge > 0:
		return fmt.Sprintf("its entries expire after %s (the bucket's TTL): an export record that expires makes jetlake export sequences again or skip them; remove the TTL (nats stream edit KV_%s --max-age=0), or %s", cfg.MaxAge, bucket, remake)
	case cfg.Discard == jetstream.DiscardOld && (cfg.MaxBytes > 0 || cfg.MaxMsgs > 0):
		return fmt.Sprintf("it drops its oldest entries when full (max_bytes %d, max_msgs %d with discard old): %s", cfg.MaxBytes, cfg.MaxMsgs, remake)
	}
	return ""
}

// Replicas returns the replicas of the state bucket k is on, as read when
// it was opened.
func (k *KV) Replicas() int { return k.replicas }
