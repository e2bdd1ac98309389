package exporter_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/internal/statekey"
)

func TestThreeNodeClusterSurvivesLeaderChangeAndANodeLoss(t *testing.T) {
	t.Parallel()
	servers := exportertest.NATSCluster(t, 3)
	url := exportertest.ClusterURL(servers)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	nc, js := clusterStream(t, ctx, url, "CLUSTER", "cluster.>")
	bucket := fmt.Sprintf("cluster-%d-%d", os.Getpid(), seq.Add(1))
	if err := shared.MinIO(t).CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	wantTestCredentials(t, shared.MinIO(t))
	file := filepath.Join(t.TempDir(), "cluster.toml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`name = "cluster"
[nats]
url = %q
[[streams]]
stream = "CLUSTER"
ack_wait = "20s"
[s3]
bucket = %q
endpoint = %q
prefix = "raw"
access_key_id_env = "JETLAKE_TEST_ACCESS_KEY"
secret_access_key_env = "JETLAKE_TEST_SECRET_KEY"
[rotation]
max_messages_per_file = 200
max_file_age = "1s"
[state]
replicas = 3
`, url, bucket, shared.MinIO(t).Endpoint)), 0o644); err != nil {
		t.Fatal(err)
	}
	conns, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	c := conns[0]
	ex, err := exporter.New(c, exporter.Options{Logger: testLogger(t), Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ex.Run(runCtx) }()

	const n = 6000
	publish := func(from, to int) {
		t.Helper()
		if err := publishThrough(ctx, js, from, to, func(i int) string { return fmt.Sprintf("cluster.s%d", i%6) }); err != nil {
			t.Fatal(err)
		}
	}
	// healthy waits until the stream and the state bucket have a leader and
	// the given number of current replicas: elections on a loaded machine
	// can take a while, and the test is about jetlake, not about them.
	healthy := func(replicas int) {
		t.Helper()
		waitFor(t, 2*time.Minute, "a healthy cluster", func() bool {
			for _, name := range []string{"CLUSTER", "KV_" + config.DefaultStateBucket} {
				ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
				st, err := js.Stream(ictx, name)
				if err != nil {
					cancel()
					return false
				}
				info, err := st.Info(ictx)
				cancel()
				if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
					return false
				}
				current := 1 // the leader
				for _, p := range info.Cluster.Replicas {
					if p.Current && !p.Offline {
						current++
					}
				}
				if current < replicas {
					return false
				}
			}
			return true
		})
	}
	publish(0, n/3)
	healthy(3)
	// The stream leader steps down.
	if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.CLUSTER", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	healthy(3)
	publish(n/3, 2*n/3)
	// A server dies and comes back.
	if err := servers[1].Kill(); err != nil {
		t.Fatal(err)
	}
	healthy(2)
	publish(2*n/3, n)
	if err := servers[1].Restart(); err != nil {
		t.Fatal(err)
	}
	healthy(3)
	// Done once the export record's floor passes the last sequence: the
	// stream is read without acks, so the consumer's ack floor moves at
	// delivery, and a consumer leader's may lag after a node loss.
	records, err := state.Open(ctx, js, c.State.Bucket, 3)
	if err != nil {
		t.Fatal(err)
	}
	recordKey := statekey.Record(c.Name, "CLUSTER", "cluster")
	var last string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		rec, _, err := state.LoadRecord(ictx, records, recordKey)
		cancel()
		if err == nil && rec != nil && rec.Floor >= n {
			break
		}
		switch {
		case err != nil:
			last = "export record: " + err.Error()
		case rec == nil:
			last = "no export record"
		default:
			last = fmt.Sprintf("export record floor %d", rec.Floor)
		}
		select {
		case err := <-done:
			t.Fatalf("the exporter stopped before the export was done: %v (%s)", err, last)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not everything exported after 3m: %s", last)
		}
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	store, err := objstore.NewS3Store(c.S3)
	if err != nil {
		t.Fatal(err)
	}
	reports, err := lake.Verify(ctx, c, js, store, lake.VerifyOptions{Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := reports[0]; !r.OK() || r.Messages != n || r.Scope != (progress.Range{First: 1, Last: n}) || len(r.Markers) != 0 {
		t.Fatalf("verify: scope %v, %d messages, missing %v, overlaps %v, problems %v, loss markers %d (nothing was lost)",
			r.Scope, r.Messages, r.Missing, r.Overlaps, r.Problems, len(r.Markers))
	}
	kv, err := js.KeyValue(ctx, config.DefaultStateBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas != 3 {
		t.Fatalf("state bucket: %v, want 3 replicas", err)
	}
}

// clusterStream connects to a cluster and creates an R3 stream on it,
// retrying while the cluster's peers find each other.
func clusterStream(t *testing.T, ctx context.Context, url, name, subjects string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	// Right after start the cluster may not know all its peers yet.
	waitFor(t, time.Minute, "the stream on three peers", func() bool {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := js.CreateStream(cctx, jetstream.StreamConfig{Name: name, Subjects: []string{subjects}, Replicas: 3})
		return err == nil
	})
	return nc, js
}

// publishThrough publishes messages from to to (message i on subject(i)),
// with message ids, retrying through elections: the stream's duplicate
// window keeps retries from adding messages.
func publishThrough(ctx context.Context, js jetstream.JetStream, from, to int, subject func(i int) string) error {
	for i := from; i < to; i++ {
		for attempt := 0; ; attempt++ {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := js.Publish(pctx, subject(i), []byte(fmt.Sprintf(`{"i":%d}`, i)), jetstream.WithMsgID(fmt.Sprintf("m-%d", i)))
			cancel()
			if err == nil {
				break
			}
			if attempt == 100 {
				return fmt.Errorf("publish %d: %w", i, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}
