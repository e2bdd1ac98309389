package formats

// batch is the Batch of the JSON and raw formats. Without compression the
// encoded records live in out, in chunks that are never reallocated, and
// Finish hands those out as the pieces of the Body. With compression, pend
// holds the records not compressed yet and out the compressed stream so
// far.
type batch struct {
	opts     *Options    // the encoder's; never written
	codec    chunker     // nil without compression
	out      chunks      // without a codec: the encoded records; with one: the compressed stream
	pend     pending     // with a codec: the encoded records after the last chunk
	stream   stream      // with a codec: the state carried from chunk to chunk
	deferred []*Chunk    // with a codec: chunks whose frames are not in out yet, in order
	deferMem int         // memory those hold
	drained  int         // chunks whose frames are in out
	outIn    int64       // uncompressed bytes of those
	outKnown known       // of those, the records measured on their own (see pendKnown)
	queue    *chunkQueue // with Options.DeferCompression: where chunks go to be compressed
	spare    *Chunk      // without it: the chunk to reuse
	n        int
	prev     mark // without a codec: the end of out before the last Append, for DropLast
	prevPend int  // with a codec: the length of pend before the last Append
	size     int  // what Size returns
	mem      int  // what MemSize returns
	prevSize int  // size and mem before the last Append, for DropLast
	prevMem  int
	// With a codec: the records measured on their own (see
	// Options.TargetSize) in pend, and in chunks not drained yet; the
	// estimate takes their measured size instead of applying a ratio.
	pendKnown, waitKnown, prevKnown known
	canDrop                         bool // the last call was a successful Append
	finished                        bool
	body                            Body     // what Finish returned
	keys                            []string // scratch for sorting header keys
}

func (b *batch) Append(r *Record) error {
	if b.finished {
		return ErrFinished
	}
	b.prevSize, b.prevMem = b.size, b.mem
	if b.codec != nil {
		if len(b.deferred) > 0 {
			b.drain()
		}
		if first := b.stream.chunks == 0; b.pend.len() >= b.chunkAt(first) {
			// The chunk ends before r, so r stays uncompressed for DropLast.
			// The batch's first chunk is compressed at once: until it is,
			// how its records compress is a guess from other records,
			// which may compress far better (see chunkAt).
			b.compressPending(first)
		}
		b.prevPend = b.pend.len()
		b.prevKnown = b.pendKnown
		b.appendPending(r)
		if n := b.pend.len() - b.prevPend; n >= b.measureAt() {
			b.pendKnown.add(int64(n), int64(b.measure1(b.pend.buf()[b.prevPend:])))
		}
	} else {
		b.prev = b.out.mark()
		b.appendChunks(r)
	}
	b.n++
	b.canDrop = true
	b.measure()
	return nil
}

// frame returns the bytes a JSON record is written between, 0 for none:
// "[" or "," before a json_array element, "\n" after a json_lines line.
func (b *batch) frame() (before, after byte) {
	switch {
	case b.opts.Format == JSONLines:
		return 0, '\n'
	case b.n == 0:
		return '[', 0
	}
	return ',', 0
}

// appendJSON appends r as the next record of a JSON format to dst.
func (b *batch) appendJSON(dst []byte, r *Record) []byte {
	before, after := b.frame()
	if before != 0 {
		dst = append(dst, before)
	}
	dst, b.keys = appendRecord(dst, r, b.opts, b.keys)
	if after != 0 {
		dst = append(dst, after)
	}
	return dst
}

// appendChunks appends r to out, for a batch without compression. A JSON
// record is encoded right into the last chunk when it surely fits there or
// in a new one; otherwise, when it would straddle chunks, it is encoded
// aside and copied.
func (b *batch) appendChunks(r *Record) {
	if b.opts.Format == Raw {
		if t := b.out.last; cap(t)-len(t) >= len(r.Data)+len(b.opts.RawDelimiter) {
			b.out.last = append(append(t, r.Data...), b.opts.RawDelimiter...)
			return
		}
		b.out.write(r.Data)
		b.out.write(b.opts.RawDelimiter)
		return
	}
	// The frame, and for json_array a byte left for the closing bracket.
	bound := jsonBound(r, b.opts) + 2
	t := b.out.last
	switch {
	case cap(t)-len(t) >= bound:
		b.out.setLast(b.appendJSON(t, r))
	case len(t) == cap(t) && bound <= b.out.nextSize():
		b.out.grow()
		b.out.setLast(b.appendJSON(b.out.last, r))
	default:
		s := getBuf(classFor(bound), bound)
		*s = b.appendJSON((*s)[:0], r)
		b.out.write(*s)
		putBuf(s)
	}
	if b.opts.Format == JSONArray && b.out.isFull() {
		// Finish writes the closing bracket without taking a chunk, so
		// that MemSize stays at least Size.
		b.out.grow()
	}
}

