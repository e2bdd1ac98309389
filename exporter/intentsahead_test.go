package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/state"
	"github.com/jetlake/jetlake/internal/statekey"
)

// bulkKV is a state store that writes many keys in one go, counting the
// keys each way writes; refuse fails the bulk write of those keys.
type bulkKV struct {
	*exportertest.MemKV
	creates, bulkCreates, bulkDeletes int
	refuse                            map[string]bool
}

func (b *bulkKV) Create(ctx context.Context, key string, value []byte) error {
	b.creates++
	return b.MemKV.Create(ctx, key, value)
}

func (b *bulkKV) CreateAll(ctx context.Context, entries map[string][]byte) map[string]error {
	failed := map[string]error{}
	for key, value := range entries {
		b.bulkCreates++
		if b.refuse[key] {
			failed[key] = errors.New("refused")
			continue
		}
		if err := b.MemKV.Create(ctx, key, value); err != nil {
			failed[key] = err
		}
	}
	return failed
}

func (b *bulkKV) DeleteAll(ctx context.Context, keys []string) map[string]error {
	for _, key := range keys {
		b.bulkDeletes++
		_ = b.MemKV.Delete(ctx, key)
	}
	return nil
}

// The intents of batches waiting for an uploader are written in one go;
// the uploader of such a batch writes none, and its object names that
// intent. A batch an uploader has already, or whose intent the bulk write
// did not store, gets its intent from its uploader, before its object.
func TestIntentsOfQueuedBatchesAreWrittenAheadInOneGo(t *testing.T) {
	store := &MemStore{}
	e := testExporter(t, store)
	kv := &bulkKV{MemKV: exportertest.NewMemKV(), refuse: map[string]bool{}}
	e.intents = kv
	var jobs []*job
	for i := range 3 {
		j, _ := sealedJob(t, e, 2, time.Now(), time.Minute)
		j.batch.First, j.batch.Last = uint64(100*i+10), uint64(100*i+11)
		j.intentID = []string{"A", "B", "C"}[i]
		j.stream.intentPrefix = statekey.StreamIntents("c", "S", "c")
		jobs = append(jobs, j)
	}
	r := newRunner(e, nil)
	r.up.queue = jobs
	jobs[0].uploading = true // an uploader has it
	kv.refuse[jobs[2].stream.intentPrefix+"C"] = true

	r.writeIntentsAhead(context.Background())
	if kv.bulkCreates != 2 {
		t.Fatalf("%d intents written in one go, want 2 (the batch an uploader has is its own)", kv.bulkCreates)
	}
	for i, want := range []bool{false, true, false} {
		if got := jobs[i].intentWritten.Load(); got != want {
			t.Fatalf("batch %s: intent written ahead %v, want %v", jobs[i].intentID, got, want)
		}
	}
	key, err := e.objectKey(jobs[1])
	if err != nil {
		t.Fatal(err)
	}
	value, ok := kv.Value(jobs[1].stream.intentPrefix + "B")
	var in state.Intent
	if !ok || json.Unmarshal(value, &in) != nil || in.ID != "B" || in.Key != key || in.Seqs.Len() != 2 {
		t.Fatalf("intent written ahead: %s (found %v), want batch B's at %s", value, ok, key)
	}

	for i, j := range jobs {
		if res := upload(context.Background(), e, j); res.err != nil {
			t.Fatalf("batch %d: %v", i, res.err)
		}
	}
	if kv.creates != 2 {
		t.Fatalf("uploaders wrote %d intents, want 2: the batch an uploader had and the one the bulk write refused", kv.creates)
	}
	for _, j := range jobs {
		key, _ := e.objectKey(j)
		md, err := store.Head(context.Background(), key)
		if err != nil || md[objstore.MetaIntent] != j.intentID {
			t.Fatalf("object of batch %s: %v, intent %q", j.intentID, err, md[objstore.MetaIntent])
		}
		if _, ok := kv.Value(j.stream.intentPrefix + j.intentID); !ok {
			t.Fatalf("no intent for batch %s", j.intentID)
		}
	}
}

// Batches left in the queue when the runner leaves lose the intents
// written ahead for them: nothing of theirs was sent to the store.
func TestIntentsWrittenAheadOfBatchesLeftBehindAreDeleted(t *testing.T) {
	e := testExporter(t, &MemStore{})
	kv := &bulkKV{MemKV: exportertest.NewMemKV()}
	e.intents = kv
	j, _ := sealedJob(t, e, 2, time.Now(), time.Minute)
	j.intentID = "A"
	j.stream.intentPrefix = statekey.StreamIntents("c", "S", "c")
	r := newRunner(e, nil)
	r.up.queue = []*job{j}
	r.writeIntentsAhead(context.Background())
	if kv.Len() != 1 {
		t.Fatalf("%d intents written ahead, want 1", kv.Len())
	}
	r.forgetIntentsAhead(context.Background())
	if kv.Len() != 0 || kv.bulkDeletes != 1 {
		t.Fatalf("%d intents left, %d deleted in one go; want none left", kv.Len(), kv.bulkDeletes)
	}
}
