package exporter_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/metrics"
	"github.com/jetlake/jetlake/internal/objstore"
)

// gatedStore is an S3 store whose writes fail while its gate is shut, as
// a store that is down would fail them.
type gatedStore struct {
	*objstore.S3Store
	shut atomic.Bool
}

func (g *gatedStore) Put(ctx context.Context, key string, body formats.Body, o objstore.PutOptions) error {
	if g.shut.Load() {
		return errors.New("the store is down (test gate)")
	}
	return g.S3Store.Put(ctx, key, body, o)
}

// A partition holder whose consumer goes missing while it uploads (deleted
// through the API, or a memory consumer a server restart lost) re-creates
// it and is pinned to it again under a new pin id. The batches it sealed
// under the old pin are its own still: nobody else pulls a partition whose
// lease it holds. They are stored as soon as the store takes them, in
// seconds, not after ack_wait.
//
// Before, the fence took the new pin for another instance's and dropped
// the batches ("this instance is no longer pinned to the consumer"): their
// messages, delivered again by the new consumer while the batches held
// them, landed only once the new consumer redelivered them after ack_wait
// (30 s here; 2 minutes by default).
func TestAPartitionHolderKeepsItsBatchesWhenItRecreatesItsConsumer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		restart bool
	}{
		{"deleted", false},
		{"server restart", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ns *exportertest.NATSServer
			if tc.restart {
				ns = exportertest.NATS(t, exportertest.NATSOptions{})
			} else {
				ns = shared.NATS(t)
			}
			e := newEnvAckWait(t, ns, shared.MinIO(t), "max_messages_per_file = 100\nmax_file_age = \"1s\"", "30s")
			c := e.partitioned(2, "10s")
			if tc.restart {
				c.Streams[0].ConsumerStorage = config.StorageMemory
			}
			s3, err := objstore.NewS3Store(c.S3)
			if err != nil {
				t.Fatal(err)
			}
			store := &gatedStore{S3Store: s3}
			reg := prometheus.NewRegistry()
			ex, err := exporter.New(c, exporter.Options{Logger: testLogger(t), Store: store, Metrics: metrics.New(reg), Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			done := make(chan error, 1)
			go func() { done <- ex.Run(ctx) }()
			waitFor(t, 30*time.Second, "both partitions held", func() bool { return shares(e.leaseHolders(c), 1, 2, 2, 2) })
			first := e.publish(200, 10)
			waitFor(t, 30*time.Second, "the first messages exported", func() bool { return uint64(len(e.read().bySeq)) >= first })

			part0 := config.PartitionConsumer(c.Streams[0].Consumer, 0)
			pin := func() string {
				pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				p, _ := jsclient.Pinned(pctx, e.js, e.stream, part0)
				return p
			}
			before := pin()
			store.shut.Store(true)
			last := e.publish(200, 10)
			waitFor(t, 20*time.Second, "uploads failing", func() bool {
				return metricSum(reg, "jetlake_upload_errors_total", nil) >= 2
			})
			if tc.restart {
				if err := ns.Restart(); err != nil {
					t.Fatal(err)
				}
			} else {
				st, err := e.js.Stream(ctx, e.stream)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.DeleteConsumer(ctx, part0); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, 30*time.Second, "partition 0's consumer re-created and pinned", func() bool {
				p := pin()
				return metricSum(reg, "jetlake_consumer_rebuilds_total", map[string]string{"reason": "missing"}) >= 1 && p != "" && p != before
			})
			// The first attempt after the new pin is the one the fence
			// judges.
			time.Sleep(2 * time.Second)
			store.shut.Store(false)
			opened := time.Now()
			waitFor(t, 15*time.Second, "every message stored once the store is back", func() bool { return uint64(len(e.read().bySeq)) >= last })
			t.Logf("every message stored %s after the store came back", time.Since(opened).Round(time.Millisecond))
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			e.wantExactlyOnce(e.read(), last)
		})
	}
}
