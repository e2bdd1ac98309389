// Package restore publishes what a connector exported back into a stream,
// exactly once: the lake back into NATS.
//
// A restore reads the connector's data objects of one stream (one
// incarnation of it: a stream deleted and created again under the same
// name starts its sequences again), selects messages by sequence, time and
// subject, and publishes them in stream sequence order to a target stream,
// each with its subject (after an optional prefix), its headers where the
// connector kept them, its payload, and headers that say where it comes
// from (HeaderSourceStream, HeaderSourceCreated, HeaderSourceSequence,
// HeaderSourceTime).
//
// Exactly once across kills: into a stream that allows fast batches, the
// messages go as a chain, each landing only right after the one before it
// (chain.go); into one that allows atomic batches, every batch lands whole
// or not at all, and only right after the stream's last sequence as the
// restore read it (pipeline.go). A restore run again finds the last
// message it restored (the newest one with this source's headers) and
// goes on after it. Into a stream with neither, each message carries a
// message id: exactly once then holds only within the stream's duplicate
// window.
package restore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/lake"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/content"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/lossmarker"
	"github.com/jetlake/jetlake/pathtemplate"
)

// Options say what a restore takes and where it puts it. The zero value
// takes everything of the connector's only stream; Target must be set
// unless DryRun.
type Options struct {
	Stream  string    // the source stream; "" for the connector's only one
	Created time.Time // the source stream's incarnation; zero for the newest the lake holds
	// Snapshot is the snapshot of an Iceberg connector's table read; 0
	// for its current one.
	Snapshot int64

	FromSeq, ToSeq uint64    // 0: from the first, to the last
	Since, Until   time.Time // message times, Until exclusive; zero: no bound
	// EventSince and EventUntil bound the messages' event times, as the
	// connector's time_source reads them (a message without one has its
	// stream time, or none when time_fallback rejects it); Until
	// exclusive, zero: no bound.
	EventSince, EventUntil time.Time
	Subjects               []string // subject filters of the original subjects; none: all

	Target        string // the stream to publish to
	SubjectPrefix string // put before every restored subject, with a dot

	DryRun bool // read and count, publish nothing
	// Rejected restores the messages the connector rejected too, each
	// with HeaderSourceRejected saying why.
	Rejected bool
	// Verify compares the target with the lake instead of publishing:
	// every selected message once, with the subject, headers and payload
	// a restore gives it (Report.Verify).
	Verify bool

	BatchMessages int // messages per batch; 0 means 1000, the most the server takes
	BatchBytes    int // payload bytes per batch; 0 means 4 MiB
	Readers       int // objects read at once; 0 means 4
	// MaxMemory bounds the bytes of the records read ahead of publishing
	// (beyond one a cursor: see source); 0 means DefaultMaxMemory.
	MaxMemory int64
	// ResumeScan bounds the target's messages looked at, from its end
	// back, for the last one restored; 0 means 1,000,000.
	ResumeScan int

	Log      *slog.Logger
	Progress *Progress // nil: none
}

// DefaultMaxMemory is the bytes of records a restore reads ahead of
// publishing by default.
const DefaultMaxMemory = 256 << 20

// Progress counts a restore's work as it goes, for a status line. Safe for
// concurrent use.
type Progress struct {
	Objects   atomic.Int64 // data objects read
	Read      atomic.Int64 // selected messages read
	Published atomic.Int64
}

