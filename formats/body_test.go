package formats

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
)

// bytesOf returns the bytes of what Finish returned, for comparisons.
func bytesOf(b Body, err error) ([]byte, error) {
	return b.Bytes(), err
}

func TestBody(t *testing.T) {
	for _, tt := range []struct {
		name   string
		pieces []string
	}{
		{"empty", nil},
		{"empty pieces", []string{"", ""}},
		{"one byte", []string{"a"}},
		{"one piece", []string{"hello, world"}},
		{"two pieces", []string{"hello, ", "world"}},
		{"bytes", []string{"h", "e", "", "l", "l", "o"}},
		{"uneven", []string{"0123456789", "a", "bcdefghijklmnop", "", "qr", strings.Repeat("s", 100)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var pieces [][]byte
			for _, p := range tt.pieces {
				pieces = append(pieces, []byte(p))
			}
			want := []byte(strings.Join(tt.pieces, ""))
			b := NewBody(pieces...)
			if b.Len() != int64(len(want)) {
				t.Fatalf("Len() = %d, want %d", b.Len(), len(want))
			}
			if got := b.Bytes(); !bytes.Equal(got, want) {
				t.Fatalf("Bytes() = %q, want %q", got, want)
			}
			var w bytes.Buffer
			if n, err := b.WriteTo(&w); n != int64(len(want)) || err != nil || !bytes.Equal(w.Bytes(), want) {
				t.Fatalf("WriteTo = %d, %v, wrote %q; want %d, nil, %q", n, err, w.Bytes(), len(want), want)
			}
			checkReader(t, b, want)
		})
	}
}

func TestBodyBytesOfOnePieceIsThePiece(t *testing.T) {
	p := []byte("abc")
	if got := NewBody(nil, p).Bytes(); &got[0] != &p[0] {
		t.Fatalf("Bytes() of one piece is a copy")
	}
}

// checkReader checks every method of a reader of b, whose bytes are want,
// at every offset.
func checkReader(t *testing.T, b Body, want []byte) {
	t.Helper()
	r := b.NewReader()
	if r.Size() != int64(len(want)) {
		t.Fatalf("Size() = %d, want %d", r.Size(), len(want))
	}
	// iotest.TestReader reads in pieces of every size, seeks and uses
	// ReadAt, and checks what it gets.
	if err := iotest.TestReader(r, want); err != nil {
		t.Fatalf("iotest.TestReader: %v", err)
	}
	for off := range len(want) + 2 {
		for n := range len(want) - off + 3 {
			if n < 0 {
				break
			}
			p := make([]byte, n)
			got, err := r.ReadAt(p, int64(off))
			wantN := max(0, min(n, len(want)-off))
			switch {
			case got != wantN || !bytes.Equal(p[:got], want[min(off, len(want)):min(off, len(want))+wantN]):
				t.Fatalf("ReadAt(%d bytes, %d) = %d %q, want %d", n, off, got, p[:got], wantN)
			case wantN < n && err != io.EOF, off >= len(want) && err != io.EOF:
				t.Fatalf("ReadAt(%d bytes, %d) = %d, %v; want io.EOF", n, off, got, err)
			case wantN == n && off < len(want) && err != nil:
				t.Fatalf("ReadAt(%d bytes, %d) = %d, %v; want no error", n, off, got, err)
			}
		}
		// Seek, Read a little, then WriteTo the rest.
		if pos, err := r.Seek(int64(off), io.SeekStart); pos != int64(off) || err != nil {
			t.Fatalf("Seek(%d, io.SeekStart) = %d, %v", off, pos, err)
		}
		p := make([]byte, 3)
		n, err := r.Read(p)
		if off >= len(want) {
			if n != 0 || err != io.EOF {
				t.Fatalf("Read at %d = %d, %v; want 0, io.EOF", off, n, err)
			}
		} else if n == 0 || err != nil || !bytes.Equal(p[:n], want[off:off+n]) {
			t.Fatalf("Read at %d = %d %q, %v; want %q", off, n, p[:n], err, want[off:min(off+3, len(want))])
		}
		var w bytes.Buffer
		m, err := r.WriteTo(&w)
		rest := want[min(off+n, len(want)):]
		if m != int64(len(rest)) || err != nil || !bytes.Equal(w.Bytes(), rest) {
			t.Fatalf("WriteTo after %d = %d %q, %v; want %q", off+n, m, w.Bytes(), err, rest)
		}
		if pos, _ := r.Seek(0, io.SeekCurrent); pos != max(int64(off+n), int64(len(want))) {
			t.Fatalf("offset after WriteTo = %d, want %d", pos, len(want))
		}
	}
	if pos, err := r.Seek(-1, io.SeekEnd); err != nil && len(want) > 0 || err == nil && pos != int64(len(want)-1) {
		t.Fatalf("Seek(-1, io.SeekEnd) = %d, %v", pos, err)
	}
	if _, err := r.Seek(-1, io.SeekStart); err == nil {
		t.Fatalf("Seek(-1, io.SeekStart) did not fail")
	}
	if _, err := r.Seek(0, 42); err == nil {
		t.Fatalf("Seek(0, 42) did not fail")
	}
	if _, err := r.ReadAt(make([]byte, 1), -1); err == nil {
		t.Fatalf("ReadAt at -1 did not fail")
	}
	r.Reset(b)
	if all, err := io.ReadAll(r); err != nil || !bytes.Equal(all, want) {
		t.Fatalf("ReadAll after Reset = %q, %v", all, err)
	}
}

