package formats

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// everyEncoding lists every format with every codec it takes.
func everyEncoding() []Options {
	var all []Options
	for _, f := range []Format{JSONLines, JSONArray, Raw} {
		for _, c := range []Compression{None, Gzip, Zstd} {
			all = append(all, Options{Format: f, Compression: c, Metadata: true, Headers: true, RawDelimiter: []byte("\n")})
		}
	}
	for _, c := range []Compression{Snappy, Zstd, Gzip, None} {
		all = append(all, Options{Format: Parquet, Compression: c, Headers: true, Columns: []Column{
			{Name: "id", Source: "id", Type: TypeInt64},
			{Name: "sku", Source: "items.0.sku", Type: TypeString},
		}})
	}
	for _, f := range []Format{JSONLines, JSONArray} {
		for _, c := range []Compression{None, Zstd} {
			all = append(all, Options{Format: f, Compression: c, Metadata: true, Headers: true, ExactPayload: true})
		}
	}
	return all
}

func encodingName(o Options) string {
	name := string(o.Format) + "/" + string(o.Compression)
	if o.ExactPayload {
		name += "/exact"
	}
	return name
}

// decompress returns the uncompressed body of a json_lines, json_array or
// raw body compressed with c, read with readers other than our writers:
// the standard library's gzip, klauspost's zstd decoder.
func decompress(t testing.TB, c Compression, body []byte) []byte {
	t.Helper()
	switch c {
	case Gzip:
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		zr.Multistream(false) // the body must be one gzip member
		out, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		if zr.Name != "" || !zr.ModTime.IsZero() || zr.Comment != "" || zr.Extra != nil {
			t.Fatalf("gzip header has name %q, time %v, comment %q, extra %q", zr.Name, zr.ModTime, zr.Comment, zr.Extra)
		}
		if err := zr.Reset(bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		if _, err := io.Copy(io.Discard, zr); err != nil {
			t.Fatal(err)
		}
		return out
	case Zstd:
		zr, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1))
		if err != nil {
			t.Fatalf("zstd: %v", err)
		}
		defer zr.Close()
		out, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("zstd: %v", err)
		}
		return out
	}
	return body
}

func TestCompressedBodiesDecompressToTheUncompressedBody(t *testing.T) {
	t.Parallel()
	records := benchRecords(6000) // about 2 MiB: several chunks
	for _, f := range []Format{JSONLines, JSONArray, Raw} {
		for _, n := range []int{0, 1, 2, 700, 797, 798, 799, 800, len(records)} {
			plain := encodeBody(t, Options{Format: f, Metadata: true, RawDelimiter: []byte("\n")}, records[:n]...)
			for _, c := range []Compression{Gzip, Zstd} {
				body := encodeBody(t, Options{Format: f, Compression: c, Metadata: true, RawDelimiter: []byte("\n")}, records[:n]...)
				if got := decompress(t, c, body); !bytes.Equal(got, plain) {
					t.Errorf("%s/%s, %d records: decompressed body (%d bytes) differs from the uncompressed one (%d bytes)", f, c, n, len(got), len(plain))
				}
				if n == len(records) && len(body) > len(plain)/3 {
					t.Errorf("%s/%s: %d bytes compress to %d", f, c, len(plain), len(body))
				}
			}
		}
	}
}

func TestTheSameRecordsGiveTheSameBytes(t *testing.T) {
	t.Parallel()
	records := benchRecords(5000)
	extra := rec(`{"dropped": true}`)
	for _, opts := range everyEncoding() {
		t.Run(encodingName(opts), func(t *testing.T) {
			t.Parallel()
			want := encodeBody(t, opts, records...)

			// Another encoder, whose batch has records dropped along the
			// way, and which is used twice.
			b := newBatch(t, opts)
			for round := range 2 {
				b.Reset()
				for i, r := range records {
					if err := b.Append(r); err != nil {
						t.Fatal(err)
					}
					if i%97 == 0 {
						if err := b.Append(extra); err != nil {
							t.Fatal(err)
						}
						b.DropLast()
					}
				}
				got, err := bytesOf(b.Finish())
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("round %d: %d bytes differ from the %d of another encoder", round, len(got), len(want))
				}
				again, err := bytesOf(b.Finish())
				if err != nil || !bytes.Equal(again, want) {
					t.Fatalf("round %d: Finish twice gave other bytes (%v)", round, err)
				}
			}
		})
	}
}

func TestDropLastRestoresSizeAndMemSize(t *testing.T) {
	records := benchRecords(3000)
	for _, opts := range everyEncoding() {
		t.Run(encodingName(opts), func(t *testing.T) {
			b := newBatch(t, opts)
			for i, r := range records {
				size, mem, n := b.Size(), b.MemSize(), b.Len()
				if err := b.Append(r); err != nil {
					t.Fatal(err)
				}
				if b.Size() <= size && opts.Compression == None && opts.Format != Parquet {
					t.Fatalf("Size() = %d after an append, was %d", b.Size(), size)
				}
				if opts.Format != Parquet && opts.Compression == None && (b.MemSize() < b.Size() || b.MemSize() > b.Size()+maxChunk) {
					t.Fatalf("MemSize() = %d, Size() = %d; want at least Size and at most a chunk more without compression", b.MemSize(), b.Size())
				}
				if i%10 == 0 {
					b.DropLast()
					if b.Size() != size || b.MemSize() != mem || b.Len() != n {
						t.Fatalf("after DropLast: Size %d, MemSize %d, Len %d; want %d, %d, %d", b.Size(), b.MemSize(), b.Len(), size, mem, n)
					}
					if err := b.Append(r); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := b.Finish(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestEveryBatchHasTheSameLifecycle(t *testing.T) {
	records := benchRecords(2000)
	for _, opts := range everyEncoding() {
		t.Run(encodingName(opts), func(t *testing.T) {
			b := newBatch(t, opts)
			empty := b.Size()
			for _, r := range records {
				if err := b.Append(r); err != nil {
					t.Fatal(err)
				}
			}
			body, err := bytesOf(b.Finish())
			if err != nil {
				t.Fatal(err)
			}
			want := bytes.Clone(body)
			if b.Size() != len(body) || b.Len() != len(records) {
				t.Fatalf("after Finish Size() = %d, Len() = %d; body has %d bytes, %d records appended", b.Size(), b.Len(), len(body), len(records))
			}
			if b.MemSize() < len(body) {
				t.Fatalf("MemSize() = %d after Finish, less than the %d bytes of the body", b.MemSize(), len(body))
			}
			if err := b.Append(records[0]); !errors.Is(err, ErrFinished) {
				t.Fatalf("Append after Finish = %v, want ErrFinished", err)
			}
			b.DropLast() // does nothing after Finish
			if got, _ := bytesOf(b.Finish()); !bytes.Equal(got, want) {
				t.Fatalf("Finish after a refused Append returned other bytes")
			}
			b.Reset()
			if b.Len() != 0 || b.Size() != empty {
				t.Fatalf("after Reset Len() = %d, Size() = %d; want 0, %d", b.Len(), b.Size(), empty)
			}
			for _, r := range records {
				if err := b.Append(r); err != nil {
					t.Fatal(err)
				}
			}
			if got, _ := bytesOf(b.Finish()); !bytes.Equal(got, want) {
				t.Fatalf("a reset batch gives other bytes")
			}
		})
	}
}
