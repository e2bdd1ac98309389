// Package lake reads what a connector wrote back from the store: verify
// compares the data objects, loss markers and rejected objects (or, for an
// Iceberg connector, the table's current data files) with the streams,
// sequence by sequence, in ranges.
package lake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/lossmarker"
	"github.com/jetlake/jetlake/pathtemplate"
)

// VerifyOptions choose what Verify checks. The zero value checks, for each
// stream, from the lowest sequence any object or marker names to the last
// sequence the consumer was delivered, trusting object metadata.
type VerifyOptions struct {
	FromSeq, ToSeq uint64          // 0: the defaults above
	Deep           bool            // read every object and check its records
	Progress       *VerifyProgress // counts what is done as Verify goes; nil for none
}

// Report is the result of verifying one stream of a connector.
type Report struct {
	Connector string
	Stream    string
	Consumer  string
	Scope     progress.Range // sequences checked
	Filtered  bool           // the consumer sees only some subjects: only messages still in the stream are checked
	Objects   int            // data objects of the stream
	Messages  int            // sequences in data objects within scope
	// MetadataOnly counts the data objects a deep check could read only
	// from their metadata: raw records carry no sequence.
	MetadataOnly     int
	Rejected         int      // objects of rejected messages, under _jetlake/rejected/
	RejectedMessages int      // sequences within scope in those objects
	Notes            []string // how the scope or the checks were narrowed, and why
	Markers          []*lossmarker.Marker
	Missing          []progress.Range // in scope, in no object and no marker
	Overlaps         []string         // sequences in more than one object, with the objects
	Problems         []string         // objects whose name, metadata and records disagree
}

// OK reports whether every sequence in scope is in exactly one data object
// or in a loss marker.
func (r *Report) OK() bool {
	return len(r.Missing) == 0 && len(r.Overlaps) == 0 && len(r.Problems) == 0
}

// Verify compares what a connector wrote with its streams. It lists the data
// objects and loss markers under the connector's prefix, rebuilds the
// sequences each object holds (from its metadata, or by reading it), and
// checks that every sequence in scope is in exactly one object or covered by
// a marker. For a consumer that sees the whole stream every sequence in
// scope counts; for a filtered one, the messages still in the stream that
// match its filter.
func Verify(ctx context.Context, cfg *config.Connector, js jetstream.JetStream, store objstore.ObjectReader, opts VerifyOptions) ([]*Report, error) {
	v := &verifier{cfg: cfg, js: js, store: store, opts: opts}
	table, err := tableFiles(ctx, cfg)
	if err != nil {
		return nil, err
	}
	byStream, err := v.listData(ctx, table)
	if err != nil {
		return nil, err
	}
	var reports []*Report
	for _, sc := range cfg.Streams {
		opts.Progress.at("checking stream " + sc.Stream)
		rep := &Report{Connector: cfg.Name, Stream: sc.Stream, Consumer: sc.Consumer}
		reports = append(reports, rep)
		if table != nil {
			rep.Notes = append(rep.Notes, table.notes()...)
			missing := table.missing()
			rep.Problems = append(rep.Problems, missing...)
			opts.Progress.found(len(missing))
		}
		if err := v.checkStream(ctx, sc, byStream[sc.Stream], rep); err != nil {
			return nil, err
		}
	}
	return reports, nil
}

// verifier is one Verify: the connector, where it reads, and how.
type verifier struct {
	cfg   *config.Connector
	js    jetstream.JetStream
	store objstore.ObjectReader
	opts  VerifyOptions
}

// listedObject is a data or rejected object as verify read it.
type listedObject struct {
	objectRuns
	fromMeta bool   // read from metadata though a deep check was asked
	problem  string // why its sequences are unknown or in doubt
}

