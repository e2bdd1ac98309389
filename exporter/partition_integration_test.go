package exporter_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/exporter/plan"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/lease"
	"github.com/jetlake/jetlake/internal/metrics"
)

// partitioned rewrites the env's connector file with partitions = p, the
// given lease TTL and a 5 s priority timeout, and loads it.
func (e *env) partitioned(p int, leaseTTL string) *config.Connector {
	e.t.Helper()
	body, err := os.ReadFile(e.file)
	if err != nil {
		e.t.Fatal(err)
	}
	s := strings.Replace(string(body), "ack_wait =", fmt.Sprintf("partitions = %d\nlease_ttl = %q\npriority_timeout = \"5s\"\nack_wait =", p, leaseTTL), 1)
	if err := os.WriteFile(e.file, []byte(s), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return e.connector()
}

// leaseHolders returns how many partition leases each instance holds, by
// instance id, reading the state bucket.
func (e *env) leaseHolders(c *config.Connector) map[string]int {
	e.t.Helper()
	ctx := context.Background()
	kv, err := e.js.KeyValue(ctx, c.State.Bucket)
	if err != nil {
		return nil
	}
	leases, err := lease.PartitionHolders(ctx, kv, c.Name, c.Streams[0])
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]int{}
	for _, h := range leases {
		out[h.Instance]++
	}
	return out
}

// partitionsDone reports whether every partition consumer of c's first
// entry has nothing pending and nothing unacked.
func (e *env) partitionsDone(c *config.Connector) bool {
	e.t.Helper()
	return e.partitionsState(c) == ""
}

// partitionsState describes the partition consumers that have messages
// pending or unacked, or returns "".
func (e *env) partitionsState(c *config.Connector) string {
	e.t.Helper()
	sc := c.Streams[0]
	var out []string
	for k := range sc.Partitions {
		name := config.PartitionConsumer(sc.Consumer, k)
		cons, err := e.js.Consumer(context.Background(), e.stream, name)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		info, err := cons.Info(context.Background())
		if err == nil {
			e.ackView(info, c.Name)
		}
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s: %v", name, err))
		case info.NumPending != 0 || info.NumAckPending != 0:
			var pins []string
			for _, g := range info.PriorityGroups {
				pins = append(pins, g.Group+" pinned "+g.PinnedClientID)
			}
			out = append(out, fmt.Sprintf("%s: %d pending, %d unacked, %d redelivered, %d waiting, ack floor %d, delivered %d, %v",
				name, info.NumPending, info.NumAckPending, info.NumRedelivered, info.NumWaiting, info.AckFloor.Stream, info.Delivered.Stream, pins))
		}
	}
	return strings.Join(out, "; ")
}

// shares reports whether the leases are held by want instances, each with
// a count in [lo, hi], all of them held.
func shares(h map[string]int, want, lo, hi, total int) bool {
	n := 0
	for _, c := range h {
		if c < lo || c > hi {
			return false
		}
		n += c
	}
	return len(h) == want && n == total
}