// appendPending appends r to pend, for a batch with compression.
func (b *batch) appendPending(r *Record) {
	if b.opts.Format == Raw {
		buf := b.pend.reserve(len(r.Data) + len(b.opts.RawDelimiter))
		buf = append(buf, r.Data...)
		b.pend.set(append(buf, b.opts.RawDelimiter...))
		return
	}
	buf := b.pend.reserve(jsonBound(r, b.opts) + 1)
	b.pend.set(b.appendJSON(buf, r))
}

// appendPendingByte appends c to pend.
func (b *batch) appendPendingByte(c byte) {
	b.pend.set(append(b.pend.reserve(1), c))
}

// compressPending makes pend the next chunk of the stream and empties it.
// The chunk is compressed at once, or, with Options.DeferCompression and
// unless now, by whoever takes it from the encoder, or at the latest by
// Finish.
func (b *batch) compressPending(now bool) {
	p := b.pend.buf()
	var c *Chunk
	if b.spare != nil {
		// Compressed here and drained at once: nothing else refers to it.
		c, b.spare = b.spare, nil
		c.raw, c.dict, c.rawLen, c.cost = b.pend.p, nil, len(p), 0
		c.done.Store(false)
	} else {
		c = &Chunk{codec: b.codec, raw: b.pend.p, rawLen: len(p)}
	}
	if c.raw == nil {
		c.raw = getBuf(0, 0)
	}
	b.pend.p = nil
	if b.codec.wantsDict() && b.stream.dict != nil {
		d := b.stream.dictBytes()
		c.dict = getBuf(classFor(len(d)), len(d))
		*c.dict = append(*c.dict, d...)
	}
	b.codec.advance(&b.stream, p)
	c.cost = cap(*c.raw) + minChunk<<min(classFor(b.codec.bound(c.rawLen)), numClasses-1)
	if c.dict != nil {
		c.cost += cap(*c.dict)
	}
	c.known, b.pendKnown = b.pendKnown, known{}
	b.waitKnown.add(c.known.raw, c.known.comp)
	b.deferred = append(b.deferred, c)
	b.deferMem += c.cost
	if b.queue == nil || now {
		c.Compress()
		b.drain()
		if b.queue == nil {
			b.spare = c
		}
		return
	}
	b.queue.push(c)
}

// drain moves the frames of the chunks compressed so far, in order, into
// out.
func (b *batch) drain() {
	n := 0
	for _, c := range b.deferred {
		if !c.done.Load() {
			break
		}
		if b.drained == 0 {
			b.out.write(b.codec.header())
		}
		b.out.write(*c.frame)
		putBuf(c.frame)
		c.frame = nil
		b.drained++
		b.outIn += int64(c.rawLen)
		b.waitKnown.add(-c.known.raw, -c.known.comp)
		b.outKnown.add(c.known.raw, c.known.comp)
		b.deferMem -= c.cost
		n++
	}
	if n > 0 {
		m := copy(b.deferred, b.deferred[n:])
		clear(b.deferred[m:])
		b.deferred = b.deferred[:m]
	}
}

// measure sets size and mem from the batch's content.
func (b *batch) measure() {
	// The brackets of json_array that are not written yet.
	brackets := 0
	if b.opts.Format == JSONArray && !b.finished {
		brackets = len("]")
		if b.n == 0 {
			brackets = len("[]")
		}
	}
	if b.codec == nil {
		b.size = int(b.out.len()) + brackets
		b.mem = b.out.mem
		return
	}
	b.mem = b.out.mem + b.pend.cap() + b.stream.mem() + b.deferMem
	out, header := int(b.out.len()), len(b.codec.header())
	if b.drained == 0 {
		out = header // written with the first frame
	}
	if b.finished {
		b.size = out
		return
	}
	// The ratio guesses the records that were not measured, so it is
	// learned from such records alone: large records that compress well
	// would otherwise make small ones that compress badly look small.
	ratio := b.codec.learned()
	if in := b.outIn - b.outKnown.raw; in >= int64(min(minLearn, b.chunkAt(true))) {
		// The batch's own chunks say best how its records compress.
		ratio = float64(max(int64(out-header)-b.outKnown.comp, 0)) / float64(in)
	}
	waiting := b.stream.in - b.outIn // in chunks not drained yet
	guessed := waiting + int64(b.pend.len()+brackets) - b.waitKnown.raw - b.pendKnown.raw
	b.size = out + int(float64(guessed)*ratio+0.5) + int(b.waitKnown.comp+b.pendKnown.comp) + b.codec.overhead()
}

