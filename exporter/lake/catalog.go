package lake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/lossmarker"
	"github.com/jetlake/jetlake/pathtemplate"
)

// Catalog is what a file connector's lake holds of one stream, object by
// object: the data objects, rejected objects and loss markers of one
// incarnation of the stream (a stream deleted and created again under the
// same name starts its sequences again). A restore reads it.
type Catalog struct {
	Stream  string
	Created time.Time // the incarnation's creation time, as the objects name it
	// Others are the creation times of the other incarnations the lake
	// holds objects of, oldest first.
	Others   []time.Time
	Data     []CatalogObject // sorted by First, then key
	Rejected []CatalogObject // sorted by First, then key
	Markers  []*lossmarker.Marker
}

// CatalogObject is one data or rejected object of a Catalog.
type CatalogObject struct {
	Key         string
	First, Last uint64 // the sequences it holds are within First-Last
	// Seqs are the sequences it holds, from its metadata; empty when the
	// metadata does not carry them (its records do).
	Seqs progress.Seqs
	// Ordered says its metadata says its records are in sequence order.
	Ordered bool
}

// Holds reports whether o may hold sequences within r.
func (o CatalogObject) Holds(r progress.Range) bool { return o.First <= r.Last && r.First <= o.Last }

// ReadCatalog lists what cfg's lake holds of stream: of the incarnation
// created at created, or, with a zero created, of the newest one the lake
// holds data objects of. Markers count for every consumer of the
// connector's entries of the stream, and only when detected after the
// incarnation was created. Objects jetlake did not write (names it does not
// give, markers it did not write) are left out.
func ReadCatalog(ctx context.Context, cfg *config.Connector, stream string, created time.Time, store objstore.ObjectReader) (*Catalog, error) {
	prefix := ""
	if cfg.S3.Prefix != "" {
		prefix = cfg.S3.Prefix + "/"
	}
	own := pathtemplate.OwnPrefix(cfg.S3.Prefix)
	lost := pathtemplate.StreamPrefix(cfg.S3.Prefix, pathtemplate.Lost, stream)
	rejected := pathtemplate.StreamPrefix(cfg.S3.Prefix, pathtemplate.Rejected, stream)
	type found struct {
		CatalogObject
		created  time.Time
		rejected bool
	}
	var objects []found
	var markers []*lossmarker.Marker
	err := store.List(ctx, prefix, func(key string, md map[string]string) error {
		isRejected := strings.HasPrefix(key, rejected)
		switch {
		case strings.HasPrefix(key, lost):
			m, why, _, err := readMarker(ctx, store, key, md, stream)
			if errors.Is(err, objstore.ErrNotFound) || why != "" {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			markers = append(markers, m)
			return nil
		case !isRejected && strings.HasPrefix(key, own):
			return nil
		}
		name, ok := pathtemplate.ParseName(path.Base(key))
		if !ok || name.Ext == pathtemplate.LostExt {
			return nil
		}
		if md == nil || md[objstore.MetaStream] == "" {
			var err error
			if md, err = store.Head(ctx, key); errors.Is(err, objstore.ErrNotFound) {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		}
		if md[objstore.MetaStream] != stream {
			return nil
		}
		c, err := time.Parse(time.RFC3339Nano, md[objstore.MetaStreamCreated])
		if err != nil {
			return nil // not a data object jetlake wrote
		}
		o := found{CatalogObject: CatalogObject{Key: key, First: name.First, Last: name.Last}, created: c, rejected: isRejected}
		o.Seqs, _ = objstore.SeqsOf(md)
		o.Ordered = md[objstore.MetaOrdered] == "true"
		objects = append(objects, o)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	cat := &Catalog{Stream: stream, Created: created}
	var times []time.Time
	for _, o := range objects {
		if !o.rejected && !slices.ContainsFunc(times, o.created.Equal) {
			times = append(times, o.created)
		}
	}
	slices.SortFunc(times, time.Time.Compare)
	if cat.Created.IsZero() && len(times) > 0 {
		cat.Created = times[len(times)-1]
	}
	for _, t := range times {
		if !t.Equal(cat.Created) {
			cat.Others = append(cat.Others, t)
		}
	}
	for _, o := range objects {
		switch {
		case !o.created.Equal(cat.Created):
		case o.rejected:
			cat.Rejected = append(cat.Rejected, o.CatalogObject)
		default:
			cat.Data = append(cat.Data, o.CatalogObject)
		}
	}
	consumers := entryConsumersOf(cfg, stream)
	for _, m := range markers {
		if !m.DetectedAt.Before(cat.Created) && (m.Consumer == "" || slices.Contains(consumers, m.Consumer)) {
			cat.Markers = append(cat.Markers, m)
		}
	}
	byFirst := func(a, b CatalogObject) int {
		return cmp.Or(cmp.Compare(a.First, b.First), strings.Compare(a.Key, b.Key))
	}
	slices.SortFunc(cat.Data, byFirst)
	slices.SortFunc(cat.Rejected, byFirst)
	slices.SortFunc(cat.Markers, func(a, b *lossmarker.Marker) int { return cmp.Compare(a.FirstSeq, b.FirstSeq) })
	return cat, nil
}

// entryConsumersOf lists the consumers of cfg's entries of stream.
func entryConsumersOf(cfg *config.Connector, stream string) []string {
	var out []string
	for _, sc := range cfg.Streams {
		if sc.Stream == stream {
			out = append(out, entryConsumers(sc)...)
		}
	}
	return out
}
