package formats

import (
	"sync"
	"sync/atomic"
)

// A Chunk is a part of a compressed JSON or raw batch: about 256 KiB of
// encoded records, compressed on their own into one piece of the object.
// A batch of an encoder made with Options.DeferCompression does not
// compress its chunks while it is appended to: it leaves them to its
// encoder's TakeChunks (see ChunkSource), so that the caller can compress
// them on other goroutines. Whatever is not compressed yet when the batch
// is finished, Finish compresses itself; the output is the same whoever
// compresses which chunk.
type Chunk struct {
	codec  chunker
	raw    *[]byte // the records; pooled, given back once compressed
	dict   *[]byte // gzip: the 32 KiB before raw; pooled, nil for zstd
	rawLen int
	cost   int   // memory the chunk holds until its batch takes the frame
	known  known // of rawLen, the records measured on their own

	mu    sync.Mutex
	frame *[]byte // the compressed bytes, once done; pooled
	done  atomic.Bool
}

// Compress compresses the chunk. It may run on any goroutine, at the same
// time as the methods of the chunk's batch; a call while another runs
// waits for it, and a call after it does nothing.
func (c *Chunk) Compress() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done.Load() {
		return
	}
	var dict []byte
	if c.dict != nil {
		dict = *c.dict
	}
	bound := c.codec.bound(c.rawLen)
	frame := getBuf(classFor(bound), bound)
	*frame = c.codec.frame((*frame)[:0], dict, *c.raw)
	if c.rawLen >= minLearn {
		// The ratio guesses the records that were not measured on their
		// own (see Options.TargetSize): it is learned from those alone.
		c.codec.learn(max(len(*frame)-int(c.known.comp), 0), c.rawLen-int(c.known.raw))
	}
	putBuf(c.raw)
	c.raw = nil
	if c.dict != nil {
		putBuf(c.dict)
		c.dict = nil
	}
	c.frame = frame
	c.done.Store(true)
}

// A ChunkSource is an Encoder of gzip or zstd JSON or raw output made with
// Options.DeferCompression; no other Encoder is one.
type ChunkSource interface {
	// TakeChunks appends to dst the chunks its batches filled since the
	// last call, in the order they were filled, and returns the extended
	// slice. Each chunk should be compressed soon, with Chunk.Compress on
	// any goroutine: until then it holds its records uncompressed.
	TakeChunks(dst []*Chunk) []*Chunk
}

// chunkQueue holds the chunks an encoder's batches handed out and
// TakeChunks has not returned yet.
type chunkQueue struct {
	mu     sync.Mutex
	chunks []*Chunk
	n      atomic.Int32 // len(chunks), read without the lock
}

func (q *chunkQueue) push(c *Chunk) {
	q.mu.Lock()
	q.chunks = append(q.chunks, c)
	q.n.Store(int32(len(q.chunks)))
	q.mu.Unlock()
}

// take is called after every append, and a chunk fills only every few
// hundred records: the count spares it the lock until one has.
func (q *chunkQueue) take(dst []*Chunk) []*Chunk {
	if q.n.Load() == 0 {
		return dst
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	dst = append(dst, q.chunks...)
	clear(q.chunks)
	q.chunks = q.chunks[:0]
	q.n.Store(0)
	return dst
}
