package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/jetlake/jetlake/pathtemplate"
)

// RestoreResult measures jetlake restore: messages exported as json_lines
// and as parquet, published back into a fresh stream in a chain of fast
// batches, against a plain jetstream publisher publishing as many
// messages of the same size into a fresh stream, measured in the same run.
type RestoreResult struct {
	Messages     int `json:"messages"`
	Subjects     int `json:"subjects"`
	PayloadBytes int `json:"payload_bytes"`
	Rounds       int `json:"rounds"` // rounds measured: the publishers and every restore once each
	// ExportsFrom says what wrote the objects restored: a workload's
	// runs of round 1, or an export of the measurement's own.
	ExportsFrom string `json:"exports_from,omitempty"`
	// Publisher is the baseline: a plain jetstream publisher (the round
	// of the median time).
	Publisher *PublishResult `json:"publisher,omitempty"`
	// HeadedPublisher is the plain publisher with the headers a restore
	// adds to each message (Jetlake-Source-Stream, -Created, -Sequence and
	// -Time): what the server's work on them costs (for comparison).
	HeadedPublisher *PublishResult `json:"headed_publisher,omitempty"`
	// AtomicPublisher publishes the same messages in atomic batches of
	// the server's largest size, one batch at a time, each after the
	// last sequence: what the server's atomic batches cost a publisher
	// that does nothing else (for comparison, not the target).
	AtomicPublisher *PublishResult `json:"atomic_publisher,omitempty"`
	// Runs are the restores, one per export: the round of the median
	// ratio.
	Runs []*RestoreRun `json:"runs,omitempty"`

	Error string `json:"error,omitempty"`
}

// PublishResult is one publisher of the restore measurement, in the bench
// process.
type PublishResult struct {
	Method            string  `json:"method"`
	Seconds           float64 `json:"seconds"` // from the first publish to the last ack
	MessagesPerSecond float64 `json:"messages_per_second"`
	CPUSeconds        float64 `json:"cpu_seconds"` // of the bench process meanwhile
	NATSCPUSeconds    float64 `json:"nats_cpu_seconds,omitempty"`
	// RoundSeconds are the times of every round.
	RoundSeconds []float64 `json:"round_seconds,omitempty"`
}

// RestoreRun is one jetlake restore process.
type RestoreRun struct {
	Format  string `json:"format"`
	Objects int    `json:"objects"` // data objects the export wrote
	Bytes   int64  `json:"bytes"`   // of those objects

	Seconds           float64 `json:"seconds,omitempty"` // wall time of the process
	MessagesPerSecond float64 `json:"messages_per_second,omitempty"`
	CPUSeconds        float64 `json:"cpu_seconds,omitempty"` // user + system
	PeakRSSBytes      int64   `json:"peak_rss_bytes,omitempty"`
	NATSCPUSeconds    float64 `json:"nats_cpu_seconds,omitempty"`
	MinIOCPUSeconds   float64 `json:"minio_cpu_seconds,omitempty"`
	// Ratio is its msg/s over the plain publisher's: the target is 0.8.
	Ratio float64 `json:"ratio,omitempty"`
	// HeadedRatio is its msg/s over the headed publisher's, AtomicRatio
	// over the atomic-batch publisher's.
	HeadedRatio float64 `json:"headed_ratio,omitempty"`
	AtomicRatio float64 `json:"atomic_ratio,omitempty"`
	// Round is the round shown, RoundRatios the ratio of every round.
	Round       int       `json:"round,omitempty"`
	RoundRatios []float64 `json:"round_ratios,omitempty"`

	Error string `json:"error,omitempty"`
}

// restoreSpec is the restore measurement: messages over subjects.
type restoreSpec struct {
	Messages, Subjects, Rounds int
}

// restoreTarget is the stream the publishers and restores publish to,
// created afresh for each; its subjects are restorePrefix.>.
const restoreTarget = "BENCH_RESTORED"

// restorePrefix goes before every restored subject (restore
// -subject-prefix), so that the source stream may stay.
const restorePrefix = "restored"

// restoreBatch is the atomic-batch publisher's batch: the server's
// largest (max_batch_size's default).
const restoreBatch = 1000

// restoreFormats are the runs whose output is restored.
var restoreFormats = []string{runJSONLines, "parquet"}