// listData lists the data objects under the connector's prefix, by stream,
// each with the sequences it holds. Objects of an Iceberg table that no
// commit holds yet are counted, not listed; jetlake's own objects (loss
// markers, rejected messages, probes) and names jetlake does not write are
// skipped.
func (v *verifier) listData(ctx context.Context, table *icebergFiles) (map[string][]listedObject, error) {
	prefix := ""
	if v.cfg.S3.Prefix != "" {
		prefix = v.cfg.S3.Prefix + "/"
	}
	byStream := map[string][]listedObject{}
	v.opts.Progress.at("listing objects")
	own := pathtemplate.OwnPrefix(v.cfg.S3.Prefix) // loss markers, rejected messages, probes: not data
	err := v.store.List(ctx, prefix, func(key string, md map[string]string) error {
		if strings.HasPrefix(key, own) {
			return nil
		}
		if table != nil && strings.HasPrefix(key, table.dataPrefix+"/") && !table.has(key) {
			// Stored, in no commit yet: not in the table.
			table.uncommitted++
			return nil
		}
		name, ok := pathtemplate.ParseName(path.Base(key))
		if !ok {
			return nil // not ours
		}
		v.opts.Progress.listedOne()
		if md == nil || md[objstore.MetaStream] == "" {
			var err error
			if md, err = v.store.Head(ctx, key); err != nil {
				return err
			}
		}
		o, err := v.readData(ctx, key, name, md)
		if err != nil {
			return err
		}
		if o.problem != "" {
			v.opts.Progress.found(1)
		}
		byStream[md[objstore.MetaStream]] = append(byStream[md[objstore.MetaStream]], o)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list objects: %w", err)
	}
	return byStream, nil
}

// readData rebuilds the sequences a data object holds: from its records
// when a deep check is asked or its metadata lacks them, else from its
// metadata. Name, metadata and records that disagree are a problem of the
// object, not an error of the verify.
func (v *verifier) readData(ctx context.Context, key string, name pathtemplate.Name, md map[string]string) (listedObject, error) {
	first, last := name.First, name.Last
	o := listedObject{objectRuns: objectRuns{key: key}}
	meta := md[objstore.MetaSeqs]
	fromRecords := v.opts.Deep || meta == ""
	read := 0
	defer func() { v.opts.Progress.readOne(read) }()
	if fromRecords {
		body, err := v.store.Get(ctx, key)
		if err != nil {
			return o, err
		}
		read = len(body)
		seqs, err := formats.Sequences(key, body)
		slices.Sort(seqs)
		o.runs = progress.FromSorted(seqs)
		switch {
		case errors.Is(err, formats.ErrNoRecords) && meta != "":
			fromRecords, o.fromMeta = false, v.opts.Deep
		case errors.Is(err, formats.ErrNoRecords):
			o.problem = fmt.Sprintf("%s: %v, and its %s sequences from %d to %d are too sparse for its metadata: verify can not check it",
				key, formats.ErrNoRecords, md[objstore.MetaCount], first, last)
		case err != nil:
			o.problem = err.Error()
		}
	}
	if !fromRecords {
		var set progress.Seqs
		if err := set.UnmarshalJSON([]byte(strconv.Quote(meta))); err != nil {
			o.problem = fmt.Sprintf("%s: metadata %s: %v", key, objstore.MetaSeqs, err)
		}
		o.runs = slices.Clone(set.Ranges())
	}
	// The runs are sorted by first sequence, and the last one ends with
	// the highest; a repeated sequence counts each time.
	if o.problem == "" && (len(o.runs) == 0 || o.runs[0].First != first || o.runs[len(o.runs)-1].Last != last ||
		md[objstore.MetaCount] != "" && md[objstore.MetaCount] != strconv.FormatUint(progress.Count(o.runs), 10)) {
		o.problem = fmt.Sprintf("%s: its name, metadata and records disagree on the sequences it holds", key)
	}
	return o, nil
}

// checkStream fills rep, the report of one [[streams]] entry whose data
// objects are objects: its loss markers and rejected objects, its scope,
// and what of the scope is missing or written twice.
func (v *verifier) checkStream(ctx context.Context, sc config.Stream, objects []listedObject, rep *Report) error {
	var err error
	if rep.Markers, err = v.readMarkers(ctx, sc, rep); err != nil {
		return err
	}
	rejected, err := v.readRejected(ctx, sc.Stream)
	if err != nil {
		return err
	}
	rep.Rejected = len(rejected)
	stream, err := v.js.Stream(ctx, sc.Stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", sc.Stream, err)
	}
	si := stream.CachedInfo()
	rep.Filtered = !config.FiltersCover(sc.Subjects, si.Config.Subjects)
	rep.Scope = v.scope(ctx, sc, stream, objects, rep)
	from, to := rep.Scope.First, rep.Scope.Last

	in := coverageInput{scope: rep.Scope, markers: rep.Markers, filtered: rep.Filtered}
	for _, o := range objects {
		rep.Objects++
		if o.fromMeta {
			rep.MetadataOnly++
		}
		if o.problem != "" {
			rep.Problems = append(rep.Problems, o.problem)
			continue
		}
		in.data = append(in.data, o.objectRuns)
	}
	for _, o := range rejected {
		if o.problem != "" {
			rep.Problems = append(rep.Problems, o.problem)
			continue
		}
		in.rejected = append(in.rejected, o.objectRuns)
	}
	if rep.Filtered {
		var taken uint64
		if rep.Markers, taken = withoutExported(rep.Markers, in.data); taken > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%d sequences loss markers name are in data objects: not counted lost", taken))
		}
		in.markers = rep.Markers
	}
	if to < from {
		return nil
	}
	// What must be covered: every sequence in scope for a consumer that
	// sees the whole stream; the matching messages still in the stream
	// for a filtered one.
	if rep.Filtered {
		v.opts.Progress.at("reading the sequences of stream " + sc.Stream + "'s filtered subjects")
		if in.stream, _, err = jsclient.ReadSequences(ctx, v.js, sc.Stream, entryFilters(sc, si.Config.Subjects), from, to, 0, time.Second); err != nil {
			return err
		}
	}
	c := checkCoverage(in)
	rep.Missing, rep.Overlaps = c.missing, c.overlaps
	v.opts.Progress.found(len(c.missing) + len(c.overlaps))
	rep.Messages, rep.RejectedMessages = c.messages, c.rejectedMessages
	return nil
}

