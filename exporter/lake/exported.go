package lake

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/pathtemplate"
)

// Exported is what a connector's lake holds of one stream: the sequences
// in its data objects (for an Iceberg connector, the data files of the
// table's current snapshot), in its rejected objects and in its loss
// markers. It is the record of last resort: what the state bucket's export
// record is rebuilt from when the record is missing or claims what the
// lake does not show.
type Exported struct {
	Seqs     progress.Set
	Objects  int // data objects (or table data files) of the stream
	Rejected int // rejected objects of the stream
	Markers  int // loss markers of the stream and consumer
	// Unknown counts the objects of the stream whose sequences neither
	// their metadata nor their records say (raw objects too sparse for
	// their metadata): left out, so that their messages may be written
	// again, never skipped.
	Unknown int
}

// Last returns the highest sequence the lake holds of the stream, 0 for
// none.
func (x *Exported) Last() uint64 {
	rs := x.Seqs.Runs()
	if len(rs) == 0 {
		return 0
	}
	return rs[len(rs)-1].Last
}

// ReadExported lists what cfg's lake holds of stream, created at created
// (objects of an earlier stream of the same name are left out): every data
// object under the connector's prefix whose metadata names the stream, and
// the rejected objects and loss markers under the stream's folders of
// _jetlake/. Objects and markers count only when they name one of
// consumers, or none (an object written before objects named their
// consumer): connectors that share a prefix do not take each other's.
// For an Iceberg connector, a data file counts when the table's current
// snapshot holds it, or when pending names it (by object key): an intent or
// commit plan in the state bucket, whose file recovery commits.
// It works in ranges: an object adds the runs of its sequence set, from its
// metadata when it carries them (objects are read only when it does not).
// It lists the connector's whole prefix: call it only when the export
// record is missing or in doubt.
func ReadExported(ctx context.Context, cfg *config.Connector, stream string, created time.Time, consumers []string, pending map[string]bool, store objstore.ObjectReader) (*Exported, error) {
	table, err := tableFiles(ctx, cfg)
	if err != nil {
		return nil, err
	}
	x := &Exported{}
	prefix := ""
	if cfg.S3.Prefix != "" {
		prefix = cfg.S3.Prefix + "/"
	}
	own := pathtemplate.OwnPrefix(cfg.S3.Prefix)
	lost := pathtemplate.StreamPrefix(cfg.S3.Prefix, pathtemplate.Lost, stream)
	rejected := pathtemplate.StreamPrefix(cfg.S3.Prefix, pathtemplate.Rejected, stream)
	err = store.List(ctx, prefix, func(key string, md map[string]string) error {
		switch {
		case strings.HasPrefix(key, lost):
			ok, err := x.marker(ctx, store, key, md, stream, created, consumers)
			if ok {
				x.Markers++
			}
			return err
		case strings.HasPrefix(key, rejected):
			ok, err := x.object(ctx, store, key, md, stream, created, consumers)
			if ok {
				x.Rejected++
			}
			return err
		case strings.HasPrefix(key, own):
			return nil // probes, other streams' markers and rejected objects
		case table != nil && strings.HasPrefix(key, table.dataPrefix+"/") && !table.has(key) && !pending[key]:
			return nil // stored, in no commit and in no commit to come
		}
		if _, ok := pathtemplate.ParseName(path.Base(key)); !ok {
			return nil // not jetlake's
		}
		ok, err := x.object(ctx, store, key, md, stream, created, consumers)
		if ok {
			x.Objects++
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	return x, nil
}

// add adds rs, the sorted ranges of one object or marker. Objects come in
// key order, not sequence order: the Set takes ranges in any order.
func (x *Exported) add(rs []progress.Range) {
	for _, r := range rs {
		x.Seqs.Add(r)
	}
}

// object adds the sequences of the data or rejected object at key
// when it is of stream, created at created, and of one of consumers (an
// object written before objects named their consumer counts), and reports
// whether it is.
func (x *Exported) object(ctx context.Context, store objstore.ObjectReader, key string, md map[string]string, stream string, created time.Time, consumers []string) (bool, error) {
	if md == nil || md[objstore.MetaStream] == "" {
		var err error
		if md, err = store.Head(ctx, key); errors.Is(err, objstore.ErrNotFound) {
			return false, nil // deleted since it was listed
		} else if err != nil {
			return false, fmt.Errorf("%s: %w", key, err)
		}
	}
	if md[objstore.MetaStream] != stream {
		return false, nil
	}
	if c := md[objstore.MetaConsumer]; c != "" && !slices.Contains(consumers, c) {
		return false, nil // another connector's, sharing the prefix
	}
	if c, err := time.Parse(time.RFC3339Nano, md[objstore.MetaStreamCreated]); err != nil || !c.Equal(created) {
		return false, nil // of an earlier stream of the same name
	}
	if seqs, ok := objstore.SeqsOf(md); ok {
		x.add(seqs.Ranges())
		return true, nil
	}
	body, err := store.Get(ctx, key)
	if errors.Is(err, objstore.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", key, err)
	}
	seqs, err := formats.Sequences(key, body)
	if err != nil || len(seqs) == 0 {
		x.Unknown++
		return true, nil
	}
	slices.Sort(seqs)
	x.add(progress.FromSorted(seqs))
	return true, nil
}

// marker adds the sequences of the loss marker at key when it is
// of one of consumers (or none) and was written for the stream created at
// created, and reports whether it is. A marker carries no stream creation
// time: one detected before the stream was created is of an earlier one.
// One that is no marker the exporter wrote (see readMarker) is left out:
// its sequences are walked again, and a marker written anew if they are
// gone.
func (x *Exported) marker(ctx context.Context, store objstore.ObjectReader, key string, md map[string]string, stream string, created time.Time, consumers []string) (bool, error) {
	m, why, _, err := readMarker(ctx, store, key, md, stream)
	if errors.Is(err, objstore.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", key, err)
	}
	if why != "" || m.DetectedAt.Before(created) ||
		m.Consumer != "" && !slices.Contains(consumers, m.Consumer) {
		return false, nil
	}
	x.add(progress.MarkerRanges(m.Runs()))
	return true, nil
}