// restoreExport is an export a restore reads.
type restoreExport struct {
	format  string
	file    string // the connector file of the run that wrote it
	name    string // of the workload: its subjects are bench.<name>.<subject>
	objects int
	bytes   int64
}

// workloadExports returns what round 1's runs of restoreFormats wrote of
// a workload of ws that holds spec's messages (plain ones, over as many
// subjects), to restore from; nil when no workload has them all.
func (b *bench) workloadExports(ws []*workloadState, spec restoreSpec) []restoreExport {
	for _, w := range ws {
		if w.spec.Messages != spec.Messages || w.spec.Subjects != spec.Subjects || w.spec.SmallObjects || w.spec.Partitions > 1 || w.spec.KeyValues > 0 {
			continue
		}
		var out []restoreExport
		for _, name := range restoreFormats {
			rs, ok := runSpecByName(name)
			runs := w.runs[name]
			if !ok || len(runs) == 0 || runs[0].Round != 1 || !succeeded(runs[0]) {
				break
			}
			out = append(out, restoreExport{format: rs.Format, file: b.runFiles(w.res, rs, 1).connector, name: w.spec.Name,
				objects: runs[0].Objects, bytes: runs[0].Bytes})
		}
		if len(out) == len(restoreFormats) {
			return out
		}
	}
	return nil
}

// restore measures in rounds the publishers and a restore from each of
// exports, each into a fresh stream. Without exports (none given, as a
// workload wrote them), it fills a stream of its own and exports it first.
func (b *bench) restore(ctx context.Context, spec restoreSpec, exports []restoreExport) *RestoreResult {
	r := &RestoreResult{Messages: spec.Messages, Subjects: spec.Subjects, PayloadBytes: b.cfg.PayloadBytes}
	if b.skip("restore", &r.Error) {
		return r
	}
	name := "restore"
	if len(exports) > 0 {
		name = exports[0].name
		r.ExportsFrom = fmt.Sprintf("the objects of workload %s's %s runs of round 1", name, strings.Join(restoreFormats, " and "))
	} else {
		r.ExportsFrom = "a stream of its own, exported with jetlake run -until-idle as json_lines and as parquet"
		w := &WorkloadResult{Name: name, Messages: spec.Messages, Subjects: spec.Subjects, Stream: "BENCH_RESTORE", GroupBy: "subject"}
		defer b.deleteStream(ctx, w.Stream)
		if err := b.prefill(ctx, workloadSpec{Name: w.Name, Messages: spec.Messages, Subjects: spec.Subjects}, w); err != nil {
			r.Error = b.failure("restore pre-fill", ctx, err)
			return r
		}
		for _, f := range restoreFormats {
			rs, _ := runSpecByName(f)
			rs.Name = "restore-" + strings.ReplaceAll(f, "_", "-")
			e, err := b.restoreExport(ctx, w, rs)
			if err != nil {
				r.Error = b.failure("restore: export as "+rs.Format, ctx, err)
				return r
			}
			exports = append(exports, e)
		}
	}
	defer b.deleteStream(ctx, restoreTarget)

	msgs := newPublisherMessages(b.cfg.PayloadBytes, name, spec)
	var plain, headed, atomic []*PublishResult
	runs := make([][]*RestoreRun, len(exports))
	var problems []string
	var first time.Duration
	for k := 1; k <= max(spec.Rounds, 1) && ctx.Err() == nil; k++ {
		start := time.Now()
		if left := time.Until(b.deadline); k > 1 && left < first+first/5+10*time.Second {
			b.progress("restore: round %d of %d skipped: %s of the time budget left, a round takes about %s", k, spec.Rounds, fmtDur(left), fmtDur(first))
			break
		}
		var ps [3]*PublishResult
		for kind := range ps {
			what := publisherKinds[kind]
			if b.skip("restore: "+what, &r.Error) {
				break
			}
			p, err := b.publishBaseline(ctx, msgs, kind)
			if err != nil {
				r.Error = b.failure("restore: "+what, ctx, err)
				break
			}
			b.progress("restore (round %d): %s: %s, %s msg/s, nats-server CPU %s", k, what, fmtSeconds(p.Seconds),
				fmtInt(int64(p.MessagesPerSecond)), fmtSeconds(p.NATSCPUSeconds))
			ps[kind] = p
		}
		if ps[len(ps)-1] == nil {
			break
		}
		p, h, a := ps[plainPublisher], ps[headedPublisher], ps[atomicPublisher]
		plain, headed, atomic = append(plain, p), append(headed, h), append(atomic, a)
		for i, e := range exports {
			if b.skip("restore from "+e.format, &r.Error) {
				break
			}
			run := &RestoreRun{Format: e.format, Objects: e.objects, Bytes: e.bytes, Round: k}
			if err := b.restoreRun(ctx, spec, e, run); err != nil {
				run.Error = b.failure(fmt.Sprintf("restore from %s (round %d)", e.format, k), ctx, err)
				problems = append(problems, run.Error)
				continue
			}
			run.Ratio = run.MessagesPerSecond / p.MessagesPerSecond
			run.HeadedRatio = run.MessagesPerSecond / h.MessagesPerSecond
			run.AtomicRatio = run.MessagesPerSecond / a.MessagesPerSecond
			runs[i] = append(runs[i], run)
			b.progress("restore from %s (round %d): %s, %s msg/s: %s × the plain publisher, %s × with restore's headers, %s × the atomic-batch publisher; CPU %s, peak RSS %s, nats-server CPU %s",
				e.format, k, fmtSeconds(run.Seconds), fmtInt(int64(run.MessagesPerSecond)), fmtRatio(run.Ratio), fmtRatio(run.HeadedRatio), fmtRatio(run.AtomicRatio),
				fmtSeconds(run.CPUSeconds), fmtMiB(run.PeakRSSBytes), fmtSeconds(run.NATSCPUSeconds))
		}
		r.Rounds = k
		if k == 1 {
			first = time.Since(start)
		}
	}
	r.Publisher, r.HeadedPublisher, r.AtomicPublisher = medianPublish(plain), medianPublish(headed), medianPublish(atomic)
	for i := range exports {
		if run := medianRestore(runs[i]); run != nil {
			r.Runs = append(r.Runs, run)
		}
	}
	r.Error = join(r.Error, strings.Join(problems, "; "))
	return r
}

