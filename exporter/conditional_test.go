package exporter_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/pathtemplate"
)

// unconditionalStore ignores If-None-Match, like stores without conditional
// writes.
type unconditionalStore struct{ *objstore.S3Store }

func (s unconditionalStore) Put(ctx context.Context, key string, body formats.Body, o objstore.PutOptions) error {
	o.IfNoneMatch = false
	return s.S3Store.Put(ctx, key, body, o)
}

func TestStoreWithoutConditionalWritesStillExportsExactlyOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	c := e.connector()
	s3, err := objstore.NewS3Store(c.S3)
	if err != nil {
		t.Fatal(err)
	}
	last := e.publish(1000, 4)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := exporter.New(c, exporter.Options{Logger: testLogger(t), UntilIdle: true, Store: unconditionalStore{s3}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Run(ctx); err != nil {
		t.Fatal(err)
	}
	e.wantExactlyOnce(e.read(), last)
	e.verify(c)
	e.wantAllAcked()

	// Without If-None-Match only a look before the write keeps another
	// writer's object at a batch's key from being overwritten, its
	// messages lost: the next batch finds one there and must stop
	// without writing or acking.
	next := e.publish(5, 1)
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.GetMsg(ctx, last+1)
	if err != nil {
		t.Fatal(err)
	}
	dir := c.Output.PathTemplate.Dir(&pathtemplate.Values{Stream: e.stream, Subject: first.Subject, Time: first.Time})
	key, _ := pathtemplate.Key("raw", dir, last+1, next, "jsonl")
	const foreign = "{}\n"
	if _, err := e.mc.PutObject(ctx, e.bucket, key, strings.NewReader(foreign), int64(len(foreign)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	ex, err = exporter.New(c, exporter.Options{Logger: testLogger(t), UntilIdle: true, Store: unconditionalStore{s3}})
	if err != nil {
		t.Fatal(err)
	}
	var ce *objstore.CollisionError
	if err := ex.Run(ctx); !errors.As(err, &ce) || ce.Key != key {
		t.Fatalf("Run = %v, want a collision on %s", err, key)
	}
	if body := e.get(ctx, key); string(body) != foreign {
		t.Fatalf("the other writer's object at %s was overwritten: %q", key, body)
	}
	if floor := e.consumerInfo().AckFloor.Stream; floor != last {
		t.Fatalf("ack floor %d after a collision, want %d: the batch must not be acked", floor, last)
	}
}

// Another writer's object exactly where the first batch goes is a
// collision, and a permanent one: every run stops with it and acks nothing,
// none retries it forever, and once the connector has a prefix of its own
// the refused batch is exported there.
func TestObjectOfAnotherBatchAtTheKeyStopsEveryRunUntilTheConnectorHasItsOwnPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 5
max_file_age = "1s"`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.publish(5, 1)
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		t.Fatal(err)
	}
	first, err := st.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := e.connector()
	dir := c.Output.PathTemplate.Dir(&pathtemplate.Values{Stream: e.stream, Subject: first.Subject, Time: first.Time})
	key, _ := pathtemplate.Key("raw", dir, 1, 5, "jsonl")
	if _, err := e.mc.PutObject(ctx, e.bucket, key, strings.NewReader("{}\n"), 3, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		rctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		done, _ := e.run(rctx, c, true)
		err := <-done
		cancel()
		var ce *objstore.CollisionError
		if !errors.As(err, &ce) || ce.Key != key || ce.Marker {
			t.Fatalf("run %d = %v, want a collision of data objects on %s", run, err, key)
		}
		if info := e.consumerInfo(); info.AckFloor.Stream != 0 {
			t.Fatalf("run %d: ack floor %d after a collision; nothing may be acked", run, info.AckFloor.Stream)
		}
	}
	c.S3.Prefix = "own"
	e.runUntilIdle(c, time.Minute)
	if r := e.verify(c)[0]; r.Messages != 5 || len(r.Markers) != 0 {
		t.Fatalf("under its own prefix: %d messages, %d markers; want 5 and none", r.Messages, len(r.Markers))
	}
	e.wantAllAcked()
}