// Report says what a restore did, or with DryRun would do.
type Report struct {
	Connector, Stream string
	Created           time.Time   // the source incarnation restored
	Others            []time.Time // other incarnations the lake holds
	Target            string
	Scope             progress.Range // the sequences looked at
	Objects           int            // data objects read
	Selected          uint64         // messages selected
	Published         uint64         // messages published by this run
	PublishedAlone    uint64         // of them, in a chain, published alone with a message id when another publisher kept coming between
	BatchesWithIDs    uint64         // atomic batches published with message ids when another publisher kept coming first
	Already           uint64         // selected messages a restore published before (resumed after them)
	ResumedAfter      uint64         // the last source sequence found restored, 0 for none
	Duplicates        int            // records of a sequence read twice (two objects hold it)
	BySubject         map[string]uint64
	Lost              []*lossmarker.Marker // loss markers in scope
	RejectedObjects   int                  // rejected objects in scope (restored with Options.Rejected)
	RejectedRestored  uint64               // rejected messages selected, with Options.Rejected
	Missing           []progress.Range     // in scope, in no object, marker or rejected object (unfiltered restores only)
	Publishing        Publishing           // how the messages were published
	// Table is the snapshot of an Iceberg connector's table read; nil for
	// a file connector.
	Table *lake.TableSnapshot
	// KeptSequences is the last sequence restored under its own sequence
	// number, 0 for none; WhyNotKept says why the others are not.
	KeptSequences uint64
	WhyNotKept    string
	Verify        *VerifyResult // with Options.Verify
	Took          time.Duration
}

