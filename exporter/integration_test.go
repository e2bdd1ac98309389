package exporter_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/exporter/exportertest"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// One nats-server and one MinIO serve every test of the package; tests are
// isolated by stream and bucket names. Tests that stop a server start their
// own.
var (
	shared exportertest.Shared
	seq    atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	defer shared.Stop()
	return m.Run()
}

// env is one test's stream, bucket and connector.
type env struct {
	t      *testing.T
	nats   *exportertest.NATSServer
	minio  *exportertest.MinIOServer
	nc     *nats.Conn
	js     jetstream.JetStream
	mc     *minio.Client
	stream string
	bucket string
	file   string // connector file

	metrics *exporter.Metrics // for the exporters run; nil: unexported ones
}

// connectorTOML is the connector of the tests; %s are filled by newEnv and
// the test's rotation settings.
const connectorTOML = `
name = "%[1]s"
shutdown_timeout = "30s"

[nats]
url = "%[2]s"

[[streams]]
stream = "%[3]s"
subjects = ["%[3]s.>"]
ack_wait = "%[7]s"

[s3]
bucket = "%[4]s"
endpoint = "%[5]s"
prefix = "raw"
access_key_id_env = "JETLAKE_TEST_ACCESS_KEY"
secret_access_key_env = "JETLAKE_TEST_SECRET_KEY"

[output]
format = "json_lines"
path_template = "{stream}/{subject}/{date}/{hour}"

[rotation]
%[6]s
`

// newEnv creates a stream with subjects "<STREAM>.>", a bucket, and a
// connector file with the given [rotation] body.
func newEnv(t *testing.T, ns *exportertest.NATSServer, ms *exportertest.MinIOServer, rotation string) *env {
	t.Helper()
	return newEnvAckWait(t, ns, ms, rotation, "1m")
}

func newEnvAckWait(t *testing.T, ns *exportertest.NATSServer, ms *exportertest.MinIOServer, rotation, ackWait string) *env {
	t.Helper()
	return newEnvRetention(t, ns, ms, rotation, ackWait, jetstream.LimitsPolicy)
}

func newEnvRetention(t *testing.T, ns *exportertest.NATSServer, ms *exportertest.MinIOServer, rotation, ackWait string, retention jetstream.RetentionPolicy) *env {
	t.Helper()
	n := seq.Add(1)
	e := &env{t: t, nats: ns, minio: ms,
		stream: fmt.Sprintf("T%d", n),
		bucket: fmt.Sprintf("lake-%d-%d", os.Getpid(), n),
	}
	t.Setenv("JETLAKE_TEST_ACCESS_KEY", ms.AccessKey)
	t.Setenv("JETLAKE_TEST_SECRET_KEY", ms.SecretKey)
	var err error
	e.nc, err = nats.Connect(ns.URL, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.nc.Close)
	e.js, err = jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{
		Name: e.stream, Subjects: []string{e.stream + ".>"}, Storage: jetstream.FileStorage, Retention: retention,
	}); err != nil {
		t.Fatal(err)
	}
	if err := ms.CreateBucket(ctx, e.bucket); err != nil {
		t.Fatal(err)
	}
	e.mc, err = ms.Client()
	if err != nil {
		t.Fatal(err)
	}
	e.file = filepath.Join(t.TempDir(), "connector.toml")
	body := fmt.Sprintf(connectorTOML, "c"+e.stream, ns.URL, e.stream, e.bucket, ms.Endpoint, rotation, ackWait)
	if err := os.WriteFile(e.file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) connector() *config.Connector {
	e.t.Helper()
	conns, err := config.Load(e.file)
	if err != nil {
		e.t.Fatalf("load %s: %v", e.file, err)
	}
	return conns[0]
}

