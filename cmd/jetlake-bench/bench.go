package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/exportertest"
)

// Config is one benchmark run, resolved from the flags.
type Config struct {
	Jetlake           string // path of the jetlake binary
	Workloads         []workloadSpec
	Compaction        compactionSpec  // zero: not measured
	ScaleOut          scaleOutSpec    // zero: not measured
	Cardinality       cardinalitySpec // zero: not measured
	Restore           restoreSpec     // zero: not measured
	Runs              []runSpec
	PayloadBytes      int
	MaxFileSize       int64
	MaxMessages       int
	MaxAckPending     int    // 0: derived by jetlake
	ConsumerStorage   string // config.StorageMemory or config.StorageFile, for jetlake's consumers and the consume limit's
	MaxFileAge        time.Duration
	MaxBufferedBytes  int64
	UploadConcurrency int
	Rounds            int           // measurements of each limit and run; the median is reported
	Budget            time.Duration // for everything, servers included
	LogDir            string        // empty: a temporary directory, removed at the end
	Profile           bool          // write a CPU profile of each jetlake run next to its log
	Progress          io.Writer     // progress lines; nil discards them
}

// workloadSpec is a stream to fill and export.
type workloadSpec struct {
	Name     string // short, lower case: names the stream, subjects and prefixes
	Messages int
	Subjects int
	// SmallObjects marks the high-cardinality workload: jetlake writes an
	// object per subject, far below max_file_size, so every round measures
	// MinIO's PutObject rate for objects of that size, and each run's
	// objects/s against it.
	SmallObjects bool
	// Partitions, when more than 1, gives the stream jetlake's partition
	// transform before it is filled.
	Partitions int
	// KeyValues, when more than 0, gives every payload a "key" field:
	// message i's is the value i mod KeyValues.
	KeyValues int
}

// bucket holds every object of a benchmark; runs are told apart by prefix.
const bucket = "bench"

// minStep is the least time budget a measurement starts with; with less left
// it is skipped and says so.
const minStep = 5 * time.Second

// bench is the state of one Run.
type bench struct {
	cfg      Config
	start    time.Time
	deadline time.Time
	jetlake  string // absolute path
	logDir   string
	ns       *exportertest.NATSServer
	ms       *exportertest.MinIOServer
	nc       *nats.Conn
	js       jetstream.JetStream
	s3       *minio.Client
	pubErrs  chan error
	slow     atomic.Int64 // slow consumer errors of nc
}

// Run starts the servers, measures every workload and stops the servers. It
// returns the report, also after an error, as far as it got. The error is
// for what stops the whole run (ctx ended, a server failed); a measurement
// that fails is recorded in the report instead.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	b := &bench{cfg: cfg, start: time.Now()}
	b.deadline = b.start.Add(cfg.Budget)
	rep = newReport(cfg, b.start)
	defer func() { rep.Seconds = time.Since(b.start).Seconds() }()

	if b.jetlake, err = filepath.Abs(cfg.Jetlake); err != nil {
		return rep, err
	}
	if rep.Machine.Jetlake, err = jetlakeVersion(ctx, b.jetlake); err != nil {
		return rep, err
	}
	temporary, err := b.makeLogDir()
	if err != nil {
		return rep, err
	}
	if temporary {
		defer b.dropLogDir(rep)
	}

	b.progress("starting nats-server %s and MinIO %s", exportertest.NATSServerVersion, exportertest.MinIOVersion)
	if b.ns, err = exportertest.StartNATS(exportertest.NATSOptions{}); err != nil {
		return rep, err
	}
	defer stopServer(b.ns.Stop, &err)
	if b.ms, err = exportertest.StartMinIO(exportertest.MinIOOptions{}); err != nil {
		return rep, err
	}
	defer stopServer(b.ms.Stop, &err)
	if err := b.ms.CreateBucket(ctx, bucket); err != nil {
		return rep, err
	}
	if b.s3, err = uploadClient(b.ms); err != nil {
		return rep, err
	}
	if err := b.connect(); err != nil {
		return rep, err
	}
	defer b.nc.Close()
	b.progress("servers ready: nats %s, s3 %s", b.ns.URL, b.ms.Endpoint)

	bctx, cancel := context.WithDeadline(ctx, b.deadline)
	defer cancel()
	b.measure(bctx, rep)
	if ctx.Err() != nil {
		return rep, fmt.Errorf("interrupted: %w", ctx.Err())
	}
	b.progress("done in %s", fmtDur(time.Since(b.start)))
	return rep, nil
}