// medianPublish is the round of the median time (the slower of two), with
// the times of every round.
func medianPublish(ps []*PublishResult) *PublishResult {
	if len(ps) == 0 {
		return nil
	}
	sorted := slices.Clone(ps)
	slices.SortStableFunc(sorted, func(a, b *PublishResult) int { return cmp.Compare(a.Seconds, b.Seconds) })
	m := *sorted[len(sorted)/2]
	m.RoundSeconds = nil
	for _, p := range ps {
		m.RoundSeconds = append(m.RoundSeconds, p.Seconds)
	}
	return &m
}

// medianRestore is the round of the median ratio (the lower of two), with
// the ratios of every round.
func medianRestore(runs []*RestoreRun) *RestoreRun {
	if len(runs) == 0 {
		return nil
	}
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(a, b *RestoreRun) int { return cmp.Compare(a.Ratio, b.Ratio) })
	m := *sorted[(len(sorted)-1)/2]
	for _, r := range runs {
		m.RoundRatios = append(m.RoundRatios, r.Ratio)
	}
	return &m
}

// restoreExport exports w's stream with jetlake run -until-idle in the
// output of spec, checks that every message was acked, and counts the
// data objects.
func (b *bench) restoreExport(ctx context.Context, w *WorkloadResult, spec runSpec) (restoreExport, error) {
	e := restoreExport{format: spec.Format, name: w.Name, file: filepath.Join(b.logDir, spec.Name+".toml")}
	consumer, prefix := "bench-"+spec.Name, spec.Name
	if err := os.WriteFile(e.file, b.connector(w, spec, consumer, prefix, ""), 0o644); err != nil {
		return e, err
	}
	b.progress("restore: jetlake run exports %s messages as %s", fmtInt(int64(w.Messages)), spec.Format)
	defer b.deleteConsumer(ctx, w.Stream, consumer)
	if _, err := b.runJetlake(ctx, e.file, filepath.Join(b.logDir, spec.Name+".log")); err != nil {
		return e, err
	}
	if _, err := b.checkConsumer(ctx, w, consumer); err != nil {
		return e, err
	}
	objs, err := b.objects(ctx, prefix+"/")
	if err != nil {
		return e, err
	}
	own := pathtemplate.OwnPrefix(prefix)
	for key, size := range objs {
		if !strings.HasPrefix(key, own) {
			e.objects++
			e.bytes += size
		}
	}
	if e.objects == 0 {
		return e, errors.New("the export wrote no data object")
	}
	return e, nil
}

