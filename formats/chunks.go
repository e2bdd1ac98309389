package formats

import (
	"math/bits"
	"sync"
)

// Chunk sizes. The chunks of a body double from minChunk up to maxChunk:
// 512 bytes, 1 KiB, ... 512 KiB, then 1 MiB each, so a batch of one small
// record holds one 512-byte chunk (a connector with thousands of quiet
// subjects holds thousands of such batches), an 8 MiB body has 18 chunks,
// and a batch holds at most as many bytes it does not use as it uses, and
// never more than maxChunk.
const (
	minChunkShift = 9
	maxChunkShift = 20
	minChunk      = 1 << minChunkShift
	maxChunk      = 1 << maxChunkShift
	numClasses    = maxChunkShift - minChunkShift + 1
)

// bufPools holds free buffers by size class: bufPools[c] those of
// minChunk<<c bytes of capacity and no length. Batches take chunks and
// scratch space from them and give them back, so that a program that fills
// and resets batches, in whichever goroutines, allocates almost nothing once
// it runs steadily: a sync.Pool only drops what stays unused through a
// garbage collection.
var bufPools [numClasses]sync.Pool // of *[]byte

// classFor returns the smallest size class whose buffers hold n bytes, or
// numClasses when n is larger than maxChunk.
func classFor(n int) int {
	if n <= minChunk {
		return 0
	}
	return min(bits.Len(uint(n-1))-minChunkShift, numClasses)
}

// getBuf returns an empty buffer of the size class c, or, when c is
// numClasses, a buffer of n bytes of capacity that is not pooled.
func getBuf(c, n int) *[]byte {
	if c >= numClasses {
		b := make([]byte, 0, n)
		return &b
	}
	if p, ok := bufPools[c].Get().(*[]byte); ok {
		return p
	}
	b := make([]byte, 0, minChunk<<c)
	return &b
}

// putBuf gives back a buffer from getBuf, or from append on one, to its
// pool; a buffer of another capacity is left to the garbage collector.
func putBuf(p *[]byte) {
	n := cap(*p)
	if n < minChunk || n > maxChunk || n&(n-1) != 0 {
		return
	}
	*p = (*p)[:0]
	bufPools[bits.Len(uint(n))-1-minChunkShift].Put(p)
}

// chunks is a byte sequence kept in chunks that are never reallocated: the
// encoded records of an uncompressed batch, the compressed stream of a
// compressed one, a parquet file. Every chunk but the last is full. A
// chunks is not safe for concurrent use.
type chunks struct {
	bufs []*[]byte // the chunks, in order; each but the last as long as what it holds
	last []byte    // what the last chunk holds, the one written to; nil without chunks
	full int64     // bytes held by the chunks before the last
	mem  int       // sum of the capacities of bufs

	// What body returns, kept so that Finish does not allocate.
	pieces [][]byte
	ends   []int64
}

// mark is a position in a chunks, to truncate it back to.
type mark struct {
	chunks int   // len(bufs)
	last   int   // length of the last chunk
	full   int64 // bytes of the chunks before it
}

// len returns the number of bytes held.
func (c *chunks) len() int64 { return c.full + int64(len(c.last)) }

// mark returns the current end of c.
func (c *chunks) mark() mark {
	return mark{chunks: len(c.bufs), last: len(c.last), full: c.full}
}

// truncate drops what was written after m and the chunks taken since, so
// that c holds what and as much memory as it held at m.
func (c *chunks) truncate(m mark) {
	for len(c.bufs) > m.chunks {
		i := len(c.bufs) - 1
		c.mem -= cap(*c.bufs[i])
		putBuf(c.bufs[i])
		c.bufs[i] = nil
		c.bufs = c.bufs[:i]
	}
	c.last, c.full = nil, m.full
	if m.chunks > 0 {
		c.last = (*c.bufs[m.chunks-1])[:m.last]
	}
}

// release gives every chunk back to its pool and empties c.
func (c *chunks) release() {
	for i, p := range c.bufs {
		putBuf(p)
		c.bufs[i] = nil
	}
	c.bufs = c.bufs[:0]
	clear(c.pieces)
	c.pieces, c.ends = c.pieces[:0], c.ends[:0]
	c.last, c.full, c.mem = nil, 0, 0
}