// newReport starts the report of a bench of cfg started at start: the
// machine and the settings.
func newReport(cfg Config, start time.Time) *Report {
	return &Report{
		Started: start.UTC(),
		Machine: Machine{
			CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
			NATSServer: exportertest.NATSServerVersion, MinIO: exportertest.MinIOVersion,
		},
		Settings: Settings{
			PayloadBytes: cfg.PayloadBytes, MaxFileSize: cfg.MaxFileSize, MaxMessagesPerFile: cfg.MaxMessages,
			MaxAckPending:     cfg.MaxAckPending,
			ConsumerStorage:   cfg.ConsumerStorage,
			MaxFileAgeSeconds: cfg.MaxFileAge.Seconds(), MaxBufferedBytes: cfg.MaxBufferedBytes,
			UploadConcurrency: cfg.UploadConcurrency, BudgetSeconds: cfg.Budget.Seconds(),
		},
	}
}

// makeLogDir makes the directory of jetlake's logs and connector files:
// -logs, or a temporary directory when that is not given. It reports
// whether the directory is temporary.
func (b *bench) makeLogDir() (temporary bool, err error) {
	b.logDir = b.cfg.LogDir
	if b.logDir != "" {
		return false, os.MkdirAll(b.logDir, 0o755)
	}
	if b.logDir, err = os.MkdirTemp("", "jetlake-bench-"); err != nil {
		return false, err
	}
	return true, nil
}

// dropLogDir removes the temporary log directory, unless a measurement of
// rep failed: then it keeps the logs, and says where they are.
func (b *bench) dropLogDir(rep *Report) {
	if rep.Failures() > 0 {
		b.progress("jetlake's logs and connector files are kept in %s", b.logDir)
		return
	}
	os.RemoveAll(b.logDir)
}

// connect connects to the NATS server: slow consumer errors are counted,
// and the first error of an asynchronous publish goes to b.pubErrs.
func (b *bench) connect() error {
	var err error
	if b.nc, err = b.ns.Connect(nats.Name("jetlake-bench"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrSlowConsumer) {
			b.slow.Add(1)
			return
		}
		b.progress("nats: %v", err)
	})); err != nil {
		return err
	}
	b.pubErrs = make(chan error, 1)
	b.js, err = jetstream.New(b.nc,
		jetstream.WithPublishAsyncMaxPending(publishWindow),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
			select {
			case b.pubErrs <- err:
			default:
			}
		}))
	if err != nil {
		b.nc.Close()
		return err
	}
	return nil
}

// workloadState is a workload while it is measured.
type workloadState struct {
	spec    workloadSpec
	res     *WorkloadResult
	consume []*Limit
	ackNone []*Limit
	upload  []*Limit
	same    []*Limit
	limits  []float64               // consume + upload, per round
	runs    map[string][]*RunResult // by run name, one per round
}

