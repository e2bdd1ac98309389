package exporter_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jetlake/jetlake/internal/exportertest"
)

// A message larger than the pull's share of the memory budget (16 MiB / 8
// here) is still delivered, gets an object of its own, and what follows it
// keeps flowing: a pull whose byte limit is below a message gets nothing,
// for ever, and says nothing.
func TestAMessageLargerThanThePullLimitIsExportedAndTheRestFlows(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte("max_payload: 12MB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := exportertest.NATS(t, exportertest.NATSOptions{Args: []string{"-c", conf}})
	e := newEnv(t, ns, shared.MinIO(t), `
max_file_size = "4MiB"
max_messages_per_file = 1000
max_file_age = "1s"
max_buffered_bytes = "16MiB"`)
	e.publish(10, 2)
	ctx := context.Background()
	big := bytes.Repeat([]byte("x"), 8<<20)
	ack, err := e.js.Publish(ctx, e.stream+".s0", big)
	if err != nil {
		t.Fatal(err)
	}
	last := e.publish(10, 2) // sequences 12-21
	c := e.connector()
	e.runUntilIdle(c, 2*time.Minute)
	got := e.read()
	e.wantExactlyOnce(got, last)
	key := got.bySeq[ack.Sequence]
	for q, k := range got.bySeq {
		if k == key && q != ack.Sequence {
			t.Fatalf("the 8 MiB message shares %s with sequence %d", key, q)
		}
	}
	e.verify(c)
	e.wantAllAcked()
}