// nextSize is the capacity of the chunk grow would add.
func (c *chunks) nextSize() int {
	return minChunk << min(len(c.bufs), numClasses-1)
}

// grow adds an empty chunk at the end.
func (c *chunks) grow() {
	if n := len(c.bufs); n > 0 {
		*c.bufs[n-1] = c.last
		c.full += int64(len(c.last))
	}
	p := getBuf(min(len(c.bufs), numClasses-1), 0)
	if c.bufs == nil {
		c.bufs = make([]*[]byte, 0, 16) // enough for 8 MiB
	}
	c.bufs = append(c.bufs, p)
	c.last = *p
	c.mem += cap(*p)
}

// isFull reports whether the next byte needs a new chunk.
func (c *chunks) isFull() bool { return len(c.last) == cap(c.last) }

// setLast makes t, c.last extended by append, what the last chunk holds.
// An append that outgrew the chunk got a new array: then the bytes it
// added are copied over as by write.
func (c *chunks) setLast(t []byte) {
	if cap(t) != cap(c.last) {
		c.write(t[len(c.last):])
		return
	}
	c.last = t
}

// write appends p, filling the last chunk and adding new ones.
func (c *chunks) write(p []byte) {
	if cap(c.last)-len(c.last) >= len(p) {
		c.last = append(c.last, p...)
		return
	}
	for len(p) > 0 {
		if c.isFull() {
			c.grow()
		}
		n := min(len(p), cap(c.last)-len(c.last))
		c.last = append(c.last, p[:n]...)
		p = p[n:]
	}
}

// Write appends p; it never fails. It makes c the io.Writer of a
// compressor or the parquet writer.
func (c *chunks) Write(p []byte) (int, error) {
	c.write(p)
	return len(p), nil
}

// body returns c's bytes as a Body, valid until c changes.
func (c *chunks) body() Body {
	c.pieces, c.ends = c.pieces[:0], c.ends[:0]
	if len(c.bufs) == 0 {
		return Body{}
	}
	*c.bufs[len(c.bufs)-1] = c.last
	if c.pieces == nil {
		c.pieces, c.ends = make([][]byte, 0, cap(c.bufs)), make([]int64, 0, cap(c.bufs))
	}
	var end int64
	for _, p := range c.bufs {
		if len(*p) > 0 {
			end += int64(len(*p))
			c.pieces = append(c.pieces, *p)
			c.ends = append(c.ends, end)
		}
	}
	return Body{pieces: c.pieces, ends: c.ends}
}

// pending is a contiguous buffer that grows through the pools: the records
// a compressed batch has not compressed yet, which a compressor takes in
// one piece.
type pending struct {
	p *[]byte // nil until the first write
}

// buf returns the bytes held.
func (q *pending) buf() []byte {
	if q.p == nil {
		return nil
	}
	return *q.p
}

// len returns the number of bytes held.
func (q *pending) len() int { return len(q.buf()) }

// cap returns the memory held.
func (q *pending) cap() int { return cap(q.buf()) }

// reserve makes room for n more bytes and returns the buffer, to extend
// with append and pass to set.
func (q *pending) reserve(n int) []byte {
	b := q.buf()
	if cap(b)-len(b) >= n {
		return b
	}
	need := len(b) + n
	c := classFor(need)
	if c == numClasses {
		need = max(need, 2*cap(b)) // records above maxChunk: grow as append does
	}
	p := getBuf(c, need)
	*p = append(*p, b...)
	if q.p != nil {
		putBuf(q.p)
	}
	q.p = p
	return *p
}

// set makes b, what reserve returned extended with append, the buffer's
// content.
func (q *pending) set(b []byte) { *q.p = b }

// truncate shortens the content to n bytes.
func (q *pending) truncate(n int) {
	if q.p != nil {
		*q.p = (*q.p)[:n]
	}
}

// release gives the buffer back to its pool.
func (q *pending) release() {
	if q.p != nil {
		putBuf(q.p)
		q.p = nil
	}
}