// Two instances on four partitions hold two each; a third joins and gets
// its share; as they leave, the one left takes every partition over. What
// the stream held before it was partitioned is exported by partition 0,
// subjects show no partition token, and every sequence lands once.
func TestPartitionsAreSharedAndTakenOverAsInstancesComeAndGo(t *testing.T) {
	t.Parallel()
	e := newEnvAckWait(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 100\nmax_file_age = \"1s\"", "15s")
	reg := prometheus.NewRegistry()
	e.metrics = metrics.New(reg)
	last := e.publish(500, 20) // stored before the stream is partitioned
	c := e.partitioned(4, "3s")
	ctx := context.Background()
	ctxA, stopA := context.WithCancel(ctx)
	defer stopA()
	doneA, exA := e.run(ctxA, c, false)
	waitFor(t, 30*time.Second, "the first instance holding every partition", func() bool {
		return shares(e.leaseHolders(c), 1, 4, 4, 4)
	})
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		t.Fatal(err)
	}
	if tr := st.CachedInfo().Config.SubjectTransform; tr == nil || tr.Destination != "{{partition(4)}}.>" {
		t.Fatalf("stream transform %+v, want the partition transform", tr)
	}
	ctxB, stopB := context.WithCancel(ctx)
	defer stopB()
	doneB, exB := e.run(ctxB, c, false)
	last = e.publish(1500, 20)
	waitFor(t, 30*time.Second, "two instances holding two partitions each", func() bool {
		return shares(e.leaseHolders(c), 2, 2, 2, 4)
	})
	ctxC, stopC := context.WithCancel(ctx)
	defer stopC()
	doneC, exC := e.run(ctxC, c, false)
	waitFor(t, 30*time.Second, "three instances holding 1-2 partitions each", func() bool {
		return shares(e.leaseHolders(c), 3, 1, 2, 4)
	})
	for _, ex := range []*exporter.Exporter{exA, exB, exC} {
		if err := ex.Ready(); err != nil || ex.Idle() != "" {
			t.Fatalf("an instance holding partitions: ready %v, idle %q", err, ex.Idle())
		}
	}
	last = e.publish(1000, 20)
	stopB()
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	stopC()
	if err := <-doneC; err != nil {
		t.Fatal(err)
	}
	// Released on the way out: taken at once, not after the lease TTL.
	waitFor(t, 10*time.Second, "the first instance holding every partition again", func() bool {
		return shares(e.leaseHolders(c), 1, 4, 4, 4)
	})
	last = e.publish(1000, 20)
	waitFor(t, time.Minute, "every partition exported", func() bool { return e.partitionsDone(c) })
	waitFor(t, 10*time.Second, "the partitions_held gauge at 4", func() bool {
		return metricSum(reg, "jetlake_partitions_held", nil) == 4
	})
	stopA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	// Two partitions handed to the second instance, one to the third; each
	// that stopped left what it held.
	for _, m := range []struct {
		name   string
		labels map[string]string
		least  float64
	}{
		{"jetlake_handovers_total", map[string]string{"kind": "handed_over"}, 3},
		{"jetlake_handovers_total", map[string]string{"kind": "shutdown"}, 4 + 2},
		{"jetlake_handover_duration_seconds", nil, 3 + 4 + 2},
		{"jetlake_lease_renewals_total", map[string]string{"outcome": "renewed"}, 1},
	} {
		if got := metricSum(reg, m.name, m.labels); got < m.least {
			t.Errorf("%s%v = %v, want at least %v", m.name, m.labels, got, m.least)
		}
	}
	got := e.read()
	e.wantExactlyOnce(got, last)
	for _, key := range got.bySeq {
		if !strings.HasPrefix(key, "raw/"+e.stream+"/"+e.stream+".s") {
			t.Fatalf("object %s: the key shows more than the published subject", key)
		}
	}
	reports := e.verify(c)
	if r := reports[0]; r.Messages != int(last) || len(r.Markers) != 0 || r.Filtered {
		t.Fatalf("verify: %d messages, %d loss markers, filtered %v; want %d, none, the whole stream", r.Messages, len(r.Markers), r.Filtered, last)
	}
}

// An instance that holds no partition is ready, and says it is idle.
func TestAnInstanceWithoutPartitionsIsReadyButIdle(t *testing.T) {
	t.Parallel()
	e := newEnvAckWait(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 100\nmax_file_age = \"1s\"", "15s")
	c := e.partitioned(2, "3s")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var exs []*exporter.Exporter
	var dones []<-chan error
	for range 3 {
		done, ex := e.run(ctx, c, false)
		exs, dones = append(exs, ex), append(dones, done)
	}
	waitFor(t, 30*time.Second, "two instances holding a partition each", func() bool {
		return shares(e.leaseHolders(c), 2, 1, 1, 2)
	})
	// An instance counts a partition it claimed once its stream is set
	// up, a moment after the lease says it holds it.
	idle := func() (n int) {
		for _, ex := range exs {
			if err := ex.Ready(); err != nil {
				t.Fatalf("not ready: %v", err)
			}
			if why := ex.Idle(); why != "" {
				n++
				if !strings.Contains(why, "holds none of its 2 partitions") {
					t.Fatalf("idle: %q", why)
				}
			}
		}
		return n
	}
	waitFor(t, 10*time.Second, "one instance idle", func() bool { return idle() == 1 })
	stop()
	for _, d := range dones {
		if err := <-d; err != nil {
			t.Fatal(err)
		}
	}
}

