package formats

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// chunkRecords returns n records of a few hundred bytes that compress the
// way JSON events do.
func chunkRecords(n int) []*Record {
	r := rand.New(rand.NewPCG(7, 8))
	recs := make([]*Record, n)
	for i := range recs {
		recs[i] = &Record{
			Stream: "S", Subject: fmt.Sprintf("events.s%d", i%7), Sequence: uint64(i + 1),
			Time: time.Unix(1764399600, int64(i)*1000).UTC(),
			Data: fmt.Appendf(nil, `{"id":%d,"user":"u%d","amount":%d.%02d,"note":"%x"}`,
				i, r.IntN(500), r.IntN(1000), r.IntN(100), r.Uint64()),
		}
	}
	return recs
}

// TestDeferredCompressionWritesTheSameBytes fills a batch whose chunks are
// compressed on other goroutines, in any order, some left to Finish, and
// compares its body with an inline batch's, over several fills of one
// reused batch.
func TestDeferredCompressionWritesTheSameBytes(t *testing.T) {
	t.Parallel()
	recs := chunkRecords(12000) // about 1.5 MiB of records: several chunks
	for _, format := range []Format{JSONLines, JSONArray, Raw} {
		for _, codec := range []Compression{Gzip, Zstd} {
			t.Run(string(format)+"/"+string(codec), func(t *testing.T) {
				t.Parallel()
				opts := Options{Format: format, Compression: codec, Metadata: format != Raw, RawDelimiter: []byte("\n")}
				want := encodeBody(t, opts, recs...)
				opts.DeferCompression = true
				enc, err := New(opts)
				if err != nil {
					t.Fatal(err)
				}
				src := enc.(ChunkSource)
				b := enc.NewBatch()
				for fill := range 3 {
					var wg sync.WaitGroup
					var chunks []*Chunk
					for i, r := range recs {
						if err := b.Append(r); err != nil {
							t.Fatal(err)
						}
						if i%500 == 0 {
							// A record that is dropped again must
							// not change the output either.
							b.DropLast()
							if err := b.Append(r); err != nil {
								t.Fatal(err)
							}
						}
						chunks = src.TakeChunks(chunks[:0])
						for j, c := range chunks {
							if (i+j+fill)%3 == 0 {
								continue // left to Finish
							}
							wg.Go(func() {
								time.Sleep(time.Duration(j%3) * time.Millisecond)
								c.Compress()
							})
						}
					}
					if b.MemSize() <= 0 || b.Size() <= 0 {
						t.Fatalf("fill %d: Size %d, MemSize %d", fill, b.Size(), b.MemSize())
					}
					body, err := b.Finish()
					if err != nil {
						t.Fatal(err)
					}
					if got := body.Bytes(); !bytes.Equal(got, want) {
						t.Fatalf("fill %d: %d bytes differ from the %d of inline compression", fill, len(got), len(want))
					}
					if b.Size() != int(body.Len()) {
						t.Fatalf("fill %d: Size %d after Finish, body %d", fill, b.Size(), body.Len())
					}
					wg.Wait()
					b.Reset()
				}
				if got := src.TakeChunks(nil); len(got) != 0 {
					t.Fatalf("%d chunks left in the encoder", len(got))
				}
			})
		}
	}
}

func TestOnlyDeferringCompressedEncodersAreChunkSources(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want bool
	}{
		{Options{Compression: Zstd}, false},
		{Options{Compression: Gzip, DeferCompression: true}, true},
		{Options{Compression: Zstd, DeferCompression: true}, true},
		{Options{DeferCompression: true}, false},
		{Options{Format: Parquet, Compression: Zstd, DeferCompression: true}, false},
	} {
		enc, err := New(tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := enc.(ChunkSource); ok != tt.want {
			t.Errorf("%+v: a ChunkSource: %v, want %v", tt.opts, ok, tt.want)
		}
	}
}
