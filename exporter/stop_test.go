package exporter_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/internal/failure"
	"github.com/jetlake/jetlake/internal/jsclient"
)

func TestMissingBucketStopsWithAClearError(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `max_file_age = "1s"`)
	c := e.connector()
	c.S3.Bucket = "no-such-bucket-here"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done, _ := e.run(ctx, c, false)
	err := <-done
	if !failure.IsPermanent(err) || !strings.Contains(err.Error(), "no-such-bucket-here") {
		t.Fatalf("Run = %v, want a permanent error naming the bucket", err)
	}
}

func TestMissingStreamStopsBeforeWritingToTheStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `max_file_age = "1s"`)
	c := e.connector()
	c.Streams[0].Stream = "NO_SUCH_STREAM"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done, _ := e.run(ctx, c, false)
	var ce *jsclient.ConfigError
	// The key is named the way plan names it.
	if err := <-done; !errors.As(err, &ce) || !strings.Contains(err.Error(), "NO_SUCH_STREAM") || !strings.Contains(err.Error(), "fix streams[1].stream") {
		t.Fatalf("Run = %v, want a configuration error naming the stream and streams[1].stream", err)
	}
	for obj := range e.mc.ListObjects(ctx, e.bucket, minio.ListObjectsOptions{Recursive: true}) {
		t.Errorf("a run refused for its stream wrote %s (%v)", obj.Key, obj.Err)
	}
}

// A stream deleted under the exporter stops it: there is nothing to read
// from, and nothing to rebuild the consumer on. (A consumer deleted alone is
// created again from the export record; see cursor_test.go.)
func TestDeletedStreamStopsTheExporter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `max_file_age = "1s"`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done, _ := e.run(ctx, e.connector(), false)
	e.publish(10, 1)
	waitFor(t, 20*time.Second, "export", func() bool { return e.consumerInfo().AckFloor.Stream == 10 })
	if err := e.js.DeleteStream(ctx, e.stream); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, exporter.ErrConsumerDeleted) || !strings.Contains(err.Error(), "stream not found") {
			t.Fatalf("Run = %v, want an error saying the stream was deleted", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("exporter kept running after its stream was deleted")
	}
}

func TestExistingConsumerWithFiniteMaxDeliverIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `max_file_age = "1s"`)
	ctx := context.Background()
	if _, err := e.js.CreateConsumer(ctx, e.stream, jetstream.ConsumerConfig{
		Durable: "c" + e.stream, AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 5,
	}); err != nil {
		t.Fatal(err)
	}
	done, _ := e.run(ctx, e.connector(), false)
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "MaxDeliver 5; jetlake needs -1 (unlimited)") {
		t.Fatalf("Run = %v, want a refusal naming MaxDeliver", err)
	}
}

// Stopping while the exporter still waits for NATS is a clean stop: nothing
// is held yet, so Run returns nil rather than the cancellation.
func TestStoppingWhileSettingUpIsACleanStop(t *testing.T) {
	c, err := config.Parse("c.toml", []byte(`name = "c"
[nats]
url = "nats://127.0.0.1:1"
[[streams]]
stream = "S"
[s3]
bucket = "lake"
`))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := exporter.New(c, exporter.Options{Logger: testLogger(t), Store: &exporter.MemStore{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := ex.Run(ctx); err != nil {
		t.Fatalf("Run stopped while connecting = %v, want nil", err)
	}
}
