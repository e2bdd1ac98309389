package formats

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zstd"
)

// chunkSize is how many uncompressed bytes a batch gathers before it
// compresses them. Small enough that the estimate of the uncompressed rest
// is a small part of a 1 MiB object, large enough that the ratio does not
// suffer: gzip chunks share a 32 KiB dictionary, and zstd frames of 256 KiB
// compress JSON as well as one frame does.
const chunkSize = 256 << 10

// gzipLevel is the deflate level of gzip output. It is fixed: the same
// records must always compress to the same bytes.
const gzipLevel = 6

// dictSize is the deflate window: each gzip chunk may refer back this far
// into the chunks before it.
const dictSize = 32 << 10

// stream is what a batch carries from one compressed chunk to the next.
type stream struct {
	in     int64   // uncompressed bytes compressed so far
	chunks int     // chunks compressed so far
	crc    uint32  // gzip: CRC-32 of the uncompressed bytes
	dict   *[]byte // gzip: the last dictSize uncompressed bytes; pooled, nil until the first chunk
}

// releaseDict gives the dictionary back to its pool; the stream must not
// take another chunk.
func (s *stream) releaseDict() {
	if s.dict != nil {
		putBuf(s.dict)
		s.dict = nil
	}
}

// dictBytes returns the dictionary, nil before the first chunk.
func (s *stream) dictBytes() []byte {
	if s.dict == nil {
		return nil
	}
	return *s.dict
}

// mem is the memory the stream holds.
func (s *stream) mem() int { return cap(s.dictBytes()) }

// updateDict makes the dictionary end with p, keeping its last dictSize
// bytes without ever growing past dictSize.
func (s *stream) updateDict(p []byte) {
	if s.dict == nil {
		s.dict = getBuf(classFor(dictSize), dictSize)
	}
	d := *s.dict
	switch {
	case len(p) >= dictSize:
		d = append(d[:0], p[len(p)-dictSize:]...)
	case len(d)+len(p) > dictSize:
		d = d[:copy(d, d[len(d)+len(p)-dictSize:])]
		d = append(d, p...)
	default:
		d = append(d, p...)
	}
	*s.dict = d
}

// chunker compresses a stream one chunk at a time, so that memory holds
// compressed bytes instead of records and no compressor state lives between
// chunks. Its methods are safe for concurrent use.
type chunker interface {
	// header is what the stream starts with, before its first chunk.
	header() []byte
	// advance updates s with p, the next chunk of the stream, before p is
	// compressed: what the chunks after p need from it.
	advance(s *stream, p []byte)
	// frame appends to dst the compressed form of p, a chunk whose stream
	// had dict before it (see stream.dict), and returns the extended
	// slice.
	frame(dst, dict, p []byte) []byte
	// bound is the most bytes frame may append for n bytes.
	bound(n int) int
	// learn records that the records of a chunk that were not measured
	// on their own, uncompressed bytes, compressed to about compressed
	// bytes.
	learn(compressed, uncompressed int)
	// wantsDict reports whether frame needs the dictionary.
	wantsDict() bool
	// finish appends the end of the stream to dst.
	finish(dst *chunks, s *stream)
	// overhead is about how many bytes compress and finish add around the
	// compressed data of the last chunk, for estimates.
	overhead() int
	// learned returns the compression ratio of the chunks compressed last.
	learned() float64
}

// ratio remembers the compression ratio of recent chunks: batches filled
// in one goroutine read it while batches finished in others update it.
type ratio struct {
	bits atomic.Uint64 // math.Float64bits; 0 until the first update
	def  float64       // until then

	mu        sync.Mutex
	comp, raw int // bytes added since the last update, fewer than minLearn uncompressed
}

func (r *ratio) get() float64 {
	if b := r.bits.Load(); b != 0 {
		return math.Float64frombits(b)
	}
	return r.def
}

// minLearn is the smallest chunk whose ratio the encoder learns from: the
// last chunk of a batch may be a few records, which compress worse. It is
// also how many uncompressed bytes a ratio gathers before it updates.
const minLearn = chunkSize / 4

// add records that uncompressed bytes compressed to compressed bytes. The
// bytes of several calls are gathered until they are minLearn or more, and
// their ratio is then folded into r: a chunk whose records are mostly
// measured on their own adds only a few, and those few must still count.
func (r *ratio) add(compressed, uncompressed int) {
	if uncompressed <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.comp += compressed
	r.raw += uncompressed
	if r.raw < minLearn {
		return
	}
	x := float64(r.comp) / float64(r.raw)
	r.comp, r.raw = 0, 0
	if b := r.bits.Load(); b != 0 {
		x = (x + math.Float64frombits(b)) / 2
	}
	r.bits.Store(math.Float64bits(x))
}

