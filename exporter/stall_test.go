package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/internal/statekey"
)

// stallingState is a state store whose calls, all but intent creation,
// block while it is stalled, as a state bucket on a slow or partitioned
// server would.
type stallingState struct {
	state.Store
	mu      sync.Mutex
	stalled chan struct{} // closed when the stall ends; nil when not stalled
	calls   int           // calls that met the stall
}

func (s *stallingState) stall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalled = make(chan struct{})
}

func (s *stallingState) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.stalled)
	s.stalled = nil
}

func (s *stallingState) wait(ctx context.Context) error {
	s.mu.Lock()
	ch := s.stalled
	if ch != nil {
		s.calls++
	}
	s.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *stallingState) Delete(ctx context.Context, key string) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Store.Delete(ctx, key)
}

func (s *stallingState) List(ctx context.Context, prefix string) (map[string][]byte, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.Store.List(ctx, prefix)
}

func (s *stallingState) Get(ctx context.Context, key string) ([]byte, uint64, error) {
	if err := s.wait(ctx); err != nil {
		return nil, 0, err
	}
	return s.Store.Get(ctx, key)
}

func (s *stallingState) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if err := s.wait(ctx); err != nil {
		return 0, err
	}
	return s.Store.Update(ctx, key, value, rev)
}

// While the state bucket stalls (every call but intent creation blocks),
// deliveries and acks go on: resolving an intent left by a crash,
// forgetting intents and writing the export record wait beside the loop.
func TestAStalledStateBucketStopsNeitherDeliveriesNorAcks(t *testing.T) {
	t.Parallel()
	ns := exportertest.NATS(t, exportertest.NATSOptions{})
	ms := exportertest.MinIO(t, exportertest.MinIOOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := ms.CreateBucket(ctx, "stall"); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(ns.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// Work-queue retention: read with explicit acks, whose floor shows
	// the stores go on while the bucket stalls (a limits stream's export
	// record is written to the stalling bucket itself).
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"S.>"}, Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		t.Fatal(err)
	}
	// TestMain sets the credentials the connector names for the process.
	if os.Getenv("JETLAKE_TEST_ACCESS_KEY") != ms.AccessKey || os.Getenv("JETLAKE_TEST_SECRET_KEY") != ms.SecretKey {
		t.Fatal("$JETLAKE_TEST_ACCESS_KEY and $JETLAKE_TEST_SECRET_KEY are not MinIO's credentials")
	}
	file := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`
name = "stall"
[nats]
url = %q
[[streams]]
stream = "S"
ack_wait = "30s"
[s3]
bucket = "stall"
endpoint = %q
prefix = "raw"
access_key_id_env = "JETLAKE_TEST_ACCESS_KEY"
secret_access_key_env = "JETLAKE_TEST_SECRET_KEY"
[output]
format = "json_lines"
path_template = "{stream}/{subject}"
[rotation]
max_messages_per_file = 10
max_file_age = "1s"
`, ns.URL, ms.Endpoint)), 0o644); err != nil {
		t.Fatal(err)
	}
	conns, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	c := conns[0]

	// A crash left an intent whose object is missing: once its writer
	// must have given up, it is resolved, which deletes it. Its sequences
	// are the stream's (an intent past the stream's last sequence is one
	// jetlake never wrote, and is ignored) but purged since, so that no
	// delivery waits for the resolution.
	for range 10 {
		if _, err := js.Publish(ctx, "S.x", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	kv, err := state.Open(ctx, js, c.State.Bucket, 1)
	if err != nil {
		t.Fatal(err)
	}
	created := st.CachedInfo().Created.UTC()
	in := state.Intent{ID: "lost", Key: "raw/S/S.x/00000000000000000005-00000000000000000010.jsonl", Stream: "S",
		StreamCreated: created, Consumer: c.Streams[0].Consumer, Seqs: progress.NewSeqs([]uint64{5, 10}), Created: time.Now()}
	value, _ := json.Marshal(&in)
	if err := kv.Create(ctx, statekey.StreamIntents(c.Name, "S", c.Streams[0].Consumer)+in.ID, value); err != nil {
		t.Fatal(err)
	}

	e, err := New(c, Options{Logger: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	stalling := &stallingState{}
	e.wrapState = func(is state.Store) state.Store { stalling.Store = is; return stalling }
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(rctx) }()
	defer func() {
		stop()
		<-done
	}()
	exportertest.WaitFor(t, 30*time.Second, "the exporter to be ready", func() bool { return e.Ready() == nil })

	stalling.stall()
	cons, err := js.Consumer(ctx, "S", c.Streams[0].Consumer)
	if err != nil {
		t.Fatal(err)
	}
	// For longer than the intent's resolution and the record's writes
	// take to come due, publish and watch the ack floor follow.
	for round := range 6 {
		var last uint64
		for i := range 20 {
			ack, err := js.Publish(ctx, fmt.Sprintf("S.s%d", i%4), []byte(`{"round":`+fmt.Sprint(round)+`}`))
			if err != nil {
				t.Fatal(err)
			}
			last = ack.Sequence
		}
		exportertest.WaitFor(t, 10*time.Second, fmt.Sprintf("round %d acked while the stalling bucket stalls", round), func() bool {
			info, err := cons.Info(ctx)
			return err == nil && info.AckFloor.Stream >= last
		})
		time.Sleep(2 * time.Second)
	}
	stalling.mu.Lock()
	calls := stalling.calls
	stalling.mu.Unlock()
	if calls == 0 {
		t.Fatal("nothing met the stall: the test tests nothing")
	}
	t.Logf("%d stalling calls met the stall", calls)
	stalling.release()
	exportertest.WaitFor(t, 30*time.Second, "the crash's intent to be resolved", func() bool {
		_, _, err := kv.Get(ctx, statekey.StreamIntents(c.Name, "S", c.Streams[0].Consumer)+in.ID)
		return errors.Is(err, state.ErrNoRecord)
	})
}

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	if testing.Verbose() {
		w.t.Log(string(p))
	}
	return len(p), nil
}
