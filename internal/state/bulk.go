package state

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// bulkWindow bounds the writes CreateAll and DeleteAll have in flight.
// Sent together, the server takes them in a few reads, disk writes and
// replies; sent one at a time, each costs it a read, a disk write and a
// reply of its own, several times the CPU of a write in a window.
const bulkWindow = 1000

// putPrefix is the subject prefix of the keys of bucket, which the
// server stores in the bucket: within a JetStream domain or under an API
// prefix, the one the JetStream context opts sends its requests with.
func putPrefix(opts jetstream.JetStreamOptions, bucket string) string {
	var b strings.Builder
	switch {
	case opts.Domain != "":
		b.WriteString("$JS." + opts.Domain + ".API.")
	case opts.APIPrefix != "" && opts.APIPrefix != jetstream.DefaultAPIPrefix:
		b.WriteString(strings.TrimSuffix(opts.APIPrefix, ".") + ".")
	}
	b.WriteString("$KV." + bucket + ".")
	return b.String()
}

// CreateAll stores each value under its key, as Create does, with up to
// bulkWindow writes in flight. It returns the keys it could not create,
// with why; a key that exists already is ErrKeyExists's.
func (k *KV) CreateAll(ctx context.Context, entries map[string][]byte) map[string]error {
	keys := make([]string, 0, len(entries))
	for key := range entries {
		keys = append(keys, key)
	}
	if k.putPrefix == "" {
		return k.oneByOne(ctx, keys, func(ctx context.Context, key string) error { return k.Create(ctx, key, entries[key]) })
	}
	failed := k.publishAll(ctx, keys, func(key string) *nats.Msg {
		m := nats.NewMsg(k.putPrefix + key)
		m.Data = entries[key]
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
		return m
	})
	for key, err := range failed {
		if wrongLastSeq(err) {
			failed[key] = fmt.Errorf("%w: %w", jetstream.ErrKeyExists, err)
		}
	}
	return failed
}

// DeleteAll removes keys, as Delete does, with up to bulkWindow writes in
// flight. It returns the keys it could not delete, with why.
func (k *KV) DeleteAll(ctx context.Context, keys []string) map[string]error {
	if k.putPrefix == "" {
		return k.oneByOne(ctx, keys, k.Delete)
	}
	var opts []jetstream.PublishOpt
	if k.markerTTL > 0 {
		opts = append(opts, jetstream.WithMsgTTL(k.markerTTL))
	}
	return k.publishAll(ctx, keys, func(key string) *nats.Msg {
		m := nats.NewMsg(k.putPrefix + key)
		m.Header.Set("KV-Operation", "PURGE")
		m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
		return m
	}, opts...)
}

// publishAll publishes the message msg makes of each key, up to
// bulkWindow at once, and returns the keys whose message the stream did
// not take, with why.
func (k *KV) publishAll(ctx context.Context, keys []string, msg func(key string) *nats.Msg, opts ...jetstream.PublishOpt) map[string]error {
	failed := map[string]error{}
	futures := make([]jetstream.PubAckFuture, 0, min(len(keys), bulkWindow))
	for start := 0; start < len(keys); start += bulkWindow {
		window := keys[start:min(start+bulkWindow, len(keys))]
		futures = futures[:0]
		for _, key := range window {
			f, err := k.js.PublishMsgAsync(msg(key), opts...)
			if err != nil {
				failed[key] = err
			}
			futures = append(futures, f)
		}
		for i, f := range futures {
			if f == nil {
				continue
			}
			select {
			case <-f.Ok():
			case err := <-f.Err():
				failed[window[i]] = err
			case <-ctx.Done():
				failed[window[i]] = ctx.Err()
			}
		}
	}
	return failed
}

// oneByOne runs op for each key, one at a time, and returns the keys it
// failed for, with why.
func (k *KV) oneByOne(ctx context.Context, keys []string, op func(context.Context, string) error) map[string]error {
	failed := map[string]error{}
	for _, key := range keys {
		if err := op(ctx, key); err != nil {
			failed[key] = err
		}
	}
	return failed
}

// wrongLastSeq reports whether err says the subject's last sequence was
// not the one expected.
func wrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