// known counts records whose compressed size was measured.
type known struct{ raw, comp int64 }

func (k *known) add(raw, comp int64) { k.raw, k.comp = k.raw+raw, k.comp+comp }

// minFirstChunk is the smallest first chunk of a batch (see chunkAt).
const minFirstChunk = 4 << 10

// chunkAt returns how many uncompressed bytes a chunk of the batch
// gathers before it is compressed: chunkSize, except for the first chunk
// of a batch with a known Options.TargetSize, which ends at a quarter of
// it (at least minFirstChunk, at most chunkSize). Until a batch has a
// chunk compressed, its size is guessed with the ratio of the encoder's
// other batches, or a prior that fits compressible JSON: records that
// hardly compress would fill the first object of a subject to several
// times the target before a chunk of chunkSize told how they compress.
// A quarter of the target tells early, and still spans enough records
// for a ratio. It depends on the options alone, so the same records
// always compress to the same bytes.
func (b *batch) chunkAt(first bool) int {
	if !first || b.opts.TargetSize <= 0 {
		return chunkSize
	}
	return int(min(max(b.opts.TargetSize/4, minFirstChunk), chunkSize))
}

// measureAt is the size from which a record is measured on its own: a
// quarter of Options.TargetSize, or of a chunk when that is unknown.
func (b *batch) measureAt() int {
	if t := b.opts.TargetSize / 4; t > 0 {
		return int(min(t, chunkSize/4))
	}
	return chunkSize / 4
}

// measure1 returns the size of p compressed on its own. Without the
// dictionary of the records before it, that is a little more than it
// adds to the stream: an estimate that errs towards a smaller object.
func (b *batch) measure1(p []byte) int {
	bound := b.codec.bound(len(p))
	buf := getBuf(classFor(bound), bound)
	*buf = b.codec.frame((*buf)[:0], nil, p)
	n := len(*buf)
	putBuf(buf)
	return n
}

func (b *batch) Len() int     { return b.n }
func (b *batch) Size() int    { return b.size }
func (b *batch) MemSize() int { return b.mem }

func (b *batch) DropLast() {
	if !b.canDrop || b.finished {
		return
	}
	if b.codec != nil {
		b.pend.truncate(b.prevPend)
		b.pendKnown = b.prevKnown
	} else {
		b.out.truncate(b.prev)
	}
	b.canDrop = false
	b.n--
	b.size, b.mem = b.prevSize, b.prevMem
}

func (b *batch) Finish() (Body, error) {
	b.canDrop = false
	if b.finished {
		return b.body, nil
	}
	b.finished = true
	if b.codec == nil {
		switch {
		case b.opts.Format != JSONArray:
		case b.n == 0:
			b.out.write([]byte("[]"))
		default:
			b.out.write([]byte("]"))
		}
		b.body = b.out.body()
		b.measure()
		return b.body, nil
	}
	if b.opts.Format == JSONArray {
		if b.n == 0 {
			b.appendPendingByte('[')
		}
		// The closing bracket is chunked like a record, so a batch that
		// had a record dropped compresses exactly like one that never
		// had it.
		if b.pend.len() >= b.chunkAt(b.stream.chunks == 0) {
			b.compressPending(true)
		}
		b.appendPendingByte(']')
	}
	if b.pend.len() > 0 || b.stream.chunks == 0 {
		b.compressPending(true)
	}
	for _, c := range b.deferred {
		c.Compress() // or wait for whoever compresses it
	}
	b.drain()
	b.codec.finish(&b.out, &b.stream)
	// Only the compressed stream is needed from now on.
	b.pend.release()
	b.stream.releaseDict()
	b.body = b.out.body()
	b.measure()
	return b.body, nil
}

func (b *batch) Reset() {
	// Chunks still out are left to whoever compresses them; those done
	// give their frames back.
	for _, c := range b.deferred {
		if c.done.Load() && c.frame != nil {
			putBuf(c.frame)
			c.frame = nil
		}
	}
	clear(b.deferred)
	b.deferred = b.deferred[:0]
	b.deferMem, b.drained, b.outIn = 0, 0, 0
	b.pendKnown, b.waitKnown, b.prevKnown, b.outKnown = known{}, known{}, known{}, known{}
	b.out.release()
	b.pend.release()
	b.stream.releaseDict()
	b.stream = stream{}
	b.n = 0
	b.finished = false
	b.canDrop = false
	b.body = Body{}
	b.measure()
}