// On a three-node cluster, the leaders of the stream, the state bucket and
// the partition consumers step down while partitions are handed over to a
// second instance: the handover completes and every sequence lands once.
func TestPartitionHandoverSurvivesLeaderChanges(t *testing.T) {
	t.Parallel()
	servers := exportertest.NATSCluster(t, 3)
	url := exportertest.ClusterURL(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	const stream = "PCLUSTER"
	nc, js := clusterStream(t, ctx, url, stream, "pcluster.>")
	var err error
	e := &env{t: t, nats: &exportertest.NATSServer{URL: url}, minio: shared.MinIO(t), nc: nc, js: js, stream: stream,
		bucket: fmt.Sprintf("pcluster-%d-%d", os.Getpid(), seq.Add(1))}
	if err := e.minio.CreateBucket(ctx, e.bucket); err != nil {
		t.Fatal(err)
	}
	if e.mc, err = e.minio.Client(); err != nil {
		t.Fatal(err)
	}
	wantTestCredentials(t, e.minio)
	e.file = filepath.Join(t.TempDir(), "connector.toml")
	body := fmt.Sprintf(connectorTOML, "pcluster", url, stream, e.bucket, e.minio.Endpoint, "max_messages_per_file = 200\nmax_file_age = \"1s\"", "20s")
	body = strings.Replace(body, `subjects = ["PCLUSTER.>"]`, `subjects = ["pcluster.>"]`, 1) + "\n[state]\nreplicas = 3\n"
	if err := os.WriteFile(e.file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c := e.partitioned(4, "3s")
	publish := func(from, to int) error {
		return publishThrough(ctx, js, from, to, func(i int) string { return fmt.Sprintf("pcluster.s%d", i%12) })
	}
	const n = 4000
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	doneA, _ := e.run(runCtx, c, false)
	waitFor(t, time.Minute, "the first instance holding every partition", func() bool {
		return shares(e.leaseHolders(c), 1, 4, 4, 4)
	})
	if err := publish(0, n/2); err != nil {
		t.Fatal(err)
	}
	doneB, _ := e.run(runCtx, c, false)
	published := make(chan error, 1)
	go func() { published <- publish(n/2, n) }()
	// Step the leaders down, while messages arrive, until the first
	// instance has handed two partitions over: its drain, unpin and
	// release meet elections.
	stepdowns := []string{"$JS.API.STREAM.LEADER.STEPDOWN." + stream, "$JS.API.STREAM.LEADER.STEPDOWN.KV_" + config.DefaultStateBucket}
	for k := range 4 {
		stepdowns = append(stepdowns, "$JS.API.CONSUMER.LEADER.STEPDOWN."+stream+"."+config.PartitionConsumer(c.Streams[0].Consumer, k))
	}
	// One stepdown every half second: each leader steps down every three
	// seconds, so elections keep meeting the handover, but each one can
	// end first, as in a cluster that is disrupted, not down. Asked for at
	// every check, on a loaded machine, the state bucket spent most of the
	// time electing and the handover could not end in two minutes.
	i := 0
	var last time.Time
	waitFor(t, 2*time.Minute, "two instances holding two partitions each, leaders stepping down", func() bool {
		if time.Since(last) >= 500*time.Millisecond {
			// An election may still be under way: a refused stepdown is fine.
			_, _ = nc.Request(stepdowns[i%len(stepdowns)], nil, 2*time.Second)
			i++
			last = time.Now()
		}
		return shares(e.leaseHolders(c), 2, 2, 2, 4)
	})
	t.Logf("%d stepdowns asked for until the handover ended", i)
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(3 * time.Minute); !e.partitionsDone(c); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-doneA:
			t.Fatalf("the first instance stopped: %v", err)
		case err := <-doneB:
			t.Fatalf("the second instance stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every partition exported after 3m: %s; leases %v", e.partitionsState(c), e.leaseHolders(c))
		}
	}
	stop()
	for _, d := range []<-chan error{doneA, doneB} {
		if err := <-d; err != nil {
			t.Fatal(err)
		}
	}
	e.wantExactlyOnce(e.read(), n)
	if r := e.verify(c)[0]; r.Messages != n || len(r.Markers) != 0 {
		t.Fatalf("verify: %d messages, %d loss markers; want %d and none", r.Messages, len(r.Markers), n)
	}
}

