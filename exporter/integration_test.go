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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/metrics"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/internal/statekey"
)

// One nats-server and one MinIO serve every test of the package; tests are
// isolated by stream, consumer, connector and bucket names, so the
// integration tests run in parallel (t.Parallel). Tests that stop a server
// start their own.
var (
	shared exportertest.Shared
	seq    atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

// The connector files of the tests name their S3 credentials by these
// variables. Every MinIO of the tests has the default credentials, so they
// are set once for the process: t.Setenv would keep the tests from
// running in parallel.
const (
	testAccessKeyEnv = "JETLAKE_TEST_ACCESS_KEY"
	testSecretKeyEnv = "JETLAKE_TEST_SECRET_KEY"
)

func runMain(m *testing.M) int {
	defer shared.Stop()
	os.Setenv(testAccessKeyEnv, exportertest.DefaultMinIOAccessKey)
	os.Setenv(testSecretKeyEnv, exportertest.DefaultMinIOSecretKey)
	return m.Run()
}

// wantTestCredentials fails t unless the process's test credentials are
// those of ms.
func wantTestCredentials(t *testing.T, ms *exportertest.MinIOServer) {
	t.Helper()
	if os.Getenv(testAccessKeyEnv) != ms.AccessKey || os.Getenv(testSecretKeyEnv) != ms.SecretKey {
		t.Fatalf("MinIO at %s has other credentials than $%s and $%s", ms.Endpoint, testAccessKeyEnv, testSecretKeyEnv)
	}
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
	state  string // the connector's state bucket, when not the default

	metrics *metrics.Metrics // for the exporters run; nil: unexported ones
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
	wantTestCredentials(t, ms)
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
	return e.publishEach(n, func(i int) (string, []byte) {
		return fmt.Sprintf("%s.s%d", e.stream, i%subjects),
			fmt.Appendf(nil, `{"i": %d, "user": {"id": %d, "name": "user-%d"}, "big": 123456789012345678901234567890}`, i, i%97, i)
	})
}

// publishEach publishes n messages, message i on the subject and with the
// data msg returns, a window of them at a time, and returns the last stream
// sequence.
func (e *env) publishEach(n int, msg func(i int) (string, []byte)) uint64 {
	e.t.Helper()
	var last uint64
	futures := make([]jetstream.PubAckFuture, 0, 1000)
	wait := func() {
		for _, f := range futures {
			select {
			case ack := <-f.Ok():
				last = max(last, ack.Sequence)
			case err := <-f.Err():
				e.t.Fatal(err)
			case <-time.After(30 * time.Second):
				e.t.Fatal("publish ack timeout")
			}
		}
		futures = futures[:0]
	}
	for i := range n {
		subj, data := msg(i)
		f, err := e.js.PublishAsync(subj, data)
		if err != nil {
			e.t.Fatal(err)
		}
		futures = append(futures, f)
		if len(futures) == cap(futures) {
			wait()
		}
	}
	wait()
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
	var keys []string
	for obj := range e.mc.ListObjects(ctx, e.bucket, minio.ListObjectsOptions{Recursive: true, Prefix: "raw/"}) {
		if obj.Err != nil {
			e.t.Fatal(obj.Err)
		}
		if !strings.HasPrefix(obj.Key, "raw/_jetlake/") {
			keys = append(keys, obj.Key)
		}
	}
	for i, st := range e.fetch(ctx, keys) {
		key := keys[i]
		out.objects++
		base := filepath.Base(key)
		name, ok := strings.CutSuffix(base, ".jsonl")
		if !ok || len(name) != 41 || name[20] != '-' {
			e.t.Fatalf("object %s: name is not <first:020>-<last:020>.jsonl", key)
		}
		first, _ := strconv.ParseUint(name[:20], 10, 64)
		last, _ := strconv.ParseUint(name[21:], 10, 64)
		var lo, hi uint64
		n := 0
		sc := bufio.NewScanner(bytes.NewReader(st.body))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				e.t.Fatalf("object %s: line %d: %v", key, n+1, err)
			}
			if !strings.Contains(key, "/"+l.Subject+"/") {
				e.t.Fatalf("object %s holds subject %s", key, l.Subject)
			}
			if prev, dup := out.bySeq[l.Sequence]; dup {
				out.dups = append(out.dups, fmt.Sprintf("sequence %d in %s and %s", l.Sequence, prev, key))
			}
			out.bySeq[l.Sequence] = key
			if n == 0 || l.Sequence < lo {
				lo = l.Sequence
			}
			hi = max(hi, l.Sequence)
			n++
		}
		if lo != first || hi != last {
			e.t.Fatalf("object %s holds sequences %d-%d", key, lo, hi)
		}
		md := st.meta
		if md["First-Seq"] != strconv.FormatUint(first, 10) && md["Jetlake-First-Seq"] != strconv.FormatUint(first, 10) {
			e.t.Fatalf("object %s: metadata %v does not give first sequence %d", key, md, first)
		}
		if md["Jetlake-Count"] != strconv.Itoa(n) {
			e.t.Fatalf("object %s: metadata count %q, %d records", key, md["Jetlake-Count"], n)
		}
	}
	return out
}

