package main

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
)

// The state bucket purged while an Iceberg connector was stopped with data
// files stored and acked but not yet committed: the restart finds them by
// their own metadata and commits them, and every sequence is in the table
// exactly once, those committed before the purge included: a stored copy
// of a committed file is not committed again.
func TestAPurgedStateBucketLosesNoStoredIcebergFile(t *testing.T) {
	t.Parallel()
	// The test purges the state bucket: a NATS server of its own keeps the
	// other tests' state, as they run in parallel.
	c := newCrashEnv(t, "purged", exportertest.NATS(t, exportertest.NATSOptions{}), shared.MinIO(t), jetstream.StreamConfig{})
	uri := c.iceberg(false)
	c.setCommitInterval("1h")
	ctx := context.Background()

	c.publish(500, 4)
	c.runUntilIdle() // commits on the way out
	committed := c.table(uri, 500).Files[0].Path

	const n = 2500
	c.publish(n-500, 4)
	cmd, stderr := c.start()
	c.waitAckFloor(n, time.Minute)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if c.stateKeys("intent.>") == 0 {
		t.Fatalf("no intent left for the stored files:\n%s", stderr.String())
	}
	state, err := c.js.Stream(ctx, "KV_"+config.DefaultStateBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := state.Purge(ctx); err != nil {
		t.Fatal(err)
	}

	// A copy of a committed file, as a compaction's replaced file is:
	// its sequences are in the table already.
	src := strings.TrimPrefix(committed, "s3://"+c.name+"/")
	if _, err := c.mc.CopyObject(ctx, minio.CopyDestOptions{Bucket: c.name, Object: strings.TrimSuffix(src, ".parquet") + "-copy.parquet"},
		minio.CopySrcOptions{Bucket: c.name, Object: src}); err != nil {
		t.Fatal(err)
	}

	c.runUntilIdle()
	c.table(uri, n)
	// A second run finds nothing more to commit.
	c.runUntilIdle()
	c.table(uri, n)
}

// setCommitInterval sets the Iceberg commit_interval of the connector.
func (c *crashEnv) setCommitInterval(d string) {
	c.t.Helper()
	body, err := os.ReadFile(c.file)
	if err != nil {
		c.t.Fatal(err)
	}
	s := strings.Replace(string(body), `commit_interval = "1s"`, `commit_interval = "`+d+`"`, 1)
	if err := os.WriteFile(c.file, []byte(s), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// waitAckFloor waits until the connector's consumer has acked (read
// ack-less: the export record holds) every sequence up to last.
func (c *crashEnv) waitAckFloor(last uint64, timeout time.Duration) {
	c.t.Helper()
	ctx := context.Background()
	stream, err := c.js.Stream(ctx, strings.ToUpper(c.name))
	if err != nil {
		c.t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for name := range stream.ConsumerNames(ctx).Name() {
			cons, err := stream.Consumer(ctx, name)
			if err != nil {
				continue
			}
			if info, err := cons.Info(ctx); err == nil && exportedFloor(c.t, c.js, info) >= last {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("the consumer did not ack up to %d within %s", last, timeout)
}
