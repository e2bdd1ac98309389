package exporter_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
)

// What jetlake reads back from the state bucket is input, not truth: these
// tests write into it what jetlake never would, and check that nothing is
// lost, stalled or deleted for it.

// stateBucket opens the connector's state bucket.
func (e *env) stateBucket(c *config.Connector) jetstream.KeyValue {
	e.t.Helper()
	kv, err := e.js.KeyValue(context.Background(), c.State.Bucket)
	if err != nil {
		e.t.Fatal(err)
	}
	return kv
}

// recordKey is the state-bucket key of the export record of the test's
// stream, as jetlake names it.
func (e *env) recordKey(c *config.Connector) string {
	enc := base64.RawURLEncoding
	return "export." + enc.EncodeToString([]byte(c.Name)) + "." + enc.EncodeToString([]byte(e.stream)) + "." + enc.EncodeToString([]byte(c.Streams[0].Consumer))
}

// forgeRecord writes an export record of the test's stream with floor.
func (e *env) forgeRecord(c *config.Connector, floor uint64) {
	e.t.Helper()
	ctx := context.Background()
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		e.t.Fatal(err)
	}
	value, err := json.Marshal(map[string]any{"stream_created": st.CachedInfo().Created.UTC(), "floor": floor, "updated": time.Now().UTC()})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.stateBucket(c).Put(ctx, e.recordKey(c), value); err != nil {
		e.t.Fatal(err)
	}
}

// An export record whose floor is past the stream's last sequence was not
// written by jetlake: written while jetlake is stopped, the messages
// published before and after are still exported; written while it runs,
// the next write of the record replaces it, and a restart exports what
// comes after.
func TestAForgedExportRecordSilencesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	c := e.connector()
	e.publish(300, 3)
	e.runUntilIdle(c, time.Minute)

	// Stopped.
	e.forgeRecord(c, 1_000_000_000_000)
	e.publish(200, 3)
	e.runUntilIdle(c, time.Minute)

	// Running.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	done, _ := e.run(rctx, c, false)
	waitFor(t, 30*time.Second, "the consumer", func() bool { return e.consumerInfo().NumPending == 0 })
	e.forgeRecord(c, 1_000_000_000_000)
	last := e.publish(200, 3)
	waitFor(t, time.Minute, "every sequence in an object", func() bool { return e.covered(last) })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	last = e.publish(100, 3)
	e.runUntilIdle(c, time.Minute)

	e.wantEachOnce(last)
	e.verify(c)
	e.wantAllAcked()
	value, err := e.stateBucket(c).Get(context.Background(), e.recordKey(c))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Floor uint64 `json:"floor"`
	}
	if err := json.Unmarshal(value.Value(), &rec); err != nil || rec.Floor > last {
		t.Fatalf("the record's floor is %d (%v), past the stream's last sequence %d", rec.Floor, err, last)
	}
}

// forgeIntent writes an intent of the test's stream naming key, with the
// id and the run of sequences first..last.
func (e *env) forgeIntent(c *config.Connector, id, key string, first, last uint64) {
	e.t.Helper()
	ctx := context.Background()
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		e.t.Fatal(err)
	}
	seqs := binary.AppendUvarint(nil, first)
	seqs = binary.AppendUvarint(seqs, last-first)
	value, err := json.Marshal(map[string]any{
		"id": id, "key": key, "stream": e.stream, "stream_created": st.CachedInfo().Created.UTC(),
		"consumer": c.Streams[0].Consumer, "seqs": base64.StdEncoding.EncodeToString(seqs), "created": time.Now().UTC(),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	ikey := "intent." + enc.EncodeToString([]byte(c.Name)) + "." + enc.EncodeToString([]byte(e.stream)) + "." + enc.EncodeToString([]byte(c.Streams[0].Consumer)) + "." + id
	if _, err := e.stateBucket(c).Put(ctx, ikey, value); err != nil {
		e.t.Fatal(err)
	}
}

// An intent jetlake could not have written is ignored: one naming 2^36
// sequences (a map entry each would exhaust memory), and one that borrows
// a stored object's intent id to claim sequences the object does not hold
// (believing it would ack them unwritten).
func TestAForgedIntentSilencesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	c := e.connector()
	first := e.publish(300, 3)
	e.runUntilIdle(c, time.Minute)
	ctx := context.Background()
	var stored minio.ObjectInfo
	for obj := range e.mc.ListObjects(ctx, e.bucket, minio.ListObjectsOptions{Recursive: true, Prefix: "raw/" + e.stream + "/", WithMetadata: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		stored = obj
		break
	}
	info, err := e.mc.StatObject(ctx, e.bucket, stored.Key, minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := info.UserMetadata["Jetlake-Intent"]
	if id == "" {
		t.Fatalf("object %s has no intent id: %v", stored.Key, info.UserMetadata)
	}
	last := e.publish(200, 3)
	e.forgeIntent(c, id, stored.Key, first+1, last)
	e.forgeIntent(c, "huge", "raw/huge", 1, 1<<36)
	e.runUntilIdle(c, time.Minute)
	e.wantEachOnce(last)
	e.verify(c)
	e.wantAllAcked()
}
