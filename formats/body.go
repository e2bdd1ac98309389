package formats

import (
	"errors"
	"io"
	"slices"
)

// Body is the content of an object: its bytes as a list of pieces, in
// order, which a batch fills without ever moving what it wrote. The zero
// Body is empty.
//
// A Body returned by Batch.Finish is the batch's memory: it is valid until
// the batch's Reset, which hands that memory to other batches, and must
// not be modified. A Body is a small value; copies of it share the pieces.
type Body struct {
	pieces [][]byte // none empty
	ends   []int64  // ends[i] is the offset just past pieces[i]
}

// NewBody returns the Body of the concatenation of pieces. It keeps the
// pieces themselves, not copies.
func NewBody(pieces ...[]byte) Body {
	var b Body
	var end int64
	for _, p := range pieces {
		if len(p) > 0 {
			end += int64(len(p))
			b.pieces = append(b.pieces, p)
			b.ends = append(b.ends, end)
		}
	}
	return b
}

// Len returns the number of bytes of b.
func (b Body) Len() int64 {
	if len(b.ends) == 0 {
		return 0
	}
	return b.ends[len(b.ends)-1]
}

// Bytes returns the bytes of b in one slice: the piece itself when b has
// one piece, which must not be modified, otherwise a new slice with a copy
// of the pieces. It is for tests and small bodies; an upload should read b
// with NewReader instead.
func (b Body) Bytes() []byte {
	switch len(b.pieces) {
	case 0:
		return nil
	case 1:
		return b.pieces[0]
	}
	dst := make([]byte, 0, b.Len())
	for _, p := range b.pieces {
		dst = append(dst, p...)
	}
	return dst
}

// WriteTo writes the bytes of b to w, piece by piece. It implements
// io.WriterTo.
func (b Body) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, p := range b.pieces {
		m, err := w.Write(p)
		n += int64(m)
		if err == nil && m != len(p) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// NewReader returns a BodyReader reading b from its start. The reader does
// not copy the bytes: it is valid as long as b is.
func (b Body) NewReader() *BodyReader {
	return &BodyReader{b: b}
}

// find returns the index of the piece that holds the byte at off, which is
// at least 0 and less than b.Len(), and where that piece starts.
func (b Body) find(off int64) (int, int64) {
	i, _ := slices.BinarySearch(b.ends, off+1) // the first end after off
	return i, b.ends[i] - int64(len(b.pieces[i]))
}

// A BodyReader reads a Body. It implements io.Reader, io.ReaderAt,
// io.Seeker and io.WriterTo as bytes.Reader does for a slice, so an
// uploader that needs the size, a checksum pass and a rewind (minio-go's
// PutObject) sends the pieces without copying them into one slice.
// Parallel calls to ReadAt are safe; the other methods are not safe for
// concurrent use. The zero BodyReader reads an empty body.
type BodyReader struct {
	b   Body
	off int64 // where Read reads next; may be past the end
}

// Size returns the length of the body, whatever has been read.
func (r *BodyReader) Size() int64 { return r.b.Len() }

// Reset makes r read b from its start.
func (r *BodyReader) Reset(b Body) { *r = BodyReader{b: b} }

// Read implements io.Reader.
func (r *BodyReader) Read(p []byte) (int, error) {
	if r.off >= r.b.Len() {
		return 0, io.EOF
	}
	n := r.b.copyAt(p, r.off)
	r.off += int64(n)
	return n, nil
}

// ReadAt implements io.ReaderAt. It does not use or change the offset of
// Read and Seek.
func (r *BodyReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("formats.BodyReader.ReadAt: negative offset")
	}
	if off >= r.b.Len() {
		return 0, io.EOF
	}
	n := r.b.copyAt(p, off)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// copyAt copies the bytes of b from off, which is at least 0 and less than
// b.Len(), to p and returns how many it copied.
func (b Body) copyAt(p []byte, off int64) int {
	i, start := b.find(off)
	n := copy(p, b.pieces[i][off-start:])
	for i++; n < len(p) && i < len(b.pieces); i++ {
		n += copy(p[n:], b.pieces[i])
	}
	return n
}

// Seek implements io.Seeker. Seeking past the end is allowed; reads there
// return io.EOF.
func (r *BodyReader) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = r.off + offset
	case io.SeekEnd:
		abs = r.b.Len() + offset
	default:
		return 0, errors.New("formats.BodyReader.Seek: invalid whence")
	}
	if abs < 0 {
		return 0, errors.New("formats.BodyReader.Seek: negative position")
	}
	r.off = abs
	return abs, nil
}

// WriteTo implements io.WriterTo: it writes the unread bytes to w, piece by
// piece, and advances the offset by what w took.
func (r *BodyReader) WriteTo(w io.Writer) (int64, error) {
	if r.off >= r.b.Len() {
		return 0, nil
	}
	i, start := r.b.find(r.off)
	p := r.b.pieces[i][r.off-start:]
	var n int64
	for {
		m, err := w.Write(p)
		n += int64(m)
		r.off += int64(m)
		if err == nil && m != len(p) {
			err = io.ErrShortWrite
		}
		if err != nil {
			return n, err
		}
		if i++; i == len(r.b.pieces) {
			return n, nil
		}
		p = r.b.pieces[i]
	}
}