// publisherMessages are the messages the publishers publish: n of them,
// message i on subjects[i mod len(subjects)] with payloads[i mod
// len(payloads)]. The payloads are the workload's (as prefill makes them),
// made before the clock starts; a few thousand of them, not n: the bench
// process stays small, as a process's peak RSS on Linux counts its
// parent's at the fork that started it.
type publisherMessages struct {
	n        int
	subjects []string
	payloads [][]byte
}

// publisherPayloads is how many distinct payloads the publishers cycle
// through.
const publisherPayloads = 4096

func newPublisherMessages(size int, name string, spec restoreSpec) *publisherMessages {
	m := &publisherMessages{n: spec.Messages, subjects: make([]string, spec.Subjects)}
	for i := range m.subjects {
		m.subjects[i] = fmt.Sprintf("%s.bench.%s.s%05d", restorePrefix, name, i)
	}
	gen := newPayloadGen(size, uint64(spec.Messages))
	now := time.Now()
	for i := range min(spec.Messages, publisherPayloads) {
		m.payloads = append(m.payloads, gen.next(i, now))
	}
	return m
}

func (m *publisherMessages) subject(i int) string { return m.subjects[i%len(m.subjects)] }
func (m *publisherMessages) payload(i int) []byte { return m.payloads[i%len(m.payloads)] }

// createRestoreTarget creates the target stream afresh: file storage,
// the restored subjects, atomic batches and direct gets allowed (as a
// restore's target is to be created).
func (b *bench) createRestoreTarget(ctx context.Context) error {
	if err := b.js.DeleteStream(ctx, restoreTarget); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("delete old stream %s: %w", restoreTarget, err)
	}
	_, err := b.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:               restoreTarget,
		Subjects:           []string{restorePrefix + ".>"},
		Storage:            jetstream.FileStorage,
		AllowAtomicPublish: true,
		AllowBatchPublish:  true,
		AllowDirect:        true,
	})
	if err != nil {
		return fmt.Errorf("create stream %s: %w", restoreTarget, err)
	}
	return nil
}

// checkRestoreTarget checks that the target holds n messages, under
// sequences 1 to n.
func (b *bench) checkRestoreTarget(ctx context.Context, n int) error {
	st, err := b.js.Stream(ctx, restoreTarget)
	if err != nil {
		return err
	}
	if s := st.CachedInfo().State; s.Msgs != uint64(n) || s.FirstSeq != 1 || s.LastSeq != uint64(n) {
		return fmt.Errorf("stream %s holds %d messages, sequences %d to %d; want %d, 1 to %d", restoreTarget, s.Msgs, s.FirstSeq, s.LastSeq, n, n)
	}
	return nil
}

// The baseline publishers.
const (
	plainPublisher  = iota // the target's
	headedPublisher        // with the headers a restore adds
	atomicPublisher        // in atomic batches
)

// publisherKinds name the baseline publishers.
var publisherKinds = [...]string{"plain publisher", "plain publisher with restore's headers", "atomic-batch publisher"}

// publishBaseline publishes msgs into a fresh target stream from a
// connection of its own, and measures it. Plainly: asynchronous publishes
// with publishWindow awaiting their acks (the fastest of the windows
// tried, 256 to 16,384), until every ack is in; headed, the same with the
// headers a restore adds. In atomic batches: one batch of restoreBatch
// messages at a time, each after the sequence the last one ended at
// (Nats-Expected-Last-Sequence), as a restore into a stream with
// allow_atomic alone publishes them, without its headers and its reading.
func (b *bench) publishBaseline(ctx context.Context, msgs *publisherMessages, kind int) (*PublishResult, error) {
	if err := b.createRestoreTarget(ctx); err != nil {
		return nil, err
	}
	nc, err := b.ns.Connect(nats.Name("jetlake-bench-publisher"))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	errs := make(chan error, 1)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(publishWindow),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	if err != nil {
		return nil, err
	}
	r := &PublishResult{Method: fmt.Sprintf("PublishAsync, %s awaiting their acks", fmtInt(publishWindow))}
	switch kind {
	case headedPublisher:
		r.Method += ", each message with Jetlake-Source-Stream, -Created, -Sequence and -Time"
	case atomicPublisher:
		r.Method = fmt.Sprintf("jetstreamext.PublishMsgBatch, %s a batch, each after the last sequence", fmtInt(restoreBatch))
	}
	startCPU, self := b.serverCPU(), selfCPU()
	start := time.Now()
	if kind == atomicPublisher {
		err = publishBatches(ctx, js, msgs)
	} else {
		err = publishAsync(ctx, js, msgs, kind == headedPublisher, errs)
	}
	r.Seconds = time.Since(start).Seconds()
	r.CPUSeconds = (selfCPU() - self).Seconds()
	var minio float64
	b.since(startCPU, &r.NATSCPUSeconds, &minio)
	if err != nil {
		return nil, err
	}
	r.MessagesPerSecond = float64(msgs.n) / r.Seconds
	if err := b.checkRestoreTarget(ctx, msgs.n); err != nil {
		return nil, err
	}
	return r, b.js.DeleteStream(ctx, restoreTarget)
}