// measure pre-fills every workload, then measures them in rounds: each round
// measures the limits and every run of every workload once, so noise from
// the machine spreads over all of them alike. The compaction measurement
// follows the first round; the rounds after it run only while one more fits
// in what is left of the time budget. The report gets the median round of
// each measurement.
func (b *bench) measure(ctx context.Context, rep *Report) {
	var ws []*workloadState
	for _, spec := range b.cfg.Workloads {
		w := &workloadState{spec: spec, runs: map[string][]*RunResult{}, res: &WorkloadResult{
			Name: spec.Name, Messages: spec.Messages, Subjects: spec.Subjects, GroupBy: "subject",
			Stream: "BENCH_" + strings.ToUpper(spec.Name),
		}}
		rep.Workloads = append(rep.Workloads, w.res)
		if b.skip(w.res.Name+" pre-fill", &w.res.Error) {
			continue
		}
		defer b.deleteStream(ctx, w.res.Stream)
		if err := b.prefill(ctx, spec, w.res); err != nil {
			w.res.Error = b.failure(w.res.Name+" pre-fill", ctx, err)
			continue
		}
		ws = append(ws, w)
	}

	var first time.Duration
	for k := 1; k <= b.cfg.Rounds && ctx.Err() == nil; k++ {
		start := time.Now()
		if k > 1 {
			if left := time.Until(b.deadline); left < first+first/5+10*time.Second {
				b.progress("round %d of %d skipped: %s of the time budget left, a round takes about %s",
					k, b.cfg.Rounds, fmtDur(left), fmtDur(first))
				break
			}
		}
		b.progress("round %d of %d", k, b.cfg.Rounds)
		for _, w := range ws {
			if w.res.Error == "" && ctx.Err() == nil {
				b.round(ctx, w, k)
			}
		}
		rep.Rounds = k
		if k == 1 {
			first = time.Since(start)
			// Like the first round, these measurements are a must:
			// they come before the rounds that are only taken when
			// they fit. The restore reads what round 1's runs wrote
			// of a workload of its size.
			if b.cfg.Restore.Messages > 0 && ctx.Err() == nil {
				rep.Restore = b.restore(ctx, b.cfg.Restore, b.workloadExports(ws, b.cfg.Restore))
			}
			if b.cfg.Compaction.Messages > 0 && ctx.Err() == nil {
				rep.Compaction = b.compaction(ctx, b.cfg.Compaction)
			}
			if b.cfg.ScaleOut.Messages > 0 && ctx.Err() == nil {
				rep.ScaleOut = b.scaleOut(ctx, b.cfg.ScaleOut)
			}
			if b.cfg.Cardinality.Messages > 0 && ctx.Err() == nil {
				rep.Cardinality = b.cardinality(ctx, b.cfg.Cardinality)
			}
		}
	}
	for _, w := range ws {
		if len(w.limits) == 0 && w.res.Error == "" {
			w.res.Error = fmt.Sprintf("not measured: the time budget (-timeout %s) was used up or the run interrupted", b.cfg.Budget)
		}
		w.aggregate(b.cfg.Runs)
	}
}

// round measures the limits and every run of one workload once.
func (b *bench) round(ctx context.Context, w *workloadState, k int) {
	c, u, ok := b.roundLimits(ctx, w, k)
	if !ok {
		return
	}
	limit := c.Seconds + u.Seconds
	w.consume, w.upload, w.limits = append(w.consume, c), append(w.upload, u), append(w.limits, limit)
	b.progress("%s: limit time %s (consume %s + upload %s)", w.res.Name, fmtSeconds(limit), fmtSeconds(c.Seconds), fmtSeconds(u.Seconds))
	runs := b.roundRuns(ctx, w, k, limit)
	b.roundSameObjects(ctx, w, k, c, u, runs)
}

// roundNote is where a measurement of round k of w that is skipped says
// so: only the first round is a must; a later one the time budget ends is
// left out (nil).
func roundNote(w *workloadState, k int) *string {
	if k == 1 {
		return &w.res.Error
	}
	return nil
}

// roundFailed records that what failed in round k of w, unless the time
// budget cut a later round: that round is left out.
func (b *bench) roundFailed(ctx context.Context, w *workloadState, k int, what string, err error) {
	if k > 1 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		b.progress("%s %s in round %d: cut by the time budget; the round is left out", w.res.Name, what, k)
		return
	}
	w.res.Error = b.failure(w.res.Name+" "+what, ctx, err)
}

