package exporter_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/exporter/plan"
	"github.com/jetlake/jetlake/internal/exportertest"
)

// fewerReplicasWarning is what run logs when the state bucket has fewer
// replicas than one of the connector's streams.
const fewerReplicasWarning = "the state bucket has fewer replicas than the stream: an outage the stream survives can lose the export records and intents"

// recordingHandler keeps the attributes of each record logged with msg.
type recordingHandler struct {
	slog.Handler
	msg string
	got *loggedRecords
}

type loggedRecords struct {
	mu      sync.Mutex
	records []map[string]string // attribute → value, "level" too
}

func (h recordingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == h.msg {
		attrs := map[string]string{"level": r.Level.String()}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		h.got.mu.Lock()
		h.got.records = append(h.got.records, attrs)
		h.got.mu.Unlock()
	}
	return h.Handler.Handle(ctx, r)
}

func (h recordingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return recordingHandler{h.Handler.WithAttrs(attrs), h.msg, h.got}
}

func (h recordingHandler) WithGroup(name string) slog.Handler {
	return recordingHandler{h.Handler.WithGroup(name), h.msg, h.got}
}

// A state bucket with fewer replicas than a stream of its connector, on a
// three-node cluster, is warned of twice: jetlake plan adds a warn check
// that names the bucket, the stream and both replica counts, and run logs
// a warning with the same four at start, and still exports. A bucket with
// as many replicas as the stream gets neither warning.
func TestAStateBucketWithFewerReplicasThanItsStreamIsWarnedOf(t *testing.T) {
	t.Parallel()
	servers := exportertest.NATSCluster(t, 3)
	url := exportertest.ClusterURL(servers)
	ms := shared.MinIO(t)
	wantTestCredentials(t, ms)
	for _, tc := range []struct {
		name           string
		bucketReplicas int
		warn           bool
	}{
		{"bucket on one replica, stream on three", 1, true},
		{"bucket and stream on three", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			n := seq.Add(1)
			stream := fmt.Sprintf("REPLICAS%d", n)
			stateBucket := fmt.Sprintf("replicas_state_%d", n)
			s3Bucket := fmt.Sprintf("replicas-%d-%d", os.Getpid(), n)
			_, js := clusterStream(t, ctx, url, stream, stream+".>")
			// File storage, no TTL, no limits: a bucket run does not
			// refuse (state.Unsafe), with its replicas alone short.
			waitFor(t, time.Minute, "the state bucket", func() bool {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				_, err := js.CreateKeyValue(cctx, jetstream.KeyValueConfig{
					Bucket: stateBucket, History: 1, Storage: jetstream.FileStorage, Replicas: tc.bucketReplicas,
				})
				return err == nil
			})
			if err := ms.CreateBucket(ctx, s3Bucket); err != nil {
				t.Fatal(err)
			}
			const msgs = 5
			if err := publishThrough(ctx, js, 0, msgs, func(i int) string { return fmt.Sprintf("%s.s%d", stream, i%2) }); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "replicas.toml")
			if err := os.WriteFile(file, []byte(fmt.Sprintf(`name = "replicas%d"
[nats]
url = %q
[[streams]]
stream = %q
[s3]
bucket = %q
endpoint = %q
prefix = "raw"
access_key_id_env = "JETLAKE_TEST_ACCESS_KEY"
secret_access_key_env = "JETLAKE_TEST_SECRET_KEY"
[rotation]
max_messages_per_file = %d
max_file_age = "1s"
[state]
bucket = %q
`, n, url, stream, s3Bucket, ms.Endpoint, msgs, stateBucket)), 0o644); err != nil {
				t.Fatal(err)
			}
			conns, err := config.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			c := conns[0]

			// (a) jetlake plan.
			r := plan.Run(ctx, c, plan.Options{Timeout: 5 * time.Second, Cleanup: true})
			var checks []string
			checked := false // the bucket's limits were read
			var warned []plan.Check
			for _, ch := range r.Checks {
				checks = append(checks, string(ch.Status)+" "+ch.Msg)
				if ch.Status == plan.OK && strings.HasPrefix(ch.Msg, fmt.Sprintf("state bucket %s: exists (", stateBucket)) &&
					strings.Contains(ch.Msg, fmt.Sprintf(" %d replicas, no expiry)", tc.bucketReplicas)) {
					checked = true
				}
				if strings.Contains(ch.Msg, "fewer than stream") {
					warned = append(warned, ch)
				}
			}
			if !checked {
				t.Fatalf("plan did not read state bucket %s with %d replicas:\n%s", stateBucket, tc.bucketReplicas, strings.Join(checks, "\n"))
			}
			if n := r.Count(plan.Fail); n > 0 {
				t.Fatalf("plan has %d failed checks:\n%s", n, strings.Join(checks, "\n"))
			}
			want := fmt.Sprintf("state bucket %s: 1 replicas, fewer than stream %s's 3: ", stateBucket, stream)
			switch {
			case tc.warn && (len(warned) != 1 || warned[0].Status != plan.Warn || !strings.HasPrefix(warned[0].Msg, want)):
				t.Fatalf("plan warns %v; want one warn check %q...:\n%s", warned, want, strings.Join(checks, "\n"))
			case !tc.warn && len(warned) > 0:
				t.Fatalf("plan warns %v with a bucket as replicated as the stream", warned)
			}

			// (b) jetlake run, until the messages are exported.
			got := &loggedRecords{}
			log := slog.New(recordingHandler{testLogger(t).Handler(), fewerReplicasWarning, got})
			ex, err := exporter.New(c, exporter.Options{Logger: log, UntilIdle: true, Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			rctx, rcancel := context.WithTimeout(ctx, 45*time.Second)
			defer rcancel()
			if err := ex.Run(rctx); err != nil {
				t.Fatalf("run: %v", err)
			}
			cons, err := js.Consumer(ctx, stream, c.Streams[0].Consumer)
			if err != nil {
				t.Fatal(err)
			}
			info, err := cons.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.AckFloor.Stream != msgs {
				t.Fatalf("ack floor %d after the run; want %d", info.AckFloor.Stream, msgs)
			}
			got.mu.Lock()
			records := got.records
			got.mu.Unlock()
			if !tc.warn {
				if len(records) > 0 {
					t.Fatalf("run warned %v with a bucket as replicated as the stream", records)
				}
				return
			}
			if len(records) == 0 {
				t.Fatalf("run did not log %q", fewerReplicasWarning)
			}
			for _, rec := range records {
				for k, v := range map[string]string{
					"level":           slog.LevelWarn.String(),
					"bucket":          stateBucket,
					"bucket_replicas": "1",
					"stream":          stream,
					"stream_replicas": strconv.Itoa(3),
				} {
					if rec[k] != v {
						t.Fatalf("run logged %v; want %s=%s", rec, k, v)
					}
				}
			}
		})
	}
}

