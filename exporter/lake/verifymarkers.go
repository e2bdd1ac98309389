package lake

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"

	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/lossmarker"
	"github.com/jetlake/jetlake/pathtemplate"
)

// readMarker reads the loss marker of stream at key, listed with md (nil
// when the store lists no metadata). A marker is what the exporter writes:
// named as pathtemplate.LostKey names it, with the stream and consumer in
// its metadata and no intent (every data object has one), and content
// that agrees with its name and metadata. Anything else under
// _jetlake/lost/ (an object a publisher's values placed there through an
// earlier release's template, a payload that reads as a marker) is no
// marker, and why says so; it must not hide a loss. read is how many
// bytes of it were read; err is an error of the store.
func readMarker(ctx context.Context, store objstore.ObjectReader, key string, md map[string]string, stream string) (m *lossmarker.Marker, why string, read int, err error) {
	name, ok := pathtemplate.ParseName(path.Base(key))
	if !ok || name.Ext != pathtemplate.LostExt || name.Compaction != "" {
		return nil, "not named as a loss marker", 0, nil
	}
	if md == nil || md[objstore.MetaStream] == "" {
		if md, err = store.Head(ctx, key); err != nil {
			return nil, "", 0, err
		}
	}
	switch {
	case md[objstore.MetaStream] != stream:
		return nil, fmt.Sprintf("its metadata names stream %q, not %q, as a loss marker's does", md[objstore.MetaStream], stream), 0, nil
	case md[objstore.MetaIntent] != "":
		return nil, "its metadata is a data object's (it names an intent), not a loss marker's", 0, nil
	}
	body, err := store.Get(ctx, key)
	if err != nil {
		return nil, "", 0, err
	}
	m, err = lossmarker.Parse(body)
	switch {
	case err != nil:
		return nil, err.Error(), len(body), nil
	case m.Stream != stream || m.Consumer != md[objstore.MetaConsumer]:
		return nil, fmt.Sprintf("it records stream %q, consumer %q; its metadata says stream %q, consumer %q", m.Stream, m.Consumer, stream, md[objstore.MetaConsumer]), len(body), nil
	case m.FirstSeq != name.First || m.LastSeq != name.Last:
		return nil, fmt.Sprintf("it records sequences %d to %d; its name says %d to %d", m.FirstSeq, m.LastSeq, name.First, name.Last), len(body), nil
	}
	return m, "", len(body), nil
}

// withoutExported returns the markers with the sequences that data objects
// hold taken out, and how many sequences that took out. A filtered
// consumer's marker of a moved first sequence may name other subjects'
// sequences, which another partition or connector exported: those were
// never lost. A marker left with nothing is dropped.
func withoutExported(markers []*lossmarker.Marker, data []objectRuns) ([]*lossmarker.Marker, uint64) {
	var all []progress.Range
	for _, o := range data {
		all = append(all, o.runs...)
	}
	slices.SortFunc(all, func(a, b progress.Range) int { return cmp.Compare(a.First, b.First) })
	var stored progress.Set
	for _, r := range all {
		stored.Add(r)
	}
	var out []*lossmarker.Marker
	var taken uint64
	for _, m := range markers {
		var left []progress.Range
		var total uint64
		for _, r := range m.Runs() {
			total += r.Last - r.First + 1
			left = append(left, stored.Outside(progress.Range(r))...)
		}
		n := progress.Count(left)
		if n == total {
			out = append(out, m)
			continue
		}
		taken += total - n
		if len(left) == 0 {
			continue
		}
		trimmed := *m
		trimmed.FirstSeq, trimmed.LastSeq, trimmed.Count, trimmed.Ranges = left[0].First, left[len(left)-1].Last, n, nil
		if len(left) > 1 {
			for _, r := range left {
				trimmed.Ranges = append(trimmed.Ranges, lossmarker.Range(r))
			}
		}
		out = append(out, &trimmed)
	}
	return out, taken
}
