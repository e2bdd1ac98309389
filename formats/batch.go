package formats

// batch is the Batch of the JSON and raw formats. Without compression the
// encoded records live in one slice, so Size is a length and Finish hands
// that slice out. With compression, buf holds the records not compressed
// yet and out the compressed stream so far.
type batch struct {
	opts     *Options // the encoder's; never written
	codec    chunker  // nil without compression
	buf      []byte   // encoded records; with a codec, those after the last chunk
	out      []byte   // with a codec: the compressed stream so far
	stream   stream   // with a codec: the state carried from chunk to chunk
	n        int
	prev     int // len(buf) before the last Append, for DropLast
	size     int // what Size returns
	mem      int // what MemSize returns
	prevSize int // size and mem before the last Append, for DropLast
	prevMem  int
	canDrop  bool // the last call was a successful Append
	finished bool
	keys     []string // scratch for sorting header keys
}

func (b *batch) Append(r *Record) error {
	if b.finished {
		return ErrFinished
	}
	b.prevSize, b.prevMem = b.size, b.mem
	if b.codec != nil && len(b.buf) >= chunkSize {
		// The chunk ends before r, so r stays uncompressed for DropLast.
		b.compressBuf()
	}
	b.prev = len(b.buf)
	switch b.opts.Format {
	case Raw:
		b.buf = append(b.buf, r.Data...)
		b.buf = append(b.buf, b.opts.RawDelimiter...)
	case JSONArray:
		if b.n > 0 {
			b.buf = append(b.buf, ',')
		}
		b.buf, b.keys = appendRecord(b.buf, r, b.opts, b.keys)
	default:
		b.buf, b.keys = appendRecord(b.buf, r, b.opts, b.keys)
		b.buf = append(b.buf, '\n')
	}
	b.n++
	b.canDrop = true
	b.measure()
	return nil
}

// compressBuf compresses buf as the next chunk of the stream and empties
// it.
func (b *batch) compressBuf() {
	b.out = b.codec.compress(b.out, &b.stream, b.buf)
	b.buf = b.buf[:0]
}

// measure sets size and mem from the batch's content.
func (b *batch) measure() {
	if b.codec == nil {
		b.size = len(b.buf)
		if b.opts.Format == JSONArray && !b.finished {
			b.size += len("]")
		}
		b.mem = b.size
		return
	}
	b.mem = len(b.out) + len(b.buf) + len(b.stream.dict)
	if b.finished {
		b.size = len(b.out)
		return
	}
	pending := len(b.buf)
	if b.opts.Format == JSONArray {
		pending += len("]")
	}
	ratio := b.codec.learned()
	if b.stream.in > 0 {
		// The batch's own chunks say best how its records compress.
		ratio = float64(len(b.out)-b.codec.headerLen()) / float64(b.stream.in)
	}
	b.size = len(b.out) + int(float64(pending)*ratio+0.5) + b.codec.overhead()
}

func (b *batch) Len() int     { return b.n }
func (b *batch) Size() int    { return b.size }
func (b *batch) MemSize() int { return b.mem }

func (b *batch) DropLast() {
	if !b.canDrop || b.finished {
		return
	}
	b.buf = b.buf[:b.prev]
	b.canDrop = false
	b.n--
	b.size, b.mem = b.prevSize, b.prevMem
}

func (b *batch) Finish() ([]byte, error) {
	b.canDrop = false
	if b.finished {
		if b.codec != nil {
			return b.out, nil
		}
		return b.buf, nil
	}
	b.finished = true
	if b.codec == nil {
		if b.opts.Format == JSONArray {
			b.buf = append(b.buf, ']')
		}
		b.measure()
		return b.buf, nil
	}
	if b.opts.Format == JSONArray {
		// The closing bracket is chunked like a record, so a batch that
		// had a record dropped compresses exactly like one that never
		// had it.
		if len(b.buf) >= chunkSize {
			b.compressBuf()
		}
		b.buf = append(b.buf, ']')
	}
	if len(b.buf) > 0 || b.stream.chunks == 0 {
		b.compressBuf()
	}
	b.out = b.codec.finish(b.out, &b.stream)
	b.measure()
	return b.out, nil
}

func (b *batch) Reset() {
	b.buf = b.buf[:0]
	b.n = 0
	b.finished = false
	b.canDrop = false
	if b.opts.Format == JSONArray {
		b.buf = append(b.buf, '[')
	}
	if b.codec != nil {
		b.out = b.codec.start(b.out[:0])
		b.stream.reset()
	}
	b.measure()
}