// A state bucket that does not exist yet is created with [state] replicas:
// plan warns when a stream has more, before run creates it short.
func TestPlanWarnsOfAStateBucketToBeCreatedWithFewerReplicasThanItsStream(t *testing.T) {
	t.Parallel()
	servers := exportertest.NATSCluster(t, 3)
	url := exportertest.ClusterURL(servers)
	ms := shared.MinIO(t)
	wantTestCredentials(t, ms)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := seq.Add(1)
	stream := fmt.Sprintf("REPLICAS%d", n)
	clusterStream(t, ctx, url, stream, stream+".>")
	s3Bucket := fmt.Sprintf("replicas-%d-%d", os.Getpid(), n)
	if err := ms.CreateBucket(ctx, s3Bucket); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "replicas.toml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`name = "replicas%d"
[nats]
url = %q
[[streams]]
stream = %q
[s3]
bucket = %q
endpoint = %q
access_key_id_env = "JETLAKE_TEST_ACCESS_KEY"
secret_access_key_env = "JETLAKE_TEST_SECRET_KEY"
[state]
bucket = "replicas_missing_%d"
`, n, url, stream, s3Bucket, ms.Endpoint, n)), 0o644); err != nil {
		t.Fatal(err)
	}
	conns, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	r := plan.Run(ctx, conns[0], plan.Options{Timeout: 5 * time.Second, Cleanup: true})
	want := fmt.Sprintf("state bucket replicas_missing_%d: [state] replicas = 1, fewer than stream %s's 3: ", n, stream)
	var checks []string
	found := false
	for _, ch := range r.Checks {
		checks = append(checks, string(ch.Status)+" "+ch.Msg)
		found = found || ch.Status == plan.Warn && strings.HasPrefix(ch.Msg, want)
	}
	if !found {
		t.Fatalf("plan lacks a warn check %q...:\n%s", want, strings.Join(checks, "\n"))
	}
}