// gzipChunker writes one gzip member (RFC 1952) whose deflate stream is the
// concatenation of independently compressed chunks, each ending with a sync
// flush and using the previous chunks' last 32 KiB as its dictionary.
type gzipChunker struct {
	writers sync.Pool // *gzipWriter
	r       ratio
}

func newGzipChunker() *gzipChunker {
	return &gzipChunker{r: ratio{def: 0.2}}
}

// gzipHeader has no name, no extra field, a zero modification time (RFC
// 1952: none available) and OS 255 (unknown), as Go's gzip writes.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

func (g *gzipChunker) header() []byte   { return gzipHeader }
func (g *gzipChunker) overhead() int    { return len("\x00\x00\xff\xff") + len("\x03\x00") + 8 }
func (g *gzipChunker) learned() float64 { return g.r.get() }

func (g *gzipChunker) advance(s *stream, p []byte) {
	s.chunks++
	if len(p) == 0 {
		return
	}
	s.in += int64(len(p))
	s.crc = crc32.Update(s.crc, crc32.IEEETable, p)
	s.updateDict(p)
}

func (g *gzipChunker) wantsDict() bool { return true }

// bound is generous: deflate adds a few bytes per block to incompressible
// input, and the sync flush 5.
func (g *gzipChunker) bound(n int) int { return n + n/16 + 64 }

func (g *gzipChunker) learn(compressed, uncompressed int) { g.r.add(compressed, uncompressed) }

// gzipWriter is a deflate writer with the slice it appends to.
type gzipWriter struct {
	fw  *flate.Writer
	dst appendWriter
}

// appendWriter is an io.Writer that appends to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (g *gzipChunker) frame(dst, dict, p []byte) []byte {
	if len(p) == 0 {
		return dst
	}
	w, _ := g.writers.Get().(*gzipWriter)
	if w == nil {
		w = &gzipWriter{}
		// The level is valid, so there is no error.
		w.fw, _ = flate.NewWriterDict(&w.dst, gzipLevel, dict)
	} else {
		w.fw.ResetDict(&w.dst, dict)
	}
	w.dst.b = dst
	// Writes to a slice cannot fail.
	_, _ = w.fw.Write(p)
	_ = w.fw.Flush()
	out := w.dst.b
	w.dst.b = nil
	w.fw.ResetDict(io.Discard, nil) // drop the references to the batch's memory
	g.writers.Put(w)
	return out
}

func (g *gzipChunker) finish(dst *chunks, s *stream) {
	// An empty final block with fixed Huffman codes: BFINAL=1, BTYPE=01,
	// end-of-block; the stream is byte-aligned after every sync flush.
	var end [10]byte
	end[0], end[1] = 0x03, 0x00
	binary.LittleEndian.PutUint32(end[2:], s.crc)
	binary.LittleEndian.PutUint32(end[6:], uint32(s.in))
	dst.write(end[:])
}

// zstdChunker writes one zstd frame per chunk.
type zstdChunker struct {
	enc *zstd.Encoder
	r   ratio
}

func newZstdChunker() (*zstdChunker, error) {
	// EncodeAll compresses each call on one goroutine with a fresh state,
	// so the output does not depend on the concurrency, which only bounds
	// how many batches finish at once.
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithEncoderCRC(true),
		zstd.WithZeroFrames(true),
	)
	if err != nil {
		return nil, err
	}
	return &zstdChunker{enc: enc, r: ratio{def: 0.2}}, nil
}

func (z *zstdChunker) header() []byte   { return nil }
func (z *zstdChunker) overhead() int    { return 18 } // frame header, block header, checksum
func (z *zstdChunker) learned() float64 { return z.r.get() }

func (z *zstdChunker) advance(s *stream, p []byte) {
	s.chunks++
	s.in += int64(len(p))
}

func (z *zstdChunker) wantsDict() bool                    { return false }
func (z *zstdChunker) bound(n int) int                    { return z.enc.MaxEncodedSize(n) }
func (z *zstdChunker) learn(compressed, uncompressed int) { z.r.add(compressed, uncompressed) }

// frame writes one zstd frame; chunks do not depend on each other.
func (z *zstdChunker) frame(dst, _, p []byte) []byte { return z.enc.EncodeAll(p, dst) }

func (z *zstdChunker) finish(*chunks, *stream) {}