// fetched is an object's body and the metadata its GET returned.
type fetched struct {
	body []byte
	meta minio.StringMap
}

// fetch gets the objects of the test's bucket at keys, eight at a time: a
// test that exports thousands of small objects reads them back in seconds
// instead of a minute.
func (e *env) fetch(ctx context.Context, keys []string) []fetched {
	e.t.Helper()
	out := make([]fetched, len(keys))
	errs := make([]error, len(keys))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(8, len(keys)) {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = e.fetchOne(ctx, keys[i])
			}
		})
	}
	for i := range keys {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// fetchOne gets an object's body and, from the same GET, its metadata.
func (e *env) fetchOne(ctx context.Context, key string) (fetched, error) {
	r, err := e.mc.GetObject(ctx, e.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return fetched{}, err
	}
	defer r.Close()
	info, err := r.Stat()
	if err != nil {
		return fetched{}, fmt.Errorf("object %s: %w", key, err)
	}
	body, err := io.ReadAll(r)
	if err != nil {
		return fetched{}, fmt.Errorf("object %s: %w", key, err)
	}
	return fetched{body: body, meta: info.UserMetadata}, nil
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
// The ack floor of a consumer that takes no acks (a limits stream's) moves
// at delivery: its AckFloor is then the export record's floor, what such a
// consumer's ack floor stands for, and NumAckPending counts the sequences
// delivered above it.
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
	e.ackView(info, "c"+e.stream)
	return info
}

// ackView makes info, of a consumer of connector that takes no acks, show
// what its ack floor and unacked count stand for: the export record's
// floor, and the sequences delivered above it that the record lacks. A
// filtered consumer's delivered sequence passes other subjects' messages,
// which its record's floor passes only once a walk told so: only its own
// subjects' messages count.
func (e *env) ackView(info *jetstream.ConsumerInfo, connector string) {
	e.t.Helper()
	if info.Config.AckPolicy != jetstream.AckNonePolicy {
		return
	}
	rec := e.record(connector, info.Name)
	info.AckFloor.Stream = rec.Floor
	delivered := info.Delivered.Stream
	info.NumAckPending = int(delivered - min(rec.Floor, delivered))
	filters := info.Config.FilterSubjects
	if info.Config.FilterSubject != "" {
		filters = []string{info.Config.FilterSubject}
	}
	if len(filters) == 0 || info.NumAckPending == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := 0
	for q := rec.Floor + 1; q <= delivered; q++ {
		next, err := jsclient.NextMessage(ctx, e.nc, config.NATS{}, e.stream, q, filters)
		if err != nil {
			e.t.Fatal(err)
		}
		if next == 0 || next > delivered {
			break
		}
		if n == 100 {
			n += int(delivered - next + 1) // the rest, counted as the unfiltered view does
			break
		}
		if !rec.Done.Has(next) {
			n++
		}
		q = next
	}
	info.NumAckPending = n
}

// record returns the export record of connector's consumer of the test's
// stream, empty when there is none yet.
func (e *env) record(connector, consumer string) *state.Record {
	e.t.Helper()
	ctx := context.Background()
	bucket := e.state
	if bucket == "" {
		bucket = config.DefaultStateBucket
	}
	var rec state.Record
	kv, err := e.js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return &rec
	}
	if err != nil {
		e.t.Fatal(err)
	}
	entry, err := kv.Get(ctx, statekey.Record(connector, e.stream, consumer))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return &rec
	}
	if err != nil {
		e.t.Fatal(err)
	}
	if err := json.Unmarshal(entry.Value(), &rec); err != nil {
		e.t.Fatal(err)
	}
	return &rec
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
	exportertest.WaitFor(t, timeout, what, cond)
}

// verify runs lake.Verify on the connector and requires every report OK.
func (e *env) verify(c *config.Connector) []*lake.Report {
	e.t.Helper()
	store, err := objstore.NewS3Store(c.S3)
	if err != nil {
		e.t.Fatal(err)
	}
	reports, err := lake.Verify(context.Background(), c, e.js, store, lake.VerifyOptions{Deep: true})
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
