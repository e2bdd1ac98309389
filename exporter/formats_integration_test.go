package exporter_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/formatstest"
	"github.com/jetlake/jetlake/internal/objstore"
)

// objects returns every object under prefix with its body.
func (e *env) objects(prefix string) map[string][]byte {
	e.t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	for obj := range e.mc.ListObjects(ctx, e.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			e.t.Fatal(obj.Err)
		}
		out[obj.Key] = e.get(ctx, obj.Key)
	}
	return out
}

// runVariant exports the stream with a connector changed by mod, under its
// own prefix and consumer, until idle.
func (e *env) runVariant(name string, mod func(c *config.Connector)) *config.Connector {
	e.t.Helper()
	c := e.connector()
	c.S3.Prefix = name
	c.Streams[0].Consumer = name
	mod(c)
	e.runUntilIdle(c, 3*time.Minute)
	return c
}

func TestParquetWithTypedColumnsHoldsWhatWasPublished(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_file_size = "1MiB"
max_messages_per_file = 0
max_file_age = "20s"`)
	const n = 50000
	ctx := context.Background()
	for i := range n {
		data := fmt.Sprintf(`{"user":{"id":%d,"name":"user-%d"},"items":[{"sku":"sku-%d","qty":%d}],"total":%d.25,"paid":%v,"at":"2026-11-29T07:%02d:%02dZ"}`,
			i, i, i%100, i%7, i, i%2 == 0, i%60, i%60)
		if _, err := e.js.PublishAsync(fmt.Sprintf("%s.s%d", e.stream, i%5), []byte(data)); err != nil {
			t.Fatal(err)
		}
		if i%2000 == 1999 {
			<-e.js.PublishAsyncComplete()
		}
	}
	<-e.js.PublishAsyncComplete()
	c := e.runVariant("pq", func(c *config.Connector) {
		c.Output.Format = formats.Parquet
		c.Output.Compression = formats.Zstd
		c.Output.RowGroupSize = 64 << 20
		c.Output.KeepPayload = false
		c.Output.Columns = []config.Column{
			{Name: "user_id", Source: "user.id", Type: formats.TypeInt64},
			{Name: "user_name", Source: "user.name", Type: formats.TypeString},
			{Name: "sku", Source: "items.0.sku", Type: formats.TypeString},
			{Name: "total", Source: "total", Type: formats.TypeDouble},
			{Name: "paid", Source: "paid", Type: formats.TypeBoolean},
			{Name: "at", Source: "at", Type: formats.TypeTimestamp},
		}
	})
	seen := map[int64]bool{}
	objects := 0
	for key, body := range e.objects("pq/") {
		if strings.HasPrefix(key, "pq/_jetlake/") {
			continue
		}
		objects++
		if !strings.HasSuffix(key, ".parquet") {
			t.Fatalf("object %s is not .parquet", key)
		}
		if len(body) > 1<<20*11/10 {
			t.Fatalf("object %s is %d bytes, over max_file_size by more than 10%%", key, len(body))
		}
		pf := formatstest.ReadParquet(t, body)
		for _, row := range pf.Rows {
			seq := row["sequence"].(int64)
			if seen[seq] {
				t.Fatalf("sequence %d twice", seq)
			}
			seen[seq] = true
			i := seq - 1 // published in order into a new stream
			at := time.Date(2026, 11, 29, 7, int(i%60), int(i%60), 0, time.UTC).UnixMicro()
			want := map[string]any{
				"user_id": i, "user_name": fmt.Sprintf("user-%d", i), "sku": fmt.Sprintf("sku-%d", i%100),
				"total": float64(i) + 0.25, "paid": i%2 == 0, "at": at,
				"subject": fmt.Sprintf("%s.s%d", e.stream, i%5), "stream": e.stream,
			}
			for k, v := range want {
				if row[k] != v {
					t.Fatalf("sequence %d: %s = %#v, want %#v", seq, k, row[k], v)
				}
			}
			if _, ok := row["payload"]; ok {
				t.Fatalf("payload column written with keep_payload = false")
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("%d rows in %d objects, want %d", len(seen), objects, n)
	}
	store, _ := objstore.NewS3Store(c.S3)
	reports, err := lake.Verify(ctx, c, e.js, store, lake.VerifyOptions{Deep: true})
	if err != nil || !reports[0].OK() {
		t.Fatalf("verify: %v %+v", err, reports)
	}
}

// records decodes every JSON line of the objects under prefix, decompressing
// by extension, and returns them sorted.
func (e *env) records(prefix string) []string {
	e.t.Helper()
	var out []string
	for key, body := range e.objects(prefix) {
		if strings.HasPrefix(key, prefix+"_jetlake/") {
			continue
		}
		switch {
		case strings.HasSuffix(key, ".jsonl.gz"):
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				e.t.Fatal(err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				e.t.Fatal(err)
			}
		case strings.HasSuffix(key, ".jsonl.zst"):
			zr, _ := zstd.NewReader(nil)
			var err error
			if body, err = zr.DecodeAll(body, nil); err != nil {
				e.t.Fatal(err)
			}
			zr.Close()
		case strings.HasSuffix(key, ".jsonl"):
		default:
			e.t.Fatalf("unexpected object %s", key)
		}
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			out = append(out, sc.Text())
		}
	}
	sort.Strings(out)
	return out
}

func TestCompressedJSONLinesHoldTheSameRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_file_size = "64KiB"
max_messages_per_file = 0
max_file_age = "20s"`)
	e.publish(5000, 4)
	e.runVariant("plain", func(*config.Connector) {})
	e.runVariant("gz", func(c *config.Connector) { c.Output.Compression = formats.Gzip })
	e.runVariant("zst", func(c *config.Connector) { c.Output.Compression = formats.Zstd })
	plain := e.records("plain/")
	if len(plain) != 5000 {
		t.Fatalf("%d plain records, want 5000", len(plain))
	}
	for _, prefix := range []string{"gz/", "zst/"} {
		got := e.records(prefix)
		if strings.Join(got, "\n") != strings.Join(plain, "\n") {
			t.Fatalf("%s records differ from the uncompressed ones (%d vs %d)", prefix, len(got), len(plain))
		}
	}
}

