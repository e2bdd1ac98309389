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
	"github.com/jetlake/jetlake/exporter/exportertest"
)

func TestThreeNodeClusterSurvivesLeaderChangeAndANodeLoss(t *testing.T) {
	servers, err := exportertest.StartNATSCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range servers {
			s.Stop()
		}
	}()
	url := exportertest.ClusterURL(servers)
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CLUSTER", Subjects: []string{"cluster.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	bucket := fmt.Sprintf("cluster-%d", os.Getpid())
	if err := minioSrv.CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JETLAKE_TEST_ACCESS_KEY", minioSrv.AccessKey)
	t.Setenv("JETLAKE_TEST_SECRET_KEY", minioSrv.SecretKey)
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
`, url, bucket, minioSrv.Endpoint)), 0o644); err != nil {
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

	// Publish with message ids, retrying through the disruptions: the
	// stream's duplicate window keeps retries from adding messages.
	const n = 6000
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			for attempt := 0; ; attempt++ {
				_, err := js.Publish(ctx, fmt.Sprintf("cluster.s%d", i%6), []byte(fmt.Sprintf(`{"i":%d}`, i)),
					jetstream.WithMsgID(fmt.Sprintf("m-%d", i)))
				if err == nil {
					break
				}
				if attempt == 100 {
					t.Fatalf("publish %d: %v", i, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	publish(0, n/3)
	// The stream leader steps down.
	if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.CLUSTER", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	publish(n/3, 2*n/3)
	// A server dies and comes back.
	if err := servers[1].Kill(); err != nil {
		t.Fatal(err)
	}
	publish(2*n/3, n)
	if err := servers[1].Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "everything exported", func() bool {
		cons, err := js.Consumer(ctx, "CLUSTER", "cluster")
		if err != nil {
			return false
		}
		info, err := cons.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.AckFloor.Stream >= n
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	store, err := exporter.NewS3Store(c.S3)
	if err != nil {
		t.Fatal(err)
	}
	reports, err := exporter.Verify(ctx, c, js, store, exporter.VerifyOptions{Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := reports[0]; !r.OK() || r.Messages != n || r.Scope != (exporter.Range{First: 1, Last: n}) {
		t.Fatalf("verify: scope %v, %d messages, missing %v, overlaps %v, problems %v", r.Scope, r.Messages, r.Missing, r.Overlaps, r.Problems)
	}
	kv, err := js.KeyValue(ctx, exporter.StateBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas != 3 {
		t.Fatalf("state bucket: %v, want 3 replicas", err)
	}
}