// roundLimits measures the consume limit, the ack-none read and the
// upload limit of round k of w; it reports false when one was skipped or
// failed.
func (b *bench) roundLimits(ctx context.Context, w *workloadState, k int) (consume, upload *Limit, ok bool) {
	name, note := w.res.Name, roundNote(w, k)
	if b.skip(name+" consume limit", note) {
		return nil, nil, false
	}
	c, err := b.consumeLimit(ctx, w.res, k)
	if err != nil {
		b.roundFailed(ctx, w, k, "consume limit", err)
		return nil, nil, false
	}
	if b.skip(name+" ack-none read", note) {
		return nil, nil, false
	}
	an, err := b.ackNoneRead(ctx, w.res, k)
	if err != nil {
		b.roundFailed(ctx, w, k, "ack-none read", err)
		return nil, nil, false
	}
	w.ackNone = append(w.ackNone, an)
	if b.skip(name+" upload limit", note) {
		return nil, nil, false
	}
	u, err := b.uploadLimit(ctx, fmt.Sprintf("%s/_limit/put/r%d", name, k), w.res.JSONLinesBytes, b.cfg.MaxFileSize, w.spec.Subjects)
	if err != nil {
		b.roundFailed(ctx, w, k, "upload limit", err)
		return nil, nil, false
	}
	return c, u, true
}

// roundRuns runs jetlake in every run of round k of w, each against the
// limit time of the round, and compares each Iceberg run with the run
// that wrote the same output as bare objects.
func (b *bench) roundRuns(ctx context.Context, w *workloadState, k int, limit float64) []*RunResult {
	var runs []*RunResult
	var slowest float64
	for _, spec := range b.cfg.Runs {
		r := b.jetlakeRun(ctx, w.res, spec, k, runCap(slowest))
		r.Round = k
		if r.Seconds > 0 {
			r.Ratio = limit / r.Seconds
		}
		if succeeded(r) {
			slowest = max(slowest, r.Seconds)
		}
		w.runs[spec.Name] = append(w.runs[spec.Name], r)
		runs = append(runs, r)
		if ctx.Err() != nil {
			break
		}
	}
	for _, r := range runs {
		if p := plainOf(r, runs); r.Iceberg && succeeded(r) && p != nil && succeeded(p) {
			r.IcebergToParquet = p.Seconds / r.Seconds
		}
	}
	return runs
}

// roundSameObjects measures the upload limit with the objects the runs of
// round k wrote, and compares each run with it: objects far smaller than
// max_file_size cost a PutObject each. For a workload of small objects
// that is a must, as the first round is.
func (b *bench) roundSameObjects(ctx context.Context, w *workloadState, k int, c, u *Limit, runs []*RunResult) {
	name, note := w.res.Name, roundNote(w, k)
	total, size, from := w.smallObjects(runs, u, b.cfg.MaxFileSize)
	if !w.spec.SmallObjects {
		note = nil
	}
	if total == 0 || ctx.Err() != nil || b.skip(name+" upload limit with jetlake's objects", note) {
		return
	}
	same, err := b.uploadLimit(ctx, fmt.Sprintf("%s/_limit/same/r%d", name, k), total, size, w.spec.Subjects)
	if err != nil {
		if w.spec.SmallObjects {
			b.roundFailed(ctx, w, k, "upload limit with jetlake's objects", err)
		} else {
			b.progress("%s: upload limit with jetlake's objects: %v", name, err)
		}
		return
	}
	w.same, w.res.SameObjectsFrom = append(w.same, same), from
	for _, r := range runs {
		if r.Seconds > 0 {
			r.RatioSameObjects = (c.Seconds + same.Seconds) / r.Seconds
		}
		if w.spec.SmallObjects && succeeded(r) {
			r.PutRateRatio = r.ObjectsPerSecond / same.ObjectsPerSecond
		}
	}
}

// aggregate puts the median round of every measurement into the result.
func (w *workloadState) aggregate(specs []runSpec) {
	res := w.res
	res.ConsumeLimit = medianLimit(w.consume)
	res.AckNoneRead = medianLimit(w.ackNone)
	res.UploadLimit = medianLimit(w.upload)
	res.SameObjectsLimit = medianLimit(w.same)
	if len(w.limits) > 0 {
		res.LimitSeconds = median(w.limits)
		res.LimitRounds = w.limits
	}
	if res.SameObjectsLimit != nil && res.ConsumeLimit != nil {
		res.SameObjectsLimitSeconds = res.ConsumeLimit.Seconds + res.SameObjectsLimit.Seconds
	}
	for _, spec := range specs {
		if r := summarize(w.runs[spec.Name]); r != nil {
			res.Runs = append(res.Runs, r)
		}
	}
}