// shortWriter takes at most n bytes, then fails as a short write.
type shortWriter struct{ n int }

func (w *shortWriter) Write(p []byte) (int, error) {
	if len(p) <= w.n {
		w.n -= len(p)
		return len(p), nil
	}
	n := w.n
	w.n = 0
	return n, nil
}

func TestBodyWriteToShortWrite(t *testing.T) {
	b := NewBody([]byte("abc"), []byte("def"))
	n, err := b.WriteTo(&shortWriter{n: 4})
	if n != 4 || !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("WriteTo = %d, %v; want 4, io.ErrShortWrite", n, err)
	}
	r := b.NewReader()
	n, err = r.WriteTo(&shortWriter{n: 4})
	if n != 4 || !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("BodyReader.WriteTo = %d, %v; want 4, io.ErrShortWrite", n, err)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "ef" {
		t.Fatalf("after a short WriteTo, the rest is %q, want %q", rest, "ef")
	}
}

func TestBodyReaderConcurrentReadAt(t *testing.T) {
	want := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	var pieces [][]byte
	for rest := want; len(rest) > 0; {
		n := min(len(rest), 1+len(pieces)*7)
		pieces, rest = append(pieces, rest[:n]), rest[n:]
	}
	r := NewBody(pieces...).NewReader()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 0))
			p := make([]byte, 100)
			for range 1000 {
				off := rng.IntN(len(want))
				n, _ := r.ReadAt(p, int64(off))
				if !bytes.Equal(p[:n], want[off:off+n]) {
					t.Errorf("ReadAt at %d = %q", off, p[:n])
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestBatchBodyAcrossChunks checks the bodies of batches that span many
// chunks: the reader, and that every chunk but the last is full.
func TestBatchBodyAcrossChunks(t *testing.T) {
	t.Parallel()
	records := benchRecords(30_000) // about 10 MB of json_lines
	for _, opts := range everyEncoding() {
		t.Run(encodingName(opts), func(t *testing.T) {
			t.Parallel()
			b := newBatch(t, opts)
			n := len(records)
			if opts.Compression != None || opts.Format == Parquet {
				n = 3000
			}
			for _, r := range records[:n] {
				if err := b.Append(r); err != nil {
					t.Fatal(err)
				}
			}
			body, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if body.Len() != int64(b.Size()) || int64(len(body.Bytes())) != body.Len() {
				t.Fatalf("Len() = %d, Size() = %d, len(Bytes()) = %d", body.Len(), b.Size(), len(body.Bytes()))
			}
			if opts.Compression == None && opts.Format != Parquet {
				for i, p := range body.pieces {
					if i < len(body.pieces)-1 && len(p) != cap(p) {
						t.Fatalf("piece %d of %d: %d bytes of %d; want every piece but the last full", i, len(body.pieces), len(p), cap(p))
					}
					if want := minChunk << min(i, numClasses-1); cap(p) != want {
						t.Fatalf("piece %d: capacity %d, want %d", i, cap(p), want)
					}
				}
				if mem := b.MemSize(); mem < b.Size() || mem > b.Size()+maxChunk {
					t.Fatalf("MemSize() = %d, Size() = %d", mem, b.Size())
				}
			}
			if err := iotest.TestReader(body.NewReader(), body.Bytes()); err != nil {
				t.Fatal(err)
			}
			var w bytes.Buffer
			if _, err := body.NewReader().WriteTo(&w); err != nil || !bytes.Equal(w.Bytes(), body.Bytes()) {
				t.Fatalf("WriteTo: %v, %d bytes differ", err, w.Len())
			}
		})
	}
}

// TestMemSizeBounds checks that MemSize of uncompressed JSON and raw
// batches is the memory of their chunks: at least Size and at most one
// chunk more, from records of every size, straddling chunks or not.
func TestMemSizeBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	records := randomRecords(rng, 3000)
	for _, opts := range everyEncoding() {
		if opts.Compression != None || opts.Format == Parquet {
			continue
		}
		t.Run(encodingName(opts), func(t *testing.T) {
			b := newBatch(t, opts)
			if b.MemSize() != 0 {
				t.Fatalf("MemSize() = %d for a new batch, want 0", b.MemSize())
			}
			check := func(when string) {
				t.Helper()
				if mem, size := b.MemSize(), b.Size(); b.Len() > 0 && (mem < size || mem > size+maxChunk) || mem != b.(*batch).out.mem {
					t.Fatalf("%s: MemSize() = %d, Size() = %d, chunks hold %d", when, mem, size, b.(*batch).out.mem)
				}
			}
			for i, r := range records {
				if err := b.Append(r); err != nil {
					t.Fatal(err)
				}
				check("after Append")
				if i%7 == 0 {
					b.DropLast()
					check("after DropLast")
				}
			}
			if _, err := b.Finish(); err != nil {
				t.Fatal(err)
			}
			check("after Finish")
			b.Reset()
			if b.MemSize() != 0 {
				t.Fatalf("MemSize() = %d after Reset, want 0", b.MemSize())
			}
		})
	}
}

// randomRecords returns n records whose payloads are JSON strings of sizes
// from none to about 3 MiB, mostly small.
func randomRecords(rng *rand.Rand, n int) []*Record {
	records := make([]*Record, n)
	for i := range records {
		size := rng.IntN(600)
		switch rng.IntN(100) {
		case 0:
			size = rng.IntN(3 << 20)
		case 1, 2, 3:
			size = rng.IntN(64 << 10)
		}
		records[i] = &Record{
			Stream:   "S",
			Subject:  strings.Repeat("s", rng.IntN(40)),
			Sequence: uint64(i),
			Headers:  map[string][]string{"K": {strings.Repeat("\x01", rng.IntN(30))}},
			Data:     []byte(`"` + strings.Repeat("x", size) + `"`),
		}
		switch rng.IntN(10) {
		case 0:
			records[i].Data = []byte(strings.Repeat("\xff", size)) // base64
		case 1:
			// JSON compacted, whose bytes Options.ExactPayload keeps too
			records[i].Data = []byte(" " + string(records[i].Data) + "\n")
		}
	}
	return records
}

// FuzzBatchChunks checks that random appends and drops give the bytes,
// Size and Len of a reference body built by plain appends to one slice,
// as batches were before chunks, in every uncompressed format, whatever
// the sizes of the records and where they fall in the chunks.
func FuzzBatchChunks(f *testing.F) {
	f.Add(uint64(1), uint16(100))
	f.Add(uint64(2), uint16(2000))
	f.Add(uint64(3), uint16(20))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16) {
		rng := rand.New(rand.NewPCG(seed, seed>>32))
		records := randomRecords(rng, int(n%3000))
		for _, opts := range []Options{
			{Format: JSONLines, Metadata: true, Headers: true},
			{Format: JSONArray, Metadata: true, Headers: true},
			{Format: JSONLines, Metadata: true, ExactPayload: true},
			{Format: JSONArray, Metadata: true, Headers: true, ExactPayload: true},
			{Format: JSONArray},
			{Format: Raw, RawDelimiter: []byte("\r\n")},
		} {
			b := newBatch(t, opts)
			for round := range 2 {
				b.Reset()
				var want []byte // the body as one slice, as before chunks
				var ends []int  // where each record of want ends
				for _, r := range records {
					if len(ends) > 0 && rng.IntN(4) == 0 {
						b.DropLast()
						want = want[:ends[len(ends)-1]]
						ends = ends[:len(ends)-1]
						if len(ends) == 0 && opts.Format == JSONArray {
							want = want[:0]
						}
					}
					if err := b.Append(r); err != nil {
						t.Fatal(err)
					}
					ends = append(ends, len(want))
					switch opts.Format {
					case Raw:
						want = append(append(want, r.Data...), opts.RawDelimiter...)
					case JSONArray:
						if len(want) == 0 {
							want = append(want, '[')
						} else {
							want = append(want, ',')
						}
						want = AppendJSONRecord(want, r, opts)
					default:
						want = append(AppendJSONRecord(want, r, opts), '\n')
					}
				}
				if opts.Format == JSONArray {
					if len(want) == 0 {
						want = append(want, '[')
					}
					want = append(want, ']')
				}
				if b.Len() != len(ends) {
					t.Fatalf("%s round %d: Len() = %d, want %d", opts.Format, round, b.Len(), len(ends))
				}
				if b.Size() != len(want) {
					t.Fatalf("%s round %d: Size() = %d, want %d", opts.Format, round, b.Size(), len(want))
				}
				body, err := b.Finish()
				if err != nil {
					t.Fatal(err)
				}
				if got := body.Bytes(); !bytes.Equal(got, want) {
					t.Fatalf("%s round %d: body of %d bytes differs from the %d of plain appends", opts.Format, round, len(got), len(want))
				}
				if b.Size() != len(want) || b.MemSize() < len(want) || b.MemSize() > len(want)+maxChunk {
					t.Fatalf("%s round %d: after Finish Size() = %d, MemSize() = %d; body has %d bytes", opts.Format, round, b.Size(), b.MemSize(), len(want))
				}
			}
		}
	})
}

// newBatch returns a new batch of an encoder for opts.
func newBatch(t testing.TB, opts Options) Batch {
	t.Helper()
	e, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e.NewBatch()
}
