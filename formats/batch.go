package formats

// batch is the Batch of every format: the encoded records live in one
// slice, so Size is a length and Finish hands that slice out.
type batch struct {
	opts     *Options // the encoder's; never written
	buf      []byte
	n        int
	prev     int  // len(buf) before the last Append, for DropLast
	canDrop  bool // the last call was a successful Append
	finished bool
	keys     []string // scratch for sorting header keys
}

func (b *batch) Append(r *Record) error {
	if b.finished {
		return ErrFinished
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
	return nil
}

func (b *batch) Len() int { return b.n }

func (b *batch) DropLast() {
	if !b.canDrop || b.finished {
		return
	}
	b.buf = b.buf[:b.prev]
	b.canDrop = false
	b.n--
}

func (b *batch) Size() int {
	if b.opts.Format == JSONArray && !b.finished {
		return len(b.buf) + len("]")
	}
	return len(b.buf)
}

func (b *batch) Finish() ([]byte, error) {
	if !b.finished && b.opts.Format == JSONArray {
		b.buf = append(b.buf, ']')
	}
	b.finished = true
	b.canDrop = false
	return b.buf, nil
}

func (b *batch) Reset() {
	b.buf = b.buf[:0]
	b.n = 0
	b.finished = false
	b.canDrop = false
	if b.opts.Format == JSONArray {
		b.buf = append(b.buf, '[')
	}
}