// publish publishes n JSON messages round-robin over the given number of
// subjects and returns the last stream sequence.
func (e *env) publish(n, subjects int) uint64 {
	e.t.Helper()
	ctx := context.Background()
	var last uint64
	futures := make([]jetstream.PubAckFuture, 0, 1000)
	wait := func() {
		for _, f := range futures {
			select {
			case ack := <-f.Ok():
				last = max(last, ack.Sequence)
			case err := <-f.Err():
				e.t.Fatal(err)
			case <-time.After(10 * time.Second):
				e.t.Fatal("publish ack timeout")
			}
		}
		futures = futures[:0]
	}
	for i := range n {
		subj := fmt.Sprintf("%s.s%d", e.stream, i%subjects)
		data := fmt.Sprintf(`{"i": %d, "user": {"id": %d, "name": "user-%d"}, "big": 123456789012345678901234567890}`, i, i%97, i)
		f, err := e.js.PublishAsync(subj, []byte(data))
		if err != nil {
			e.t.Fatal(err)
		}
		futures = append(futures, f)
		if len(futures) == cap(futures) {
			wait()
		}
	}
	wait()
	_ = ctx
	return last
}

// runUntilIdle runs the connector with Options.UntilIdle and requires it to
// finish cleanly within timeout.
func (e *env) runUntilIdle(c *config.Connector, timeout time.Duration) *exporter.Exporter {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done, ex := e.run(ctx, c, true)
	if err := <-done; err != nil {
		e.t.Fatal(err)
	}
	return ex
}

// run runs the connector until ctx ends (or idle with untilIdle) and returns
// its error on the channel.
func (e *env) run(ctx context.Context, c *config.Connector, untilIdle bool) (<-chan error, *exporter.Exporter) {
	e.t.Helper()
	ex, err := exporter.New(c, exporter.Options{Logger: testLogger(e.t), UntilIdle: untilIdle, Version: "test", Metrics: e.metrics})
	if err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ex.Run(ctx) }()
	return done, ex
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	if testing.Verbose() {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// exported is what the bucket holds.
type exported struct {
	objects int
	bySeq   map[uint64]string // sequence → key of the object holding it
	dups    []string
}

type line struct {
	Stream   string          `json:"stream"`
	Subject  string          `json:"subject"`
	Sequence uint64          `json:"sequence"`
	Time     string          `json:"timestamp"`
	Payload  json.RawMessage `json:"payload"`
}

// read lists every data object, checks that its name, metadata and records
// agree, and returns which object holds each sequence.
func (e *env) read() exported {
	e.t.Helper()
	ctx := context.Background()
	out := exported{bySeq: map[uint64]string{}}
	for obj := range e.mc.ListObjects(ctx, e.bucket, minio.ListObjectsOptions{Recursive: true, Prefix: "raw/"}) {
		if obj.Err != nil {
			e.t.Fatal(obj.Err)
		}
		if strings.HasPrefix(obj.Key, "raw/_jetlake/") {
			continue
		}
		out.objects++
		body := e.get(ctx, obj.Key)
		st, err := e.mc.StatObject(ctx, e.bucket, obj.Key, minio.StatObjectOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		base := filepath.Base(obj.Key)
		name, ok := strings.CutSuffix(base, ".jsonl")
		if !ok || len(name) != 41 || name[20] != '-' {
			e.t.Fatalf("object %s: name is not <first:020>-<last:020>.jsonl", obj.Key)
		}
		first, _ := strconv.ParseUint(name[:20], 10, 64)
		last, _ := strconv.ParseUint(name[21:], 10, 64)
		var lo, hi uint64
		n := 0
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				e.t.Fatalf("object %s: line %d: %v", obj.Key, n+1, err)
			}
			if !strings.Contains(obj.Key, "/"+l.Subject+"/") {
				e.t.Fatalf("object %s holds subject %s", obj.Key, l.Subject)
			}
			if prev, dup := out.bySeq[l.Sequence]; dup {
				out.dups = append(out.dups, fmt.Sprintf("sequence %d in %s and %s", l.Sequence, prev, obj.Key))
			}
			out.bySeq[l.Sequence] = obj.Key
			if n == 0 || l.Sequence < lo {
				lo = l.Sequence
			}
			hi = max(hi, l.Sequence)
			n++
		}
		if lo != first || hi != last {
			e.t.Fatalf("object %s holds sequences %d-%d", obj.Key, lo, hi)
		}
		md := st.UserMetadata
		if md["First-Seq"] != strconv.FormatUint(first, 10) && md["Jetlake-First-Seq"] != strconv.FormatUint(first, 10) {
			e.t.Fatalf("object %s: metadata %v does not give first sequence %d", obj.Key, md, first)
		}
		if md["Jetlake-Count"] != strconv.Itoa(n) {
			e.t.Fatalf("object %s: metadata count %q, %d records", obj.Key, md["Jetlake-Count"], n)
		}
	}
	return out
}

