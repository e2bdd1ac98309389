package exporter_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/metrics"
)

// retainedWalks is how long a test lets the walks of an exported stream
// run after the last export: the idle walk comes every 5 s.
const retainedWalks = 12 * time.Second

// wantNoLoss checks that nothing was marked lost, by marker, metric or
// verify, and that every sequence up to last is exported once.
func (e *env) wantNoLoss(reg prometheus.Gatherer, last uint64, conns ...*config.Connector) {
	e.t.Helper()
	if ms := e.markers(); len(ms) > 0 {
		e.t.Errorf("%d loss markers, first %d-%d: %s", len(ms), ms[0].FirstSeq, ms[0].LastSeq, ms[0].Error)
	}
	if n := metricSum(reg, "jetlake_messages_lost_total", nil); n != 0 {
		e.t.Errorf("jetlake_messages_lost_total = %v, want 0", n)
	}
	e.wantExactlyOnce(e.read(), last)
	for _, c := range conns {
		for _, r := range e.verify(c) {
			if len(r.Markers) != 0 || !r.OK() {
				e.t.Errorf("verify %s: %d loss markers, missing %v, problems %v", c.Name, len(r.Markers), r.Missing, r.Problems)
			}
		}
	}
}

// Two partitions of a work-queue stream: each partition's acks move the
// stream's first sequence past the other's frontier, which is no loss.
func TestAWorkQueueStreamInPartitionsMarksNothingLost(t *testing.T) {
	t.Parallel()
	e := newEnvRetention(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 100\nmax_file_age = \"1s\"", "15s", jetstream.WorkQueuePolicy)
	reg := prometheus.NewRegistry()
	e.metrics = metrics.New(reg)
	c := e.partitioned(2, "3s")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done, _ := e.run(ctx, c, false)
	waitFor(t, 30*time.Second, "the instance holding both partitions", func() bool {
		return shares(e.leaseHolders(c), 1, 2, 2, 2)
	})
	var last uint64
	for range 6 {
		last = e.publish(200, 7)
		time.Sleep(2 * time.Second)
	}
	waitFor(t, time.Minute, "every partition exported", func() bool { return e.partitionsDone(c) })
	time.Sleep(retainedWalks)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.wantNoLoss(reg, last, c)
}

// Two connectors with disjoint filters on one interest stream: each one's
// acks remove messages the other never matched, which is no loss.
func TestDisjointConnectorsOnAnInterestStreamMarkNothingLost(t *testing.T) {
	t.Parallel()
	e := newEnvRetention(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 100\nmax_file_age = \"1s\"", "15s", jetstream.InterestPolicy)
	reg := prometheus.NewRegistry()
	e.metrics = metrics.New(reg)
	body, err := os.ReadFile(e.file)
	if err != nil {
		t.Fatal(err)
	}
	var conns []*config.Connector
	for _, part := range []string{"a", "b"} {
		s := strings.Replace(string(body), fmt.Sprintf("name = \"c%s\"", e.stream), fmt.Sprintf("name = \"c%s-%s\"", e.stream, part), 1)
		s = strings.Replace(s, fmt.Sprintf("subjects = [\"%s.>\"]", e.stream), fmt.Sprintf("subjects = [\"%s.%s.>\"]", e.stream, part), 1)
		if err := os.WriteFile(e.file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, e.connector())
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var dones []<-chan error
	for _, c := range conns {
		done, _ := e.run(ctx, c, false)
		dones = append(dones, done)
	}
	waitFor(t, 30*time.Second, "both consumers created", func() bool {
		for _, c := range conns {
			if _, err := e.js.Consumer(ctx, e.stream, c.Streams[0].Consumer); err != nil {
				return false
			}
		}
		return true
	})
	var last uint64
	for round := range 6 {
		last = e.publishEach(200, func(i int) (string, []byte) {
			// Runs of one side, so that the other's frontier falls
			// behind the first sequence between them.
			side := []string{"a", "b"}[(i/50+round)%2]
			return fmt.Sprintf("%s.%s.s%d", e.stream, side, i%5), fmt.Appendf(nil, `{"i": %d}`, i)
		})
		time.Sleep(2 * time.Second)
	}
	waitFor(t, time.Minute, "the stream emptied by both connectors' acks", func() bool {
		st, err := e.js.Stream(ctx, e.stream)
		return err == nil && st.CachedInfo().State.Msgs == 0
	})
	time.Sleep(retainedWalks)
	stop()
	for _, done := range dones {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	e.wantNoLoss(reg, last, conns...)
}
