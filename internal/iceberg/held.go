package iceberg

import (
	"context"
	"encoding/binary"
	"strings"

	"github.com/apache/iceberg-go"
)

// HeldRange is the stream sequences one data file of the current snapshot
// holds, from the file's column bounds.
type HeldRange struct {
	Location    string
	Stream      string // the stream column's lower bound: a prefix of the stream's name when truncated
	First, Last uint64
}

// HeldRanges returns the sequence range of every data file of the current
// snapshot whose bounds name one. A data file jetlake stored but never
// committed is committed only when it overlaps none of them.
func (t *Table) HeldRanges(ctx context.Context) ([]HeldRange, error) {
	cur := t.tbl.CurrentSnapshot()
	if cur == nil {
		return nil, nil
	}
	fs, err := t.tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	schema := t.tbl.Schema()
	seqField, ok := schema.FindFieldByName("sequence")
	if !ok {
		return nil, nil
	}
	streamField, hasStream := schema.FindFieldByName("stream")
	manifests, err := cur.Manifests(fs)
	if err != nil {
		return nil, err
	}
	var out []HeldRange
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		entries, err := m.FetchEntries(fs, true)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			df := e.DataFile()
			lo, hi := df.LowerBoundValues()[seqField.ID], df.UpperBoundValues()[seqField.ID]
			if len(lo) != 8 || len(hi) != 8 {
				continue
			}
			r := HeldRange{Location: df.FilePath(), First: binary.LittleEndian.Uint64(lo), Last: binary.LittleEndian.Uint64(hi)}
			if hasStream {
				r.Stream = string(df.LowerBoundValues()[streamField.ID])
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// Overlaps reports whether r holds a sequence of first..last of stream.
func (r HeldRange) Overlaps(stream string, first, last uint64) bool {
	return first <= r.Last && r.First <= last && strings.HasPrefix(stream, r.Stream)
}