// wantExactlyOnce checks that sequences 1..last are each in exactly one
// object.
func (e *env) wantExactlyOnce(got exported, last uint64) {
	e.t.Helper()
	if len(got.dups) > 0 {
		e.t.Fatalf("%d duplicates, first: %s", len(got.dups), got.dups[0])
	}
	var missing []uint64
	for s := uint64(1); s <= last; s++ {
		if _, ok := got.bySeq[s]; !ok {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		e.t.Fatalf("%d of %d sequences missing, first %d", len(missing), last, missing[0])
	}
	if uint64(len(got.bySeq)) != last {
		e.t.Fatalf("%d sequences exported, want %d", len(got.bySeq), last)
	}
}

// consumerInfo returns the connector's consumer state; before the exporter
// created the consumer, it returns an empty state with everything pending.
func (e *env) consumerInfo() *jetstream.ConsumerInfo {
	e.t.Helper()
	cons, err := e.js.Consumer(context.Background(), e.stream, "c"+e.stream)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return &jetstream.ConsumerInfo{NumPending: 1 << 62}
	}
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := cons.Info(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return info
}

func (e *env) wantAllAcked() {
	e.t.Helper()
	info := e.consumerInfo()
	if info.NumPending != 0 || info.NumAckPending != 0 || info.NumRedelivered != 0 {
		e.t.Fatalf("consumer: %d pending, %d unacked, %d redelivered; want none",
			info.NumPending, info.NumAckPending, info.NumRedelivered)
	}
}

// get returns the body of an object of the test's bucket.
func (e *env) get(ctx context.Context, key string) []byte {
	e.t.Helper()
	r, err := e.mc.GetObject(ctx, e.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	defer r.Close()
	body, err := io.ReadAll(r)
	if err != nil {
		e.t.Fatal(err)
	}
	return body
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestEverySequenceLandsInExactlyOneObject(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_file_size = "64KiB"
max_messages_per_file = 700
max_file_age = "20s"
max_buffered_bytes = "8MiB"`)
	const n = 20000
	last := e.publish(n, 10)
	start := time.Now()
	e.runUntilIdle(e.connector(), 2*time.Minute)
	elapsed := time.Since(start)
	t.Logf("exported %d messages in %s: %.0f messages/s", n, elapsed.Round(time.Millisecond), n/elapsed.Seconds())
	got := e.read()
	e.wantExactlyOnce(got, last)
	if got.objects < n/700 {
		t.Fatalf("%d objects; rotation at 700 messages needs at least %d", got.objects, n/700)
	}
	e.wantAllAcked()
}

func TestQuietSubjectIsFlushedByAge(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 10000
max_file_age = "2s"`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, _ := e.run(ctx, e.connector(), false)
	last := e.publish(5, 1)
	start := time.Now()
	waitFor(t, 20*time.Second, "the quiet subject's object", func() bool { return len(e.read().bySeq) == 5 })
	if d := time.Since(start); d < time.Second {
		t.Fatalf("object appeared after %s, before the age limit", d)
	}
	e.wantExactlyOnce(e.read(), last)
	waitFor(t, 10*time.Second, "acks", func() bool { return e.consumerInfo().NumAckPending == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestBudgetSmallerThanBacklogLosesNothing(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_file_size = "16KiB"
max_messages_per_file = 0
max_file_age = "20s"
max_buffered_bytes = "64KiB"`)
	// About 800 KiB of records, over 12× the budget. Batches grow in
	// chunks that double, here up to 16 KiB, the file size.
	e.exportWithinBudget(6000, 10, 64<<10, 16<<10+1024, 2*time.Minute)
}

// exportWithinBudget publishes n messages over the given number of
// subjects, exports them and requires each in exactly one object, all
// acked, and buffers, uploads and the delivered messages held for their
// acks together never over budget by more than slack: the message that
// crossed it and the chunk of memory it opened.
func (e *env) exportWithinBudget(n, subjects int, budget, slack int64, timeout time.Duration) {
	e.t.Helper()
	reg := prometheus.NewRegistry()
	e.metrics = exporter.NewMetrics(reg)
	last := e.publish(n, subjects)
	e.runUntilIdle(e.connector(), timeout)
	e.wantExactlyOnce(e.read(), last)
	e.wantAllAcked()
	if peak := int64(gauge(e.t, reg, "jetlake_buffered_bytes_peak")); peak > budget+slack {
		e.t.Fatalf("peak %d bytes held, over the budget of %d by more than %d", peak, budget, slack)
	}
}

// gauge returns the value of the gauge name, of a single series, in reg.
func gauge(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no single series of gauge %s", name)
	return 0
}

func TestS3OutageAcksNothingAndLosesNothing(t *testing.T) {
	ms := exportertest.MinIO(t, exportertest.MinIOOptions{})
	e := newEnv(t, shared.NATS(t), ms, `
max_messages_per_file = 100
max_file_age = "1s"`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, _ := e.run(ctx, e.connector(), false)
	e.publish(300, 3)
	waitFor(t, 30*time.Second, "first batch exported", func() bool { return e.consumerInfo().AckFloor.Stream == 300 })

	if err := ms.Kill(); err != nil {
		t.Fatal(err)
	}
	last := e.publish(500, 5)
	// Messages are delivered to the exporter, whose uploads now fail.
	waitFor(t, 20*time.Second, "delivery to the exporter", func() bool { return e.consumerInfo().NumPending == 0 })
	floor := e.consumerInfo().AckFloor.Stream
	for range 8 {
		time.Sleep(500 * time.Millisecond)
		info := e.consumerInfo()
		if info.AckFloor.Stream != floor || info.NumAckPending != 500 {
			t.Fatalf("while S3 is down: ack floor %d (was %d), %d unacked (want 500)", info.AckFloor.Stream, floor, info.NumAckPending)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("exporter stopped during the outage: %v", err)
	default:
	}
	if err := ms.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "everything acked after S3 returned", func() bool {
		info := e.consumerInfo()
		return info.NumAckPending == 0 && info.AckFloor.Stream == last
	})
	e.wantExactlyOnce(e.read(), last)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.verify(e.connector())
}

func TestMissingBucketStopsWithAClearError(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `max_file_age = "1s"`)
	c := e.connector()
	c.S3.Bucket = "no-such-bucket-here"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done, _ := e.run(ctx, c, false)
	err := <-done
	if !exporter.IsPermanent(err) || !strings.Contains(err.Error(), "no-such-bucket-here") {
		t.Fatalf("Run = %v, want a permanent error naming the bucket", err)
	}
}

func TestDeletedConsumerStopsTheExporter(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `max_file_age = "1s"`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done, _ := e.run(ctx, e.connector(), false)
	e.publish(10, 1)
	waitFor(t, 20*time.Second, "export", func() bool { return e.consumerInfo().AckFloor.Stream == 10 })
	if err := e.js.DeleteConsumer(ctx, e.stream, "c"+e.stream); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "deleted") {
			t.Fatalf("Run = %v, want an error saying the consumer was deleted", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("exporter kept running after its consumer was deleted")
	}
}

func TestExistingConsumerWithFiniteMaxDeliverIsRefused(t *testing.T) {
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

func TestMaxAckPendingBelowOneRotationStillProgresses(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 10000
max_file_age = "25s"`)
	c := e.connector()
	c.Streams[0].MaxAckPending = 50
	last := e.publish(1000, 2)
	start := time.Now()
	e.runUntilIdle(c, time.Minute)
	// Waiting for the age limit would take 25s per round of 50 messages.
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %s: the exporter waited for messages MaxAckPending held back", d)
	}
	e.wantExactlyOnce(e.read(), last)
	e.wantAllAcked()
	if mp := e.consumerInfo().Config.MaxAckPending; mp != 50 {
		t.Fatalf("consumer MaxAckPending = %d, want 50", mp)
	}
}

func TestInterestAndWorkQueueStreamsExportEverything(t *testing.T) {
	for _, rp := range []jetstream.RetentionPolicy{jetstream.InterestPolicy, jetstream.WorkQueuePolicy} {
		t.Run(rp.String(), func(t *testing.T) {
			e := newEnvRetention(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 300
max_file_age = "20s"`, "1m", rp)
			// Create the consumer first: an interest stream keeps only
			// messages some consumer is interested in.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := e.connector()
			boot, cancelBoot := context.WithCancel(ctx)
			done, _ := e.run(boot, c, false)
			waitFor(t, 20*time.Second, "the consumer", func() bool { return e.consumerInfo().NumPending == 0 })
			cancelBoot()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			last := e.publish(2000, 4)
			done, _ = e.run(ctx, c, true)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			e.wantExactlyOnce(e.read(), last)
			e.wantAllAcked()
			st, err := e.js.Stream(ctx, e.stream)
			if err != nil {
				t.Fatal(err)
			}
			if n := st.CachedInfo().State.Msgs; n != 0 {
				t.Fatalf("%s stream still holds %d messages after every one was acked", rp, n)
			}
		})
	}
}

func TestNATSRestartMidRunLosesNothing(t *testing.T) {
	ns := exportertest.NATS(t, exportertest.NATSOptions{})
	e := newEnv(t, ns, shared.MinIO(t), `
max_messages_per_file = 200
max_file_age = "1s"`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done, _ := e.run(ctx, e.connector(), false)
	e.publish(1000, 4)
	waitFor(t, 30*time.Second, "first half exported", func() bool { return e.consumerInfo().AckFloor.Stream == 1000 })
	if err := ns.Restart(); err != nil {
		t.Fatal(err)
	}
	last := e.publish(1000, 4)
	waitFor(t, 60*time.Second, "second half exported after the restart", func() bool {
		info := e.consumerInfo()
		return info.AckFloor.Stream == last && info.NumAckPending == 0
	})
	select {
	case err := <-done:
		t.Fatalf("exporter stopped across the NATS restart: %v", err)
	default:
	}
	e.wantExactlyOnce(e.read(), last)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.verify(e.connector())
}

// verify runs exporter.Verify on the connector and requires every report OK.
func (e *env) verify(c *config.Connector) []*exporter.Report {
	e.t.Helper()
	store, err := exporter.NewS3Store(c.S3)
	if err != nil {
		e.t.Fatal(err)
	}
	reports, err := exporter.Verify(context.Background(), c, e.js, store, exporter.VerifyOptions{Deep: true})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range reports {
		if !r.OK() {
			e.t.Fatalf("verify %s: missing %v, overlaps %v, problems %v", r.Stream, r.Missing, r.Overlaps, r.Problems)
		}
	}
	return reports
}

func TestGapWhileStoppedGetsAMarkerNamingExactlyTheDiscardedRange(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := e.connector()
	e.publish(200, 2)
	done, _ := e.run(ctx, c, true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// While the exporter is stopped the stream keeps only 300 messages: of
	// the next 1000 (201-1200), 201-900 are discarded.
	st, err := e.js.Stream(ctx, e.stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxMsgs = 300
	if _, err := e.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	last := e.publish(1000, 2)
	done, _ = e.run(ctx, c, true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	reports := e.verify(c)
	markers := reports[0].Markers
	if len(markers) != 1 {
		t.Fatalf("%d loss markers, want 1", len(markers))
	}
	m := markers[0]
	if m.Reason != "gap" || m.FirstSeq != 201 || m.LastSeq != 900 || m.Count != 700 {
		t.Fatalf("marker %+v, want a gap of 201-900 (700 messages)", m)
	}
	got := e.read()
	for q := uint64(1); q <= last; q++ {
		_, in := got.bySeq[q]
		if in == (q >= 201 && q <= 900) {
			t.Fatalf("sequence %d: in an object = %v", q, in)
		}
	}
	e.wantAllAcked()
}

func TestPoisonMessageIsTerminatedAndMarkedWhileTheSubjectFlows(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.publish(10, 1)
	// Two in a row, larger than the store takes in one object (set to
	// 128 KiB here): they share one marker.
	for range 2 {
		if _, err := e.js.Publish(ctx, e.stream+".s0", bytes.Repeat([]byte("x"), 200<<10)); err != nil {
			t.Fatal(err)
		}
	}
	last := e.publish(10, 1)
	c := e.connector()
	ex, err := exporter.New(c, exporter.Options{Logger: testLogger(t), UntilIdle: true, MaxObjectSize: 128 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Run(ctx); err != nil {
		t.Fatal(err)
	}
	reports := e.verify(c)
	if len(reports[0].Markers) != 1 {
		t.Fatalf("%d markers, want 1", len(reports[0].Markers))
	}
	m := reports[0].Markers[0]
	if m.Reason != "poison" || m.FirstSeq != 11 || m.LastSeq != 12 || m.Count != 2 || m.Subject != e.stream+".s0" || m.Error == "" {
		t.Fatalf("marker %+v, want poison 11-12 on %s.s0", m, e.stream)
	}
	got := e.read()
	if len(got.bySeq) != int(last)-2 {
		t.Fatalf("%d messages exported, want %d", len(got.bySeq), last-2)
	}
	e.wantAllAcked()
}

func TestObjectOfAnotherBatchAtTheKeyStopsTheConnectorAndAcksNothing(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 5
max_file_age = "1s"`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
	// Another writer's object, exactly where the first batch goes.
	if _, err := e.mc.PutObject(ctx, e.bucket, key, strings.NewReader("{}\n"), 3, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	done, _ := e.run(ctx, c, true)
	err = <-done
	var ce *exporter.CollisionError
	if !errors.As(err, &ce) || ce.Key != key {
		t.Fatalf("Run = %v, want a collision on %s", err, key)
	}
	if info := e.consumerInfo(); info.AckFloor.Stream != 0 {
		t.Fatalf("ack floor %d after a collision; nothing may be acked", info.AckFloor.Stream)
	}
}

// unconditionalStore ignores If-None-Match, like stores without conditional
// writes.
type unconditionalStore struct{ *exporter.S3Store }

func (s unconditionalStore) Put(ctx context.Context, key string, body formats.Body, o exporter.PutOptions) error {
	o.IfNoneMatch = false
	return s.S3Store.Put(ctx, key, body, o)
}

func TestStoreWithoutConditionalWritesStillExportsExactlyOnce(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	c := e.connector()
	s3, err := exporter.NewS3Store(c.S3)
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
	var ce *exporter.CollisionError
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

func TestMemoryBoundHoldsAtTwoThousandSubjects(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_file_size = "64KiB"
max_messages_per_file = 0
max_file_age = "20s"
max_buffered_bytes = "1MiB"`)
	// Batches grow in chunks that double up to 1 MiB, here at most
	// 64 KiB, the file size.
	e.exportWithinBudget(20000, 2000, 1<<20, 64<<10+2048, 3*time.Minute)
}
