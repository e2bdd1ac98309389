package pathtemplate

import (
	"strconv"
	"strings"
)

// SeqLen is how many digits a sequence number has in an object name: it is
// zero-padded to the 20 digits of the largest uint64, so that names sort in
// sequence order.
const SeqLen = 20

// RangeLen is the length of the sequence range every object name starts
// with: "<first:020>-<last:020>".
const RangeLen = SeqLen + 1 + SeqLen

// CompactedExt is the extension of a compacted data file: compaction writes
// Iceberg tables, whose data files are parquet.
const CompactedExt = "parquet"

// AppendKey appends a full object key to dst:
// "<prefix>/<dir>/<first:020>-<last:020>.<ext>", leaving out an empty prefix
// or dir without producing "//", and the "." before an empty ext.
func AppendKey(dst []byte, prefix string, dir []byte, first, last uint64, ext string) []byte {
	dst = appendFolder(dst, prefix, dir)
	dst = appendRange(dst, first, last)
	if ext != "" {
		dst = append(dst, '.')
		dst = append(dst, ext...)
	}
	return dst
}

// Key returns a full object key; see AppendKey. It returns ErrKeyTooLong when
// the key would exceed MaxKeyLen.
func Key(prefix, dir string, first, last uint64, ext string) (string, error) {
	k := AppendKey(nil, prefix, []byte(dir), first, last, ext)
	if len(k) > MaxKeyLen {
		return "", ErrKeyTooLong
	}
	return string(k), nil
}

// AppendCompactedKey appends the key of a compacted data file to dst:
// "<prefix>/<dir>/<first:020>-<last:020>-c<id>.parquet", leaving out an empty
// prefix or dir as AppendKey does. id is the compaction's id, the same for
// the same group of files, so that a compaction tried again writes the same
// key; it holds neither "." nor "/".
func AppendCompactedKey(dst []byte, prefix string, dir []byte, first, last uint64, id string) []byte {
	dst = appendFolder(dst, prefix, dir)
	dst = appendRange(dst, first, last)
	dst = append(dst, "-c"...)
	dst = append(dst, id...)
	dst = append(dst, '.')
	return append(dst, CompactedExt...)
}

// CompactedKey returns the key of a compacted data file; see
// AppendCompactedKey.
func CompactedKey(prefix, dir string, first, last uint64, id string) string {
	return string(AppendCompactedKey(nil, prefix, []byte(dir), first, last, id))
}

// AppendSeq appends a sequence number zero-padded to SeqLen digits, so that
// keys sort in sequence order.
func AppendSeq(dst []byte, seq uint64) []byte {
	var b [SeqLen]byte
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + seq%10)
		seq /= 10
	}
	return append(dst, b[:]...)
}

// appendFolder appends "<prefix>/<dir>/", leaving out an empty prefix or dir.
func appendFolder(dst []byte, prefix string, dir []byte) []byte {
	dst = appendPrefix(dst, prefix)
	if len(dir) > 0 {
		dst = append(dst, dir...)
		dst = append(dst, '/')
	}
	return dst
}

// appendRange appends "<first:020>-<last:020>".
func appendRange(dst []byte, first, last uint64) []byte {
	dst = AppendSeq(dst, first)
	dst = append(dst, '-')
	return AppendSeq(dst, last)
}

// Name is what an object name says of its object.
type Name struct {
	First, Last uint64 // the stream sequences it holds are within First-Last
	// Compaction is a compacted data file's compaction id, "" for every
	// other object.
	Compaction string
	Ext        string // what follows the range (and id) and a ".": "jsonl.gz", "parquet", "lost.json"
}

// ParseName parses the name of an object, the last segment of its key, as
// AppendKey and AppendCompactedKey write it:
// "<first:020>-<last:020>.<ext>" (data objects, rejected messages, loss
// markers) or "<first:020>-<last:020>-c<id>.parquet" (compacted data files).
// The sequences are 20 decimal digits, first is at least 1 and last at least
// first; ext is not empty; id is not empty and holds neither "." nor "/".
// Any other name is not one of jetlake's ranges, and ok is false.
func ParseName(name string) (n Name, ok bool) {
	if len(name) < RangeLen+2 || name[SeqLen] != '-' {
		return Name{}, false
	}
	first, ok1 := parseSeq(name[:SeqLen])
	last, ok2 := parseSeq(name[SeqLen+1 : RangeLen])
	if !ok1 || !ok2 || first == 0 || last < first {
		return Name{}, false
	}
	n = Name{First: first, Last: last}
	rest := name[RangeLen:]
	switch {
	case rest[0] == '.':
		n.Ext = rest[1:]
	case strings.HasPrefix(rest, "-c"):
		id, ext, _ := strings.Cut(rest[2:], ".")
		if id == "" || strings.Contains(id, "/") || ext != CompactedExt {
			return Name{}, false
		}
		n.Compaction, n.Ext = id, ext
	default:
		return Name{}, false
	}
	if n.Ext == "" {
		return Name{}, false
	}
	return n, true
}

// parseSeq parses SeqLen decimal digits.
func parseSeq(s string) (uint64, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64) // fails past math.MaxUint64
	return v, err == nil
}
