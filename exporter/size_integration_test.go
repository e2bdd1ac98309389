package exporter_test

import (
	"context"
	"encoding/base64"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/exportertest"
)

// Compressed objects keep to max_file_size (within about 1%) even when the
// payloads do not compress, and a message larger than max_file_size gets
// an object of its own, also among many subjects whose buffers are too
// small yet for a learned compression ratio.
func TestCompressedObjectsKeepToTheirSizeAndLargeMessagesGoAlone(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte("max_payload: 8MB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := exportertest.NATS(t, exportertest.NATSOptions{Args: []string{"-c", conf}})
	e := newEnv(t, ns, shared.MinIO(t), `
max_file_size = "1MiB"
max_messages_per_file = 0
max_file_age = "20s"`)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(16, 1))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return []byte(base64.StdEncoding.EncodeToString(b))
	}
	large := map[uint64]bool{}
	for i := range 20000 {
		data := random(768) // about 1 KB of base64
		if i == 1500 || i == 3000 {
			data = random((2 + 3*(i/3000)) << 20 * 3 / 4) // 2 MB, then 5 MB
		}
		ack, err := e.js.Publish(ctx, e.stream+".s"+strconv.Itoa(i%10), data)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 1<<20 {
			large[ack.Sequence] = true
		}
	}
	for _, tt := range []struct {
		name string
		mod  func(c *config.Connector)
	}{
		{"jsonl-zstd", func(c *config.Connector) { c.Output.Compression = formats.Zstd }},
		{"raw-gzip", func(c *config.Connector) {
			c.Output.Format, c.Output.Compression, c.Output.RawDelimiter = formats.Raw, formats.Gzip, "\n"
		}},
	} {
		e.runVariant(tt.name, tt.mod)
		messages := 0
		alone := map[uint64]bool{}
		for obj := range e.mc.ListObjects(ctx, e.bucket, minio.ListObjectsOptions{Prefix: tt.name + "/", Recursive: true}) {
			if obj.Err != nil {
				t.Fatal(obj.Err)
			}
			if strings.Contains(obj.Key, "/_jetlake/") {
				continue
			}
			st, err := e.mc.StatObject(ctx, e.bucket, obj.Key, minio.StatObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			md := st.UserMetadata
			count, _ := strconv.Atoi(md["Jetlake-Count"])
			messages += count
			if count == 1 {
				q, _ := strconv.ParseUint(md["Jetlake-First-Seq"], 10, 64)
				alone[q] = true
			} else if obj.Size > 1<<20+1<<20/100 {
				t.Errorf("%s: %s holds %d messages in %d bytes, more than max_file_size (1 MiB) + 1%%", tt.name, obj.Key, count, obj.Size)
			}
		}
		if messages != 20000 {
			t.Errorf("%s: %d messages in objects, want 20000", tt.name, messages)
		}
		for q := range large {
			if !alone[q] {
				t.Errorf("%s: the large message %d shares an object", tt.name, q)
			}
		}
	}
}