// publishAsync publishes msgs asynchronously and waits for every ack.
// With headers, each message carries those a restore adds.
func publishAsync(ctx context.Context, js jetstream.JetStream, msgs *publisherMessages, headers bool, errs <-chan error) error {
	stream, created := []string{"BENCH_RESTORE"}, []string{time.Now().UTC().Format(time.RFC3339Nano)}
	for i := range msgs.n {
		m := &nats.Msg{Subject: msgs.subject(i), Data: msgs.payload(i)}
		if headers {
			m.Header = nats.Header{
				"Jetlake-Source-Stream":   stream,
				"Jetlake-Source-Created":  created,
				"Jetlake-Source-Sequence": {strconv.Itoa(i + 1)},
				"Jetlake-Source-Time":     {time.Now().UTC().Format(time.RFC3339Nano)},
			}
		}
		if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil {
			return fmt.Errorf("publish message %d: %w", i+1, err)
		}
		if i%4096 == 0 {
			select {
			case err := <-errs:
				return fmt.Errorf("publish: %w", err)
			case <-ctx.Done():
				return ctx.Err()
			default:
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case err := <-errs:
		return fmt.Errorf("publish: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-errs:
		return fmt.Errorf("publish: %w", err)
	default:
		return nil
	}
}

// publishBatches publishes msgs in atomic batches, one at a time.
func publishBatches(ctx context.Context, js jetstream.JetStream, msgs *publisherMessages) error {
	var last uint64
	batch := make([]*nats.Msg, 0, restoreBatch)
	for i := 0; i < msgs.n; i += restoreBatch {
		batch = batch[:0]
		for j := i; j < min(msgs.n, i+restoreBatch); j++ {
			batch = append(batch, &nats.Msg{Subject: msgs.subject(j), Data: msgs.payload(j)})
		}
		batch[0].Header = nats.Header{jetstream.ExpectedLastSeqHeader: {strconv.FormatUint(last, 10)}}
		ack, err := jetstreamext.PublishMsgBatch(ctx, js, batch)
		if err != nil {
			return fmt.Errorf("batch from message %d: %w", i+1, err)
		}
		if ack.Sequence != last+uint64(len(batch)) {
			return fmt.Errorf("batch of %d after sequence %d ended at %d", len(batch), last, ack.Sequence)
		}
		last = ack.Sequence
	}
	return nil
}

// selfCPU is the CPU time (user+sys) this process has used.
func selfCPU() time.Duration {
	d, _ := procCPU(os.Getpid())
	return d
}

// restoreRun runs jetlake restore from the export of file into a fresh
// target, measures it into run, and checks that the target holds every
// message under its own sequence.
func (b *bench) restoreRun(ctx context.Context, spec restoreSpec, e restoreExport, run *RestoreRun) error {
	if err := b.createRestoreTarget(ctx); err != nil {
		return err
	}
	base := filepath.Join(b.logDir, fmt.Sprintf("restore-from-%s-r%d", e.format, run.Round))
	args := []string{"restore", "-quiet", "-config", e.file, "-target", restoreTarget, "-subject-prefix", restorePrefix}
	if b.cfg.Profile {
		args = append(args, "-cpuprofile", base+".cpu.pprof")
	}
	b.progress("restore: jetlake restore from %s (%s objects, %s)", e.format, fmtInt(int64(run.Objects)), fmtMB(run.Bytes))
	startCPU := b.serverCPU()
	log := base + ".log"
	res, err := b.runChild(ctx, log, args...)
	b.since(startCPU, &run.NATSCPUSeconds, &run.MinIOCPUSeconds)
	if res != nil {
		run.Seconds, run.CPUSeconds, run.PeakRSSBytes = res.wall.Seconds(), res.cpu.Seconds(), res.maxRSS
	}
	if err != nil {
		if out, rerr := os.ReadFile(log); rerr == nil {
			err = fmt.Errorf("%w: %s", err, lastLine(string(out)))
		}
		return err
	}
	run.MessagesPerSecond = float64(spec.Messages) / run.Seconds
	out, err := os.ReadFile(log)
	if err != nil {
		return err
	}
	want := fmt.Sprintf("%d messages published in fast batches", spec.Messages)
	if !strings.Contains(string(out), want) {
		return fmt.Errorf("its output lacks %q: %s", want, lastLine(string(out)))
	}
	if err := b.checkRestoreTarget(ctx, spec.Messages); err != nil {
		return err
	}
	return b.js.DeleteStream(ctx, restoreTarget)
}

// lastLine is the last line of s that is not empty.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// lines writes the measurement.
func (r *RestoreResult) lines(b *strings.Builder) {
	fmt.Fprintf(b, "\n### Restore: %s messages of %d B over %d subjects, exported, then published back into a fresh stream\n\n",
		fmtInt(int64(r.Messages)), r.PayloadBytes, r.Subjects)
	if r.Error != "" {
		fmt.Fprintf(b, "**%s**\n\n", r.Error)
	}
	var about []string
	if r.ExportsFrom != "" {
		about = append(about, fmt.Sprintf("Restored from %s, under the subject prefix %q, into a fresh file stream with allow_batched and allow_atomic (the publishers too): restore publishes a chain of fast batches, each message right after the one before.", r.ExportsFrom, restorePrefix))
	}
	if r.Rounds > 1 {
		about = append(about, fmt.Sprintf("%d rounds, each the three publishers and then every restore; the median round is shown, with the spread of all rounds.", r.Rounds))
	}
	if len(about) > 0 {
		b.WriteString(strings.Join(about, " ") + "\n\n")
	}
	for _, p := range []struct {
		what string
		p    *PublishResult
	}{{"baseline, a plain jetstream publisher", r.Publisher}, {"the plain publisher with the headers a restore adds (for comparison)", r.HeadedPublisher},
		{"atomic-batch publisher (for comparison, not the target)", r.AtomicPublisher}} {
		if p.p == nil {
			continue
		}
		fmt.Fprintf(b, "- %s: %s: %s%s, **%s msg/s**, its CPU %s, nats-server CPU %s\n",
			p.what, p.p.Method, fmtSeconds(p.p.Seconds), spread(p.p.RoundSeconds), fmtInt(int64(p.p.MessagesPerSecond)),
			fmtSeconds(p.p.CPUSeconds), fmtSeconds(p.p.NATSCPUSeconds))
	}
	for _, run := range r.Runs {
		var rounds string
		if len(run.RoundRatios) > 1 {
			parts := make([]string, len(run.RoundRatios))
			for i, x := range run.RoundRatios {
				parts[i] = fmtRatio(x)
			}
			rounds = " (rounds: " + strings.Join(parts, " / ") + ")"
		}
		fmt.Fprintf(b, "- jetlake restore from %s (%s objects, %s): %s, %s msg/s, **%s × the plain publisher**%s (target ≥ 0.8), %s × the one with restore's headers, %s × the atomic-batch publisher; CPU %s, peak RSS %s, nats-server CPU %s, MinIO CPU %s\n",
			run.Format, fmtInt(int64(run.Objects)), fmtMB(run.Bytes), fmtSeconds(run.Seconds), fmtInt(int64(run.MessagesPerSecond)),
			fmtRatio(run.Ratio), rounds, fmtRatio(run.HeadedRatio), fmtRatio(run.AtomicRatio), fmtSeconds(run.CPUSeconds), fmtMiB(run.PeakRSSBytes),
			fmtSeconds(run.NATSCPUSeconds), fmtSeconds(run.MinIOCPUSeconds))
	}
}