// summarize returns the round with the median ratio among the rounds that
// succeeded (the slower one of two), with every round's figures attached.
// A round after the first that the time budget cut is left out.
func summarize(rounds []*RunResult) *RunResult {
	if len(rounds) == 0 {
		return nil
	}
	var ok []*RunResult
	var failed []string
	for _, r := range rounds {
		switch {
		case r.Skipped:
		case r.Error != "" && r.cut && r.Round > 1:
		case r.Error != "":
			failed = append(failed, fmt.Sprintf("round %d: %s", r.Round, r.Error))
		default:
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return rounds[0]
	}
	sorted := slices.Clone(ok)
	slices.SortStableFunc(sorted, func(a, b *RunResult) int { return cmp.Compare(a.Ratio, b.Ratio) })
	sum := *sorted[(len(sorted)-1)/2]
	sum.Error = strings.Join(failed, "; ")
	sum.Rounds = nil
	for _, r := range rounds {
		if r.Skipped || r.Error != "" && r.cut && r.Round > 1 {
			continue
		}
		sum.Rounds = append(sum.Rounds, RoundFigures{
			Round: r.Round, Seconds: r.Seconds, CPUSeconds: r.CPUSeconds, PeakRSSBytes: r.PeakRSSBytes,
			CPUPerMillion: r.CPUPerMillion, Ratio: r.Ratio, RatioSameObjects: r.RatioSameObjects,
			PutRateRatio: r.PutRateRatio, IcebergToParquet: r.IcebergToParquet, Error: r.Error,
			Redeliveries: r.Redeliveries, SlowConsumer: r.SlowConsumer,
		})
	}
	return &sum
}

// medianLimit returns the limit measurement of the median time (the slower
// one of two), with every round's time attached and the redeliveries and
// slow consumer errors of all rounds summed up.
func medianLimit(ls []*Limit) *Limit {
	if len(ls) == 0 {
		return nil
	}
	sorted := slices.Clone(ls)
	slices.SortStableFunc(sorted, func(a, b *Limit) int { return cmp.Compare(a.Seconds, b.Seconds) })
	m := *sorted[len(sorted)/2]
	m.RoundSeconds, m.Redeliveries, m.SlowConsumer = nil, 0, 0
	for _, l := range ls {
		m.RoundSeconds = append(m.RoundSeconds, l.Seconds)
		m.Redeliveries += l.Redeliveries
		m.SlowConsumer += l.SlowConsumer
	}
	return &m
}

// median returns the median of xs, the larger of the middle two for an
// even count.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func (b *bench) deleteStream(ctx context.Context, name string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := b.js.DeleteStream(dctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		b.progress("delete stream %s: %v", name, err)
	}
}

// skip reports whether the time budget is used up, and then records why in
// *note (when note is not nil) and on the progress output.
func (b *bench) skip(what string, note *string) bool {
	if time.Until(b.deadline) >= minStep {
		return false
	}
	msg := fmt.Sprintf("skipped: the time budget (-timeout %s) is used up", b.cfg.Budget)
	b.progress("%s %s", what, msg)
	if note != nil && *note == "" {
		*note = msg
	}
	return true
}

// failure describes err of step, naming the time budget when that is what
// ended ctx.
func (b *bench) failure(step string, ctx context.Context, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("cut by the time budget (-timeout %s): %w", b.cfg.Budget, err)
	}
	msg := step + ": " + err.Error()
	b.progress("%s", msg)
	return msg
}

// progress prints a line to the progress output, with the time since the
// start.
func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.cfg.Progress, "[%7.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

// stopServer stops a server and reports a failure through *err unless an
// earlier error is already there.
func stopServer(stop func() error, err *error) {
	if serr := stop(); serr != nil && *err == nil {
		*err = serr
	}
}

// jetlakeVersion runs "jetlake version", which also proves the binary runs.
func jetlakeVersion(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %w (build it with \"make build\", or name it with -jetlake)", bin, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "jetlake")), nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
