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
	in     int64  // uncompressed bytes compressed so far
	chunks int    // chunks compressed so far
	crc    uint32 // gzip: CRC-32 of the uncompressed bytes
	dict   []byte // gzip: the last dictSize uncompressed bytes
}

func (s *stream) reset() {
	s.in, s.chunks, s.crc = 0, 0, 0
	s.dict = s.dict[:0]
}

// chunker compresses a stream one chunk at a time, so that memory holds
// compressed bytes instead of records and no compressor state lives between
// chunks. Its methods are safe for concurrent use.
type chunker interface {
	// start appends the stream header to dst.
	start(dst []byte) []byte
	// headerLen is the length of what start appends.
	headerLen() int
	// compress appends the compressed form of p, the next chunk of the
	// stream s, to dst and updates s.
	compress(dst []byte, s *stream, p []byte) []byte
	// finish appends the end of the stream to dst.
	finish(dst []byte, s *stream) []byte
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
}

func (r *ratio) get() float64 {
	if b := r.bits.Load(); b != 0 {
		return math.Float64frombits(b)
	}
	return r.def
}

// minLearn is the smallest chunk whose ratio the encoder learns from: the
// last chunk of a batch may be a few records, which compress worse.
const minLearn = chunkSize / 4

// add folds the ratio of one chunk into r. Two concurrent adds may lose
// one of them, which only costs estimate precision.
func (r *ratio) add(compressed, uncompressed int) {
	if uncompressed < minLearn {
		return
	}
	x := float64(compressed) / float64(uncompressed)
	if b := r.bits.Load(); b != 0 {
		x = (x + math.Float64frombits(b)) / 2
	}
	r.bits.Store(math.Float64bits(x))
}

// appendWriter is an io.Writer that appends to a slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// gzipChunker writes one gzip member (RFC 1952) whose deflate stream is the
// concatenation of independently compressed chunks, each ending with a sync
// flush and using the previous chunks' last 32 KiB as its dictionary.
type gzipChunker struct {
	writers sync.Pool // *flate.Writer
	r       ratio
}

func newGzipChunker() *gzipChunker {
	return &gzipChunker{r: ratio{def: 0.2}}
}

// gzipHeader has no name, no extra field, a zero modification time (RFC
// 1952: none available) and OS 255 (unknown), as Go's gzip writes.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

func (g *gzipChunker) start(dst []byte) []byte { return append(dst, gzipHeader...) }
func (g *gzipChunker) headerLen() int          { return len(gzipHeader) }
func (g *gzipChunker) overhead() int           { return len("\x00\x00\xff\xff") + len("\x03\x00") + 8 }
func (g *gzipChunker) learned() float64        { return g.r.get() }

func (g *gzipChunker) compress(dst []byte, s *stream, p []byte) []byte {
	s.chunks++
	if len(p) == 0 {
		return dst
	}
	fw, _ := g.writers.Get().(*flate.Writer)
	w := appendWriter{b: dst}
	if fw == nil {
		// The level is valid, so there is no error.
		fw, _ = flate.NewWriterDict(&w, gzipLevel, s.dict)
	} else {
		fw.ResetDict(&w, s.dict)
	}
	// Writes to an appendWriter cannot fail.
	_, _ = fw.Write(p)
	_ = fw.Flush()
	fw.ResetDict(io.Discard, nil) // drop the references to the batch's memory
	g.writers.Put(fw)

	g.r.add(len(w.b)-len(dst), len(p))
	s.in += int64(len(p))
	s.crc = crc32.Update(s.crc, crc32.IEEETable, p)
	if len(p) >= dictSize {
		s.dict = append(s.dict[:0], p[len(p)-dictSize:]...)
	} else {
		s.dict = append(s.dict, p...)
		if n := len(s.dict); n > dictSize {
			s.dict = s.dict[:copy(s.dict, s.dict[n-dictSize:])]
		}
	}
	return w.b
}

func (g *gzipChunker) finish(dst []byte, s *stream) []byte {
	// An empty final block with fixed Huffman codes: BFINAL=1, BTYPE=01,
	// end-of-block; the stream is byte-aligned after every sync flush.
	dst = append(dst, 0x03, 0x00)
	dst = binary.LittleEndian.AppendUint32(dst, s.crc)
	return binary.LittleEndian.AppendUint32(dst, uint32(s.in))
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

func (z *zstdChunker) start(dst []byte) []byte { return dst }
func (z *zstdChunker) headerLen() int          { return 0 }
func (z *zstdChunker) overhead() int           { return 18 } // frame header, block header, checksum
func (z *zstdChunker) learned() float64        { return z.r.get() }

func (z *zstdChunker) compress(dst []byte, s *stream, p []byte) []byte {
	s.chunks++
	n := len(dst)
	dst = z.enc.EncodeAll(p, dst)
	z.r.add(len(dst)-n, len(p))
	s.in += int64(len(p))
	return dst
}

func (z *zstdChunker) finish(dst []byte, _ *stream) []byte { return dst }
