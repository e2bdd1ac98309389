package formats

// batch is the Batch of the JSON and raw formats. Without compression the
// encoded records live in out, in chunks that are never reallocated, and
// Finish hands those out as the pieces of the Body. With compression, pend
// holds the records not compressed yet and out the compressed stream so
// far.
type batch struct {
	opts     *Options // the encoder's; never written
	codec    chunker  // nil without compression
	out      chunks   // without a codec: the encoded records; with one: the compressed stream
	pend     pending  // with a codec: the encoded records after the last chunk
	stream   stream   // with a codec: the state carried from chunk to chunk
	n        int
	prev     mark // without a codec: the end of out before the last Append, for DropLast
	prevPend int  // with a codec: the length of pend before the last Append
	size     int  // what Size returns
	mem      int  // what MemSize returns
	prevSize int  // size and mem before the last Append, for DropLast
	prevMem  int
	canDrop  bool // the last call was a successful Append
	finished bool
	body     Body     // what Finish returned
	keys     []string // scratch for sorting header keys
}

func (b *batch) Append(r *Record) error {
	if b.finished {
		return ErrFinished
	}
	b.prevSize, b.prevMem = b.size, b.mem
	if b.codec != nil {
		if b.pend.len() >= chunkSize {
			// The chunk ends before r, so r stays uncompressed for DropLast.
			b.compressPending()
		}
		b.prevPend = b.pend.len()
		b.appendPending(r)
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

// compressPending compresses pend as the next chunk of the stream, after
// the stream's header for the first, and empties it.
func (b *batch) compressPending() {
	if b.stream.chunks == 0 {
		b.out.write(b.codec.header())
	}
	b.codec.compress(&b.out, &b.stream, b.pend.buf())
	b.pend.truncate(0)
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
	b.mem = b.out.mem + b.pend.cap() + b.stream.mem()
	out, header := int(b.out.len()), len(b.codec.header())
	if b.stream.chunks == 0 {
		out = header // written with the first chunk
	}
	if b.finished {
		b.size = out
		return
	}
	ratio := b.codec.learned()
	if b.stream.in > 0 {
		// The batch's own chunks say best how its records compress.
		ratio = float64(out-header) / float64(b.stream.in)
	}
	b.size = out + int(float64(b.pend.len()+brackets)*ratio+0.5) + b.codec.overhead()
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
		if b.pend.len() >= chunkSize {
			b.compressPending()
		}
		b.appendPendingByte(']')
	}
	if b.pend.len() > 0 || b.stream.chunks == 0 {
		b.compressPending()
	}
	b.codec.finish(&b.out, &b.stream)
	// Only the compressed stream is needed from now on.
	b.pend.release()
	b.stream.releaseDict()
	b.body = b.out.body()
	b.measure()
	return b.body, nil
}

func (b *batch) Reset() {
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