// metricSum adds up the series of a metric whose labels include labels:
// counter and gauge values, histogram sample counts.
func metricSum(reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	families, err := reg.Gather()
	if err != nil {
		return 0
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// A partition's consumer sees every other partition's sequences as holes
// between its messages. run -until-idle still ends soon after the last
// message is exported: the holes are read, not looked up one at a time.
func TestRunUntilIdleEndsOnAPartitionedStream(t *testing.T) {
	t.Parallel()
	e := newEnvAckWait(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 1000\nmax_file_age = \"2s\"", "15s")
	c := e.partitioned(4, "3s")
	ctx := context.Background()
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	src, dst := config.PartitionTransform(4)
	cfg.SubjectTransform = &jetstream.SubjectTransformConfig{Source: src, Destination: dst}
	if _, err := e.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	last := e.publish(20000, 40)
	start := time.Now()
	e.runUntilIdle(c, time.Minute)
	took := time.Since(start)
	t.Logf("exported %d messages in 4 partitions and found it idle in %s", last, took.Round(time.Millisecond))
	if took > 20*time.Second {
		// Before: the holes were looked up one request each, and partition
		// 0 took the others' sequences for its own; it never went idle.
		t.Fatalf("idle only after %s", took)
	}
	e.wantExactlyOnce(e.read(), last)
	if !e.partitionsDone(c) {
		t.Fatal("run -until-idle ended with messages pending")
	}
}

// The same connector without partitions, on a stream a partitioned
// instance has split: run and plan refuse it, saying how many partitions
// to set, and it writes nothing and makes no consumer.
func TestAnUnpartitionedEntryOnAPartitionedStreamIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnvAckWait(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 100\nmax_file_age = \"1s\"", "15s")
	plain := e.connector()
	c := e.partitioned(2, "3s")
	last := e.publish(300, 10)
	e.runUntilIdle(c, time.Minute)
	before := e.read()
	e.wantExactlyOnce(before, last)
	e.publish(100, 10)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done, _ := e.run(ctx, plain, true)
	err := <-done
	var ce *jsclient.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "set streams[1].partitions = 2") {
		t.Fatalf("run without partitions: %v; want a refusal that says to set streams[1].partitions = 2", err)
	}
	if after := e.read(); after.objects != before.objects {
		t.Fatalf("the refused run wrote %d objects", after.objects-before.objects)
	}
	if _, err := e.js.Consumer(ctx, e.stream, plain.Streams[0].Consumer); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("consumer %s: %v; want none made", plain.Streams[0].Consumer, err)
	}

	r := plan.Run(ctx, plain, plan.Options{Timeout: 5 * time.Second})
	refused := false
	for _, ch := range r.Checks {
		if ch.Status == plan.Fail && strings.Contains(ch.Msg, "set streams[1].partitions = 2") {
			refused = true
		}
	}
	if !refused {
		t.Fatalf("plan without partitions does not fail with the fix: %+v", r.Checks)
	}
}

// A partition consumer deleted under two instances: its holder goes on
// running, and finds the consumer missing. While it can not pull, it is not
// ready and says so in partitions_stalled; then it re-creates the consumer
// from the export record (consumer_rebuilds_total{reason="missing"}), and
// every message, those published after the deletion too, lands once.
func TestADeletedPartitionConsumerIsRecreatedByItsHolder(t *testing.T) {
	t.Parallel()
	e := newEnvAckWait(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 100\nmax_file_age = \"1s\"", "15s")
	c := e.partitioned(4, "3s")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	var exs []*exporter.Exporter
	var dones []<-chan error
	for _, reg := range regs {
		e.metrics = metrics.New(reg)
		done, ex := e.run(ctx, c, false)
		exs, dones = append(exs, ex), append(dones, done)
	}
	waitFor(t, 30*time.Second, "two instances holding two partitions each", func() bool {
		return shares(e.leaseHolders(c), 2, 2, 2, 4)
	})
	e.publish(1000, 20)
	waitFor(t, time.Minute, "every partition exported", func() bool { return e.partitionsDone(c) })

	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		t.Fatal(err)
	}
	part0 := config.PartitionConsumer(c.Streams[0].Consumer, 0)
	if err := st.DeleteConsumer(ctx, part0); err != nil {
		t.Fatal(err)
	}
	last := e.publish(600, 20)
	notReady, stalled := false, false
	rebuilt := func() float64 {
		n := 0.0
		for _, reg := range regs {
			n += metricSum(reg, "jetlake_consumer_rebuilds_total", map[string]string{"reason": "missing"})
		}
		return n
	}
	waitFor(t, time.Minute, "partition 0 exported again", func() bool {
		for i, ex := range exs {
			if err := ex.Ready(); err != nil && strings.Contains(err.Error(), "can not pull") {
				notReady = true
			}
			if metricSum(regs[i], "jetlake_partitions_stalled", nil) == 1 {
				stalled = true
			}
		}
		return rebuilt() >= 1 && e.partitionsDone(c)
	})
	if !notReady || !stalled {
		t.Fatalf("while partition 0 could not pull: not ready %v, partitions_stalled 1 %v; want both", notReady, stalled)
	}
	for i, ex := range exs {
		if err := ex.Ready(); err != nil {
			t.Fatalf("instance %d not ready once partition 0 pulls again: %v", i, err)
		}
		if got := metricSum(regs[i], "jetlake_partitions_stalled", nil); got != 0 {
			t.Fatalf("instance %d: partitions_stalled %v once partition 0 pulls again", i, got)
		}
	}
	stop()
	for i, done := range dones {
		if err := <-done; err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
	}
	e.wantExactlyOnce(e.read(), last)
}
