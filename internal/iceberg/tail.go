package iceberg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/jetlake/jetlake/formats"
)

// tailIO serves one data file from its tail: its size and its last bytes.
// A parquet reader that opens it reads the footer from there and nothing
// else; a read before the tail fails, and the commit reads the file from
// the store instead.
type tailIO struct {
	location string
	tail     *Tail
}

func (t tailIO) Open(name string) (iceio.File, error) {
	if name != t.location {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &tailFile{name: name, tail: t.tail}, nil
}

func (t tailIO) Remove(name string) error {
	return &fs.PathError{Op: "remove", Path: name, Err: errors.ErrUnsupported}
}

// errBeforeTail is a read of a part of the file its tail does not hold.
var errBeforeTail = errors.New("read before the kept tail of the file")

// tailFile is the file of a tailIO.
type tailFile struct {
	name string
	tail *Tail
	off  int64
}

func (f *tailFile) ReadAt(p []byte, off int64) (int, error) {
	start := f.tail.Size - int64(len(f.tail.Bytes))
	if off < start {
		return 0, fmt.Errorf("%s at %d: %w", f.name, off, errBeforeTail)
	}
	if off >= f.tail.Size {
		return 0, io.EOF
	}
	n := copy(p, f.tail.Bytes[off-start:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *tailFile) Read(p []byte) (int, error) {
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *tailFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += f.tail.Size
	default:
		return 0, fmt.Errorf("seek %s: whence %d", f.name, whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek %s: negative offset", f.name)
	}
	f.off = offset
	return offset, nil
}

func (f *tailFile) Stat() (fs.FileInfo, error) { return tailInfo{f}, nil }
func (f *tailFile) Close() error               { return nil }

// tailInfo describes a tailFile.
type tailInfo struct{ f *tailFile }

func (i tailInfo) Name() string       { return path.Base(i.f.name) }
func (i tailInfo) Size() int64        { return i.f.tail.Size }
func (i tailInfo) Mode() fs.FileMode  { return 0o444 }
func (i tailInfo) ModTime() time.Time { return time.Time{} }
func (i tailInfo) IsDir() bool        { return false }
func (i tailInfo) Sys() any           { return nil }

// TailOf returns the end of a parquet body from its footer on, for
// the table commit to read the file's statistics from; nil when the body
// does not end like a parquet file.
func TailOf(body formats.Body) *Tail {
	size := body.Len()
	r := body.NewReader()
	var end [8]byte
	if size < 12 {
		return nil
	}
	if _, err := r.ReadAt(end[:], size-8); err != nil || string(end[4:]) != "PAR1" {
		return nil
	}
	n := int64(binary.LittleEndian.Uint32(end[:4])) + 8
	if n > size-4 {
		return nil
	}
	tail := make([]byte, n)
	if _, err := r.ReadAt(tail, size-n); err != nil {
		return nil
	}
	return &Tail{Size: size, Bytes: tail}
}