func TestRejectedMessagesLandUnderJetlakeRejectedAndNowhereElse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 1000
max_file_age = "2s"`)
	ctx := context.Background()
	var bad []uint64
	for i := range 100 {
		data := fmt.Sprintf(`{"user":{"id":%d}}`, i)
		if i%10 == 3 {
			data = `{"user":{"id":"not a number"}}`
		}
		ack, err := e.js.Publish(ctx, e.stream+".s0", []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		if i%10 == 3 {
			bad = append(bad, ack.Sequence)
		}
	}
	c := e.runVariant("rej", func(c *config.Connector) {
		c.Output.Format = formats.Parquet
		c.Output.Compression = formats.Snappy
		c.Output.RowGroupSize = 64 << 20
		c.Output.KeepPayload = true
		c.Output.Columns = []config.Column{{Name: "user_id", Source: "user.id", Type: formats.TypeInt64}}
	})
	var rejected []uint64
	rows := 0
	for key, body := range e.objects("rej/") {
		switch {
		case strings.HasPrefix(key, "rej/_jetlake/rejected/"+e.stream+"/") && strings.HasSuffix(key, ".jsonl"):
			sc := bufio.NewScanner(bytes.NewReader(body))
			for sc.Scan() {
				var r struct {
					Sequence uint64              `json:"sequence"`
					Headers  map[string][]string `json:"headers"`
				}
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatal(err)
				}
				if reason := r.Headers[exporter.RejectReasonHeader]; len(reason) != 1 || !strings.Contains(reason[0], "user_id") {
					t.Fatalf("rejected record %d without a reason naming the column: %v", r.Sequence, r.Headers)
				}
				rejected = append(rejected, r.Sequence)
			}
		case strings.HasPrefix(key, "rej/_jetlake/"):
		default:
			for _, row := range formatstest.ReadParquet(t, body).Rows {
				seq := uint64(row["sequence"].(int64))
				for _, b := range bad {
					if seq == b {
						t.Fatalf("rejected sequence %d is in data object %s", seq, key)
					}
				}
				rows++
			}
		}
	}
	sort.Slice(rejected, func(i, j int) bool { return rejected[i] < rejected[j] })
	if fmt.Sprint(rejected) != fmt.Sprint(bad) || rows != 100-len(bad) {
		t.Fatalf("rejected %v and %d rows; want %v and %d", rejected, rows, bad, 100-len(bad))
	}
	cons, err := e.js.Consumer(ctx, e.stream, "rej")
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.ackView(info, c.Name)
	if info.NumAckPending != 0 || info.AckFloor.Stream != 100 {
		t.Fatalf("consumer: %d unacked, ack floor %d; want everything acked", info.NumAckPending, info.AckFloor.Stream)
	}
	store, _ := objstore.NewS3Store(c.S3)
	reports, err := lake.Verify(ctx, c, e.js, store, lake.VerifyOptions{Deep: true})
	if err != nil || !reports[0].OK() || reports[0].Rejected == 0 {
		t.Fatalf("verify: %v %+v", err, reports[0])
	}
}

// With keep_exact_payload, the connector's objects give every payload
// back byte for byte through formats.ReadRecords; without it, JSON
// payloads come back compacted.
func TestKeepExactPayloadKeepsTheBytesOfJSONPayloads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_file_size = "64KiB"
max_messages_per_file = 0
max_file_age = "20s"`)
	payload := func(i int) []byte {
		switch i % 4 {
		case 0:
			return fmt.Appendf(nil, "{\n  \"i\": %d,\n  \"tags\": [ \"a\", \"b\" ]\n}\n", i)
		case 1:
			return fmt.Appendf(nil, `{"i":%d}`, i) // compact
		case 2:
			return []byte(" null ")
		}
		return fmt.Appendf(nil, "text %d\n", i)
	}
	const n = 2000
	e.publishEach(n, func(i int) (string, []byte) { return fmt.Sprintf("%s.s%d", e.stream, i%3), payload(i) })
	e.runVariant("exact", func(c *config.Connector) {
		c.Output.KeepExactPayload = true
		c.Output.Compression = formats.Zstd
	})
	e.runVariant("compact", func(c *config.Connector) {})
	for _, prefix := range []string{"exact/", "compact/"} {
		got := map[uint64][]byte{}
		for key, body := range e.objects(prefix) {
			if strings.HasPrefix(key, prefix+"_jetlake/") {
				continue
			}
			err := formats.ReadRecords(key, bytes.NewReader(body), int64(len(body)), func(r *formats.Record) error {
				got[r.Sequence] = bytes.Clone(r.Data)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if len(got) != n {
			t.Fatalf("%s: %d records, want %d", prefix, len(got), n)
		}
		for seq, data := range got {
			want := payload(int(seq - 1))
			if prefix == "compact/" {
				var b bytes.Buffer
				if json.Compact(&b, want) == nil {
					want = b.Bytes()
					if b.String() == "null" {
						want = nil
					}
				}
			}
			if !bytes.Equal(data, want) {
				t.Fatalf("%s: sequence %d: payload %q, want %q", prefix, seq, data, want)
			}
		}
	}
}
