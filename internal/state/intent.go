// Package state is jetlake's state bucket, read and written as input, not
// truth: the intents of uploads in flight, the export record of what each
// stream exported, and the UUID of the table a connector writes. Every key
// comes from statekey; every value read back is bounded and checked.
package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/internal/statekey"
)

// An intent is written to the state store before a batch is uploaded and
// deleted after its acks were confirmed. It names the object and the exact
// set of stream sequences the object holds, so that after a crash the
// exporter knows which redelivered messages are already stored.
type Intent struct {
	ID            string        `json:"id"`
	Key           string        `json:"key"` // object key
	Stream        string        `json:"stream"`
	StreamCreated time.Time     `json:"stream_created"` // the stream's identity with its name
	Consumer      string        `json:"consumer"`
	Seqs          progress.Seqs `json:"seqs"`
	Created       time.Time     `json:"created"`
}

// Store keeps intents. It is implemented on a JetStream key-value
// bucket; tests use an in-memory one.
type Store interface {
	// Create stores value under key; the key must not exist.
	Create(ctx context.Context, key string, value []byte) error
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// DeleteRev removes key if its revision is rev, or returns
	// ErrRecordChanged.
	DeleteRev(ctx context.Context, key string, rev uint64) error
	// List returns every key under prefix (a dotted key prefix ending in
	// ".") with its value.
	List(ctx context.Context, prefix string) (map[string][]byte, error)
	// Get returns key's value and revision, or ErrNoRecord.
	Get(ctx context.Context, key string) ([]byte, uint64, error)
	// Update stores value under key if key's revision is rev (0: key must
	// not exist), or returns ErrRecordChanged.
	Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error)
}

// KV is the Store on a JetStream key-value bucket.
type KV struct {
	kv       jetstream.KeyValue
	replicas int
	// purge holds the options of a delete: PurgeTTL(markerTTL) when the
	// bucket allows per-message TTLs.
	purge []jetstream.KVDeleteOpt

	// For CreateAll and DeleteAll: the JetStream context, the subject
	// prefix of the bucket's keys ("" when the bucket is a mirror: they
	// write one key at a time) and the TTL of a deleted key's marker.
	js        jetstream.JetStream
	putPrefix string
	markerTTL time.Duration
}

// markerTTL is how long a bucket that allows per-message TTLs (the one
// jetlake creates does) keeps the marker of a key jetlake deleted: long
// enough for a watcher to see the delete. Without it every intent, claim
// and plan ever deleted would leave a marker for good, one subject more
// for the server to hold per object stored.
const markerTTL = time.Minute

// MaxValue bounds a value of the state bucket it creates.
const MaxValue = 1 << 20

// Open opens (creating if needed) the state bucket. An existing bucket
// that can lose entries by itself (see Unsafe) is an *UnsafeBucketError.
func Open(ctx context.Context, js jetstream.JetStream, bucket string, replicas int) (*KV, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		cfg := jetstream.KeyValueConfig{
			Bucket:      bucket,
			Description: "jetlake: intents of uploads in flight",
			History:     1,
			Replicas:    max(replicas, 1),
			Storage:     jetstream.FileStorage,
			// Nothing jetlake writes comes near it: export records stop
			// at 256 KiB, commit plans too, and an intent takes a few
			// bytes a sequence.
			MaxValueSize: MaxValue,
			// Per-message TTLs, for the markers of deleted keys only.
			LimitMarkerTTL: markerTTL,
		}
		kv, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
			// A server before 2.11: markers stay.
			cfg.LimitMarkerTTL = 0
			kv, err = js.CreateKeyValue(ctx, cfg)
		}
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("state bucket %s: %w", bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("state bucket %s: %w", bucket, err)
	}
	out := &KV{kv: kv, replicas: 1, js: js}
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok && bs.StreamInfo() != nil {
		cfg := bs.StreamInfo().Config
		if why := Unsafe(bucket, cfg); why != "" {
			return nil, &UnsafeBucketError{Bucket: bucket, Why: why}
		}
		out.replicas = max(cfg.Replicas, 1)
		if cfg.AllowMsgTTL {
			out.purge = []jetstream.KVDeleteOpt{jetstream.PurgeTTL(markerTTL)}
			out.markerTTL = markerTTL
		}
		if cfg.Mirror == nil {
			out.putPrefix = putPrefix(js.Options(), bucket)
		}
	}
	return out, nil
}

func (k *KV) Create(ctx context.Context, key string, value []byte) error {
	_, err := k.kv.Create(ctx, key, value)
	return err
}

func (k *KV) Delete(ctx context.Context, key string) error {
	err := k.kv.Purge(ctx, key, k.purge...)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	return err
}

func (k *KV) DeleteRev(ctx context.Context, key string, rev uint64) error {
	err := k.kv.Purge(ctx, key, append([]jetstream.KVDeleteOpt{jetstream.LastRevision(rev)}, k.purge...)...)
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("%w: %w", ErrRecordChanged, err)
	}
	return err
}

func (k *KV) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	e, err := k.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, ErrNoRecord
	}
	if err != nil {
		return nil, 0, err
	}
	return e.Value(), e.Revision(), nil
}

func (k *KV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	var err error
	if rev == 0 {
		rev, err = k.kv.Create(ctx, key, value)
	} else {
		rev, err = k.kv.Update(ctx, key, value, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return 0, fmt.Errorf("%w: %w", ErrRecordChanged, err)
	}
	return rev, err
}

func (k *KV) List(ctx context.Context, prefix string) (map[string][]byte, error) {
	lister, err := k.kv.ListKeysFiltered(ctx, prefix+">")
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for key := range lister.Keys() {
		e, err := k.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[key] = e.Value()
	}
	return out, nil
}

// NamedFiles returns the object keys the intents of a connector name.
func NamedFiles(ctx context.Context, st Store, connector string) (map[string]bool, error) {
	intents, err := st.List(ctx, statekey.Intents(connector))
	if err != nil {
		return nil, fmt.Errorf("list intents: %w", err)
	}
	named := map[string]bool{}
	for key, value := range intents {
		var in Intent
		if err := json.Unmarshal(value, &in); err != nil {
			return nil, fmt.Errorf("intent %s: %w", key, err)
		}
		if strings.TrimSpace(in.Key) != "" {
			named[in.Key] = true
		}
	}
	return named, nil
}