// Run restores what cfg's lake holds of a stream into opts.Target on js,
// as opts say. js may be nil with DryRun.
func Run(ctx context.Context, cfg *config.Connector, store objstore.ObjectReader, js jetstream.JetStream, opts Options) (*Report, error) {
	start := time.Now()
	if cfg.Iceberg == nil && opts.Snapshot != 0 {
		return nil, fmt.Errorf("connector %s writes files, not an Iceberg table: it has no snapshot %d", cfg.Name, opts.Snapshot)
	}
	stream, err := sourceStream(cfg, opts.Stream)
	if err != nil {
		return nil, err
	}
	if opts.Target == "" && (!opts.DryRun || opts.Verify) {
		return nil, errors.New("no target stream: name the stream to restore into, or to verify")
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var cat *lake.Catalog
	var snap *lake.TableSnapshot
	if cfg.Iceberg != nil {
		cat, snap, err = lake.ReadTableCatalog(ctx, cfg, stream, opts.Created, opts.Snapshot, store)
	} else {
		cat, err = lake.ReadCatalog(ctx, cfg, stream, opts.Created, store)
	}
	if err != nil {
		return nil, err
	}
	if len(cat.Data) == 0 {
		return nil, fmt.Errorf("stream %s: the lake holds no data object of it", stream)
	}
	sel := selection{seqs: progress.Range{First: max(opts.FromSeq, 1), Last: opts.ToSeq}, since: opts.Since, until: opts.Until, subjects: opts.Subjects}
	if sel.seqs.Last == 0 {
		sel.seqs.Last = math.MaxUint64
	}
	rep := &Report{Connector: cfg.Name, Stream: stream, Created: cat.Created, Others: cat.Others, Target: opts.Target,
		BySubject: map[string]uint64{}, Table: snap}
	rep.Scope = scope(cat, sel.seqs)
	for _, m := range cat.Markers {
		if m.FirstSeq <= rep.Scope.Last && rep.Scope.First <= m.LastSeq {
			rep.Lost = append(rep.Lost, m)
		}
	}
	for _, o := range cat.Rejected {
		if o.Holds(rep.Scope) {
			rep.RejectedObjects++
		}
	}
	r := &restorer{opts: opts, rep: rep, log: log, progress: opts.Progress}
	if r.progress == nil {
		r.progress = &Progress{}
	}
	if !opts.EventSince.IsZero() || !opts.EventUntil.IsZero() {
		if cfg.Output.Time.Ingest() {
			return nil, fmt.Errorf("connector %s has no event time (time_source is ingest): select by the messages' stream times", cfg.Name)
		}
		if r.events, err = content.New(&cfg.Output, false); err != nil {
			return nil, err
		}
	}
	if opts.Target != "" && js != nil {
		if r.t, err = openTarget(ctx, js, opts.Target, stream, cat.Created); err != nil {
			return nil, err
		}
		rep.Publishing = r.t.publishing()
		if opts.Verify {
			if r.restored, err = r.t.readRestored(ctx); err != nil {
				return nil, err
			}
			rep.Verify = &VerifyResult{Found: uint64(len(r.restored))}
		} else if rep.ResumedAfter, err = r.t.restored(ctx, cmpOr(opts.ResumeScan, 1_000_000)); err != nil {
			return nil, err
		}
	}
	objects := cat.Data
	if opts.Rejected {
		objects = append(slices.Clone(cat.Data), cat.Rejected...)
		slices.SortStableFunc(objects, func(a, b lake.CatalogObject) int { return cmp.Compare(a.First, b.First) })
	}
	src := newSource(ctx, store, objects, sel, cmpOr(opts.Readers, 4), cmp.Or(opts.MaxMemory, DefaultMaxMemory))
	defer src.Close()
	err = r.run(ctx, src)
	rep.Duplicates = src.duplicates
	if err == nil && len(opts.Subjects) == 0 && opts.Since.IsZero() && opts.Until.IsZero() && r.events == nil {
		rep.Missing = missing(rep.Scope, &r.seen, cat, rep.Lost)
	}
	rep.Took = time.Since(start)
	return rep, err
}

// restorer is one Run under way.
type restorer struct {
	opts     Options
	rep      *Report
	log      *slog.Logger
	progress *Progress
	t        *target                 // nil in a dry run without a target
	restored map[uint64]*restoredMsg // with Options.Verify: the target's messages of this source
	events   *content.Reader         // reads event times, with Options.EventSince or EventUntil
	seen     progress.Set            // the sequences read, but for seenRun
	seenRun  progress.Range          // the run of sequences read last
	keep     bool                    // restored messages keep their sequences so far
	batch    []*nats.Msg
	bytes    int
	first    uint64 // the source sequence of the batch's first message
	lastSeq  uint64 // and of its last
	// pending is an atomic batch committed, its answer awaited
	// (pipeline.go).
	pending *pendingBatch
	chain   *chain // into a target with allow_batched (chain.go)
	started bool   // the first message to publish was added
}

func (r *restorer) run(ctx context.Context, src *source) error {
	objects := 0
	for {
		rec, err := src.Next()
		if err != nil {
			return err
		}
		if src.next != objects {
			r.progress.Objects.Add(int64(src.next - objects))
			objects = src.next
			r.rep.Objects = objects
		}
		if rec == nil {
			break
		}
		r.see(rec.Sequence)
		if r.events != nil && !r.eventSelected(rec) {
			continue
		}
		r.rep.Selected++
		r.progress.Read.Add(1)
		r.rep.BySubject[rec.Subject]++
		if rec.Headers[rejectReasonHeader] != nil {
			r.rep.RejectedRestored++
		}
		if r.restored != nil {
			r.check(rec)
			continue
		}
		if rec.Sequence <= r.rep.ResumedAfter {
			r.rep.Already++
			continue
		}
		if r.opts.DryRun || r.t == nil {
			continue
		}
		if err := r.add(ctx, rec); err != nil {
			return err
		}
	}
	if r.seenRun.Last != 0 {
		r.seen.Add(r.seenRun)
	}
	if r.restored != nil {
		r.checkExtra(src.sel)
		return nil
	}
	if r.opts.DryRun || r.t == nil {
		r.rep.WhyNotKept = r.whyNotKept()
		return nil
	}
	if err := r.flush(ctx); err != nil {
		return err
	}
	if err := r.settle(ctx); err != nil {
		return err
	}
	if r.rep.WhyNotKept == "" && !r.keep && r.rep.Published > 0 {
		r.rep.WhyNotKept = "the target stream held messages, or its last sequence was past the first restored one"
	}
	return nil
}

// eventSelected reports whether rec's event time is within the bounds.
func (r *restorer) eventSelected(rec *formats.Record) bool {
	var v pathtemplate.Values
	if _, err := r.events.Read(rec.Data, rec.Headers, rec.Time, &v); err != nil {
		return false // no event time, and no fallback: in no range
	}
	return (r.opts.EventSince.IsZero() || !v.Time.Before(r.opts.EventSince)) &&
		(r.opts.EventUntil.IsZero() || v.Time.Before(r.opts.EventUntil))
}

// check compares a selected record with the target's copy of it.
func (r *restorer) check(rec *formats.Record) {
	v := r.rep.Verify
	v.Checked++
	e := r.restored[rec.Sequence]
	switch {
	case e == nil:
		v.Missing++
		v.example("source sequence %d (%s) is not in the target", rec.Sequence, rec.Subject)
		return
	case e.count > 1:
		v.Duplicated++
		v.example("source sequence %d is in the target %d times", rec.Sequence, e.count)
	}
	e.seen = true
	m := r.t.message(rec, r.subject(rec))
	if msgHash(m.Subject, m.Header, m.Data) != e.hash || e.mixed {
		v.Differ++
		v.example("source sequence %d: the target's copy differs in subject, headers or payload", rec.Sequence)
	}
}

// checkExtra counts the target's messages of this source in the selected
// range that no selected record matched: with subject or time filters,
// they may be selected out, and are not counted.
func (r *restorer) checkExtra(sel selection) {
	if len(sel.subjects) > 0 || !sel.since.IsZero() || !sel.until.IsZero() || r.events != nil {
		return
	}
	v := r.rep.Verify
	for q, e := range r.restored {
		if !e.seen && sel.seqs.Contains(q) {
			v.Extra++
			v.example("source sequence %d is in the target, and in no data object of the lake", q)
		}
	}
}

// subject is where rec is restored to.
func (r *restorer) subject(rec *formats.Record) string {
	if r.opts.SubjectPrefix != "" {
		return r.opts.SubjectPrefix + "." + rec.Subject
	}
	return rec.Subject
}

// see records that sequence q was read.
func (r *restorer) see(q uint64) {
	if r.seenRun.Last != 0 && q == r.seenRun.Last+1 {
		r.seenRun.Last = q
		return
	}
	if r.seenRun.Last != 0 {
		r.seen.Add(r.seenRun)
	}
	r.seenRun = progress.Range{First: q, Last: q}
}

// whyNotKept says, for a dry run, whether the sequences could be kept.
func (r *restorer) whyNotKept() string {
	if len(r.rep.Missing) > 0 || len(r.rep.Lost) > 0 || r.rep.RejectedObjects > 0 && !r.opts.Rejected {
		return "the selected range has gaps: loss markers, rejected messages or sequences the lake does not hold"
	}
	return ""
}

// add adds rec to the batch, and publishes the batch when it is full or
// when rec does not follow on from the batch under kept sequences.
func (r *restorer) add(ctx context.Context, rec *formats.Record) error {
	if !r.started {
		r.started = true
		if err := r.startKeeping(ctx, rec.Sequence); err != nil {
			return err
		}
	}
	if r.keep && r.lastSeq != 0 && rec.Sequence != r.lastSeq+1 {
		if err := r.flush(ctx); err != nil {
			return err
		}
		r.keep = false
		r.rep.WhyNotKept = fmt.Sprintf("sequence %d follows %d: the sequences between are not in the lake's data (see the loss markers and rejected messages); from %d on, sequences differ", rec.Sequence, r.lastSeq, rec.Sequence)
	}
	subject := r.subject(rec)
	if r.t.fast {
		if r.chain == nil {
			r.chain = newChain(r.t, r.rep.ResumedAfter, r.landed, r.log)
		}
		r.lastSeq = rec.Sequence
		return r.chain.add(ctx, r.t.message(rec, subject), rec.Sequence, r.keep)
	}
	if len(r.batch) == 0 {
		r.first = rec.Sequence
	}
	r.batch = append(r.batch, r.t.message(rec, subject))
	r.lastSeq = rec.Sequence
	r.bytes += len(rec.Data)
	if len(r.batch) >= min(cmpOr(r.opts.BatchMessages, 1000), 1000) || r.bytes >= cmpOr(r.opts.BatchBytes, 4<<20) {
		return r.flush(ctx)
	}
	return nil
}

// startKeeping makes the restored messages keep their sequences, from
// first, when the target is empty and can start there.
func (r *restorer) startKeeping(ctx context.Context, first uint64) error {
	switch {
	case r.rep.ResumedAfter > 0:
		// A resumed restore kept them if the target's last sequence is
		// the last restored one.
		r.keep = r.t.last == r.rep.ResumedAfter && r.t.last == first-1
		if !r.keep {
			r.rep.WhyNotKept = "a restore before this one did not keep them"
		}
		return nil
	case r.t.msgs > 0 || r.t.last >= first:
		r.rep.WhyNotKept = fmt.Sprintf("the target stream holds messages up to sequence %d: only an empty stream starts at the first restored sequence", r.t.last)
		return nil
	}
	if r.t.last+1 != first {
		if err := r.t.keepSequences(ctx, first); err != nil {
			return err
		}
	}
	r.keep = true
	return nil
}

// landed counts the messages of the chain that landed.
func (r *restorer) landed(ms []chained) {
	for _, m := range ms {
		if m.kept {
			r.rep.KeptSequences = m.src
		}
	}
	r.rep.Published += uint64(len(ms))
	r.progress.Published.Add(int64(len(ms)))
}

// batchAttempts bounds the attempts at one batch.
const batchAttempts = 20

// flush publishes the batch. An atomic batch is pipelined: it is
// committed once the one before it has landed, and counted once it has
// landed itself (settle).
func (r *restorer) flush(ctx context.Context) error {
	if len(r.batch) == 0 {
		return nil
	}
	if r.t.atomic {
		err := r.pipeline(ctx)
		r.batch, r.bytes = nil, 0
		return err
	}
	n := len(r.batch)
	if err := r.t.publishIDs(ctx, r.batch); err != nil {
		return err
	}
	if r.keep {
		r.rep.KeptSequences = r.lastSeq
	}
	r.rep.Published += uint64(n)
	r.progress.Published.Add(int64(n))
	r.batch, r.bytes = r.batch[:0], 0
	return nil
}

// sourceStream returns the stream a restore reads: name, which one of
// cfg's entries must name, or cfg's only stream.
func sourceStream(cfg *config.Connector, name string) (string, error) {
	var names []string
	for _, sc := range cfg.Streams {
		if sc.Stream == name {
			return name, nil
		}
		if len(names) == 0 || names[len(names)-1] != sc.Stream {
			names = append(names, sc.Stream)
		}
	}
	switch {
	case name != "":
		return "", fmt.Errorf("connector %s exports no stream %s (it exports %v)", cfg.Name, name, names)
	case len(names) != 1:
		return "", fmt.Errorf("connector %s exports %d streams (%v): name the one to restore", cfg.Name, len(names), names)
	}
	return names[0], nil
}

// scope is the part of want the lake holds any of.
func scope(cat *lake.Catalog, want progress.Range) progress.Range {
	var lo, hi uint64
	for _, o := range cat.Data {
		if o.Holds(want) {
			if lo == 0 || o.First < lo {
				lo = o.First
			}
			hi = max(hi, o.Last)
		}
	}
	return progress.Range{First: max(lo, want.First), Last: min(hi, want.Last)}
}

// missing is what of scope is in no data object read, no loss marker and
// no rejected object.
func missing(scope progress.Range, seen *progress.Set, cat *lake.Catalog, lost []*lossmarker.Marker) []progress.Range {
	var covered progress.Set
	covered.AddAll(seen.Runs())
	for _, m := range lost {
		for _, r := range m.Runs() {
			covered.Add(progress.Range(r))
		}
	}
	for _, o := range cat.Rejected {
		if !o.Holds(scope) {
			continue
		}
		if rs := o.Seqs.Ranges(); len(rs) > 0 {
			for _, r := range rs {
				covered.Add(r)
			}
		} else {
			covered.Add(progress.Range{First: o.First, Last: o.Last})
		}
	}
	return covered.Outside(scope)
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