// readMarkers reads the loss markers of sc's stream that name its
// consumers (or none); an object under their folder that is no marker
// (see readMarker) is a problem of rep, never a marker.
func (v *verifier) readMarkers(ctx context.Context, sc config.Stream, rep *Report) ([]*lossmarker.Marker, error) {
	var markers []*lossmarker.Marker
	mprefix := pathtemplate.StreamPrefix(v.cfg.S3.Prefix, pathtemplate.Lost, sc.Stream)
	err := v.store.List(ctx, mprefix, func(key string, md map[string]string) error {
		v.opts.Progress.listedOne()
		m, why, read, err := readMarker(ctx, v.store, key, md, sc.Stream)
		if err != nil {
			return err
		}
		v.opts.Progress.readOne(read)
		if why != "" {
			rep.Problems = append(rep.Problems, fmt.Sprintf("%s: not a loss marker: %s", key, why))
			v.opts.Progress.found(1)
			return nil
		}
		if m.Consumer == "" || slices.Contains(entryConsumers(sc), m.Consumer) {
			markers = append(markers, m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list loss markers: %w", err)
	}
	return markers, nil
}

// readRejected reads the objects of rejected messages of a stream, which
// are exported too, to their own objects.
func (v *verifier) readRejected(ctx context.Context, stream string) ([]listedObject, error) {
	var rejected []listedObject
	rprefix := pathtemplate.StreamPrefix(v.cfg.S3.Prefix, pathtemplate.Rejected, stream)
	err := v.store.List(ctx, rprefix, func(key string, _ map[string]string) error {
		v.opts.Progress.listedOne()
		body, err := v.store.Get(ctx, key)
		if err != nil {
			return err
		}
		v.opts.Progress.readOne(len(body))
		seqs, err := formats.Sequences(key, body)
		if err != nil {
			v.opts.Progress.found(1)
			rejected = append(rejected, listedObject{objectRuns: objectRuns{key: key}, problem: err.Error()})
			return nil
		}
		slices.Sort(seqs)
		rejected = append(rejected, listedObject{objectRuns: objectRuns{key: key, runs: progress.FromSorted(seqs)}})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list rejected messages: %w", err)
	}
	return rejected, nil
}

// scope returns the sequences verify checks: -from-seq and -to-seq when
// given (the latter at most the stream's last); else from the lowest
// sequence an object or marker names (or the stream's first) to as far as
// the entry's consumers got (or the stream's last).
func (v *verifier) scope(ctx context.Context, sc config.Stream, stream jetstream.Stream, objects []listedObject, rep *Report) progress.Range {
	si := stream.CachedInfo()
	from, to := v.opts.FromSeq, v.opts.ToSeq
	if to > si.State.LastSeq {
		rep.Notes = append(rep.Notes, fmt.Sprintf("-to-seq %d is past the stream's last sequence: checking up to %d", to, si.State.LastSeq))
		to = si.State.LastSeq
	}
	if to == 0 {
		// As far as the consumers or the lake got. An ack-less consumer's
		// delivered sequence says little: a move back lowers it, and a
		// consumer leader elected after a node loss may report less than
		// its old one delivered. Everything below the highest sequence an
		// object or marker holds was delivered once.
		found := false
		for _, name := range entryConsumers(sc) {
			if cons, err := stream.Consumer(ctx, name); err == nil {
				to, found = max(to, cons.CachedInfo().Delivered.Stream), true
			}
		}
		if !found {
			to = si.State.LastSeq
		}
		to = min(max(to, lakeLast(objects, rep.Markers)), si.State.LastSeq)
	}
	if from == 0 {
		from = si.State.FirstSeq
		for _, o := range objects {
			for _, r := range o.runs {
				if r.Last != 0 {
					from = min(from, max(r.First, 1))
				}
			}
		}
		for _, m := range rep.Markers {
			for _, r := range m.Runs() {
				from = min(from, r.First)
			}
		}
		from = max(from, 1)
	}
	return progress.Range{First: from, Last: to}
}

// lakeLast returns the highest sequence the objects and markers hold.
func lakeLast(objects []listedObject, markers []*lossmarker.Marker) uint64 {
	var last uint64
	for _, o := range objects {
		if n := len(o.runs); n > 0 {
			last = max(last, o.runs[n-1].Last)
		}
	}
	for _, m := range markers {
		for _, r := range m.Runs() {
			last = max(last, r.Last)
		}
	}
	return last
}

// markedRanges returns the sequences the markers name, sorted and merged.
func markedRanges(markers []*lossmarker.Marker) []progress.Range {
	var all []progress.Range
	for _, m := range markers {
		all = append(all, progress.MarkerRanges(m.Runs())...)
	}
	slices.SortFunc(all, func(a, b progress.Range) int { return cmp.Compare(a.First, b.First) })
	var merged progress.Set
	for _, r := range all {
		merged.Add(r)
	}
	return merged.Runs()
}

// entryConsumers are the consumers that export stream entry sc: its own,
// or its partitions' when it is partitioned.
func entryConsumers(sc config.Stream) []string {
	if !sc.Partitioned() {
		return []string{sc.Consumer}
	}
	out := make([]string, sc.Partitions)
	for k := range out {
		out[k] = config.PartitionConsumer(sc.Consumer, k)
	}
	return out
}

// entryFilters are the stored subjects of what stream entry sc exports: its
// filter subjects, or for a partitioned entry those of every partition.
func entryFilters(sc config.Stream, streamSubjects []string) []string {
	if !sc.Partitioned() {
		return sc.Subjects
	}
	var out []string
	for k := range sc.Partitions {
		out = append(out, config.PartitionFilters(k, sc.Subjects, streamSubjects)...)
	}
	return out
}
