package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/parquet-go/parquet-go"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/pathtemplate"
)

// runSpec is one way of running jetlake over a workload.
type runSpec struct {
	Name        string
	Format      string
	Compression string // empty: the compression key is not written
	Typed       bool   // [[output.columns]]: typedColumns
	// Iceberg writes an Iceberg table in an embedded sqlite catalog of its
	// own instead of bare objects; it is compared with the plain run of
	// the same output in the same round.
	Iceberg bool
	Ext     string // the extension its objects should have
}

const runJSONLines = "json_lines"

var runSpecs = []runSpec{
	{Name: runJSONLines, Format: "json_lines", Ext: "jsonl"},
	{Name: "json_lines_zstd", Format: "json_lines", Compression: "zstd", Ext: "jsonl.zst"},
	{Name: "parquet", Format: "parquet", Ext: "parquet"},
	{Name: "parquet_typed", Format: "parquet", Typed: true, Ext: "parquet"},
	{Name: "iceberg", Format: "parquet", Iceberg: true, Ext: "parquet"},
}

// icebergNamespace is the namespace of every Iceberg run's table; the table
// is named after the workload, and each round writes its own table under
// its own prefix, in a catalog file of its own.
const icebergNamespace = "bench"

// succeeded reports whether a run ran and succeeded.
func succeeded(r *RunResult) bool { return !r.Skipped && r.Error == "" && r.Seconds > 0 }

// plainOf returns the run among runs that wrote what the Iceberg run r
// wrote, as bare objects; nil when there is none.
func plainOf(r *RunResult, runs []*RunResult) *RunResult {
	for _, p := range runs {
		if !p.Iceberg && p.Format == r.Format && p.Compression == r.Compression && p.TypedColumns == r.TypedColumns {
			return p
		}
	}
	return nil
}

func runNames() []string {
	var names []string
	for _, s := range runSpecs {
		names = append(names, s.Name)
	}
	return names
}

func runSpecByName(name string) (runSpec, bool) {
	for _, s := range runSpecs {
		if s.Name == name {
			return s, true
		}
	}
	return runSpec{}, false
}

// stopGrace is how long jetlake may take to shut down after SIGTERM before
// it is killed.
const stopGrace = 20 * time.Second

// A run that takes longer than runCapFactor times the slowest run of its
// workload that finished before it in the round, and at least minRunCap,
// is stopped and fails: a run that never goes idle (a commit that is
// retried forever) must not take the time budget of every measurement
// after it.
const (
	runCapFactor = 4
	minRunCap    = 2 * time.Minute
)

// runCap returns how long a run may take after runs that took up to
// slowest seconds; 0 (no cap but the time budget) when no run finished.
func runCap(slowest float64) time.Duration {
	if slowest <= 0 {
		return 0
	}
	return max(minRunCap, time.Duration(runCapFactor*slowest*float64(time.Second)))
}

// jetlakeRun runs "jetlake run -until-idle" for one output over the
// workload's stream, from a fresh consumer into a fresh prefix, and
// measures it; it is stopped after maxTime when that is not 0. The
// consumer is deleted afterwards.
func (b *bench) jetlakeRun(ctx context.Context, w *WorkloadResult, spec runSpec, round int, maxTime time.Duration) *RunResult {
	r := &RunResult{Name: spec.Name, Format: spec.Format, Compression: spec.Compression, Iceberg: spec.Iceberg, Round: round}
	if spec.Typed {
		r.TypedColumns = len(typedColumns)
	}
	what := fmt.Sprintf("%s %s (round %d)", w.Name, spec.Name, round)
	if b.skip(what, &r.Note) {
		r.Skipped = true
		return r
	}
	f := b.runFiles(w, spec, round)
	if !b.prepareRun(ctx, w, spec, f, what, r) {
		return r
	}

	b.progress("%s: running jetlake", what)
	defer b.deleteConsumer(ctx, w.Stream, f.consumer)
	log, ok := b.measureRun(ctx, f, what, maxTime, r)
	if !ok {
		return r
	}
	r.MessagesPerSecond = float64(w.Messages) / r.Seconds
	r.CPUPerMillion = r.CPUSeconds * 1e6 / float64(w.Messages)

	b.checkRun(ctx, w, spec, f, log, r)
	b.progress("%s: %s, %s msg/s, %d objects, %s written (%.1f MB/s), peak RSS %s, CPU %s, rotation %s",
		what, fmtSeconds(r.Seconds), fmtInt(int64(r.MessagesPerSecond)), r.Objects, fmtMB(r.Bytes), r.MBPerSecond,
		fmtMiB(r.PeakRSSBytes), fmtSeconds(r.CPUSeconds), reasonList(r.Reasons))
	if r.Error != "" {
		b.progress("%s: %s", what, r.Error)
	}
	return r
}

// runFiles names what one run of jetlake uses: its consumer, its prefix in
// the bucket, and its connector file, log and catalog in the log
// directory.
type runFiles struct {
	consumer, prefix        string
	connector, log, catalog string
}

// runFiles returns the names of a run: a consumer of its own, and a
// prefix and files for the workload, run and round.
func (b *bench) runFiles(w *WorkloadResult, spec runSpec, round int) runFiles {
	base := fmt.Sprintf("%s-%s-r%d", w.Name, spec.Name, round)
	return runFiles{
		consumer:  fmt.Sprintf("bench-%s-%s-%d", w.Name, strings.ReplaceAll(spec.Name, "_", "-"), time.Now().UnixNano()),
		prefix:    fmt.Sprintf("%s/%s/r%d", w.Name, spec.Name, round),
		connector: filepath.Join(b.logDir, base+".toml"),
		log:       filepath.Join(b.logDir, base+".log"),
		catalog:   filepath.Join(b.logDir, base+"-catalog.db"),
	}
}

// prepareRun writes the connector file of a run, after removing an
// Iceberg run's old catalog, and has jetlake validate it. It reports
// false when the run cannot go on: r says why, failed or skipped.
func (b *bench) prepareRun(ctx context.Context, w *WorkloadResult, spec runSpec, f runFiles, what string, r *RunResult) bool {
	if spec.Iceberg {
		if err := removeCatalog(f.catalog); err != nil {
			r.Error = err.Error()
			return false
		}
	}
	if err := os.WriteFile(f.connector, b.connector(w, spec, f.consumer, f.prefix, f.catalog), 0o644); err != nil {
		r.Error = err.Error()
		return false
	}
	if problem, err := b.validate(ctx, f.connector); err != nil {
		r.Error = err.Error()
		return false
	} else if problem != "" {
		r.Skipped = true
		r.Note = "jetlake validate rejects it: " + problem
		b.progress("%s skipped: %s", what, r.Note)
		return false
	}
	return true
}

// measureRun runs jetlake, stopped after maxTime when that is not 0, and
// records in r its times, peak memory, and the servers' CPU meanwhile;
// it returns what jetlake's log says. It reports false when the run
// failed: r.Error says why, the time budget or the cap included.
func (b *bench) measureRun(ctx context.Context, f runFiles, what string, maxTime time.Duration, r *RunResult) (logSummary, bool) {
	rctx := ctx
	if maxTime > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, maxTime)
		defer cancel()
	}
	startCPU := b.serverCPU()
	res, err := b.runJetlake(rctx, f.connector, f.log)
	b.since(startCPU, &r.NATSCPUSeconds, &r.MinIOCPUSeconds)
	if res != nil {
		r.Seconds = res.wall.Seconds()
		r.CPUSeconds = res.cpu.Seconds()
		r.UserSeconds = res.user.Seconds()
		r.PeakRSSBytes = res.maxRSS
	}
	log := parseLog(f.log)
	r.Reasons = log.reasons
	r.Warnings = log.warnings
	r.SlowConsumer = log.slowConsumer
	if err == nil {
		return log, true
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		r.cut = true
		err = fmt.Errorf("cut by the time budget (-timeout %s) after %s: %w", b.cfg.Budget, fmtSeconds(r.Seconds), err)
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("stopped after %s, %d times the slowest run before it in the round or at least %s: %w",
			fmtSeconds(r.Seconds), runCapFactor, fmtDur(minRunCap), err)
	}
	r.Error = err.Error()
	switch {
	case log.lastError != "":
		r.Error += ": " + log.lastError
	case log.warnings > 0:
		r.Error += fmt.Sprintf(": %d warnings logged (first: %s)", log.warnings, log.firstWarning)
	}
	b.progress("%s failed: %s", what, r.Error)
	return log, false
}

// checkRun checks what a run did, outside the measured time: every
// message acked, the objects it wrote (an Iceberg run's commits too), and
// what its log says. Problems go into r.Error, remarks into r.Note.
func (b *bench) checkRun(ctx context.Context, w *WorkloadResult, spec runSpec, f runFiles, log logSummary, r *RunResult) {
	var notes []string
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if n, err := b.checkConsumer(cctx, w, f.consumer); err != nil {
		r.Error = err.Error()
	} else {
		r.Redeliveries = n
		if n > 0 {
			notes = append(notes, count(n, "redelivery", "redeliveries"))
		}
	}
	// An Iceberg run's data objects are the table's data files; its
	// metadata is counted apart.
	var data string
	if spec.Iceberg {
		data = f.prefix + "/" + icebergNamespace + "/" + icebergTable(w, f.prefix) + "/data/"
	}
	objs, err := b.listObjects(cctx, f.prefix, data)
	if err != nil {
		r.Error = join(r.Error, err.Error())
	}
	r.Objects, r.Bytes, r.Extensions, r.OtherObjects, r.MetadataObjects = objs.count, objs.bytes, objs.exts, objs.other, objs.meta
	r.MBPerSecond = float64(r.Bytes) / 1e6 / r.Seconds
	r.ObjectsPerSecond = float64(r.Objects) / r.Seconds
	if r.Objects == 0 {
		r.Error = join(r.Error, "no data object written")
	}
	if spec.Iceberg {
		r.Commits = log.commits
		switch {
		case log.commits == 0 || objs.meta == 0:
			r.Error = join(r.Error, fmt.Sprintf("no Iceberg commit: %d logged, %d metadata objects", log.commits, objs.meta))
		case log.committedFiles != r.Objects:
			notes = append(notes, fmt.Sprintf("%d data files committed, %d in the table's folder", log.committedFiles, r.Objects))
		}
	}
	notes = append(notes, objectNotes(w, spec, r, objs)...)
	if spec.Format == "parquet" && objs.first != "" {
		notes = append(notes, b.parquetNotes(cctx, spec, objs.first, r)...)
	}
	if log.slowConsumer > 0 {
		notes = append(notes, fmt.Sprintf("%d \"nats: slow consumer, messages dropped\" on stderr", log.slowConsumer))
	}
	if log.warnings > 0 {
		notes = append(notes, fmt.Sprintf("%d warnings logged (first: %s)", log.warnings, log.firstWarning))
	}
	r.Note = join(r.Note, strings.Join(notes, "; "))
}

// objectNotes remarks on the objects a run wrote: extensions other than
// the run's, loss markers, and json_lines bytes other than the records
// hold.
func objectNotes(w *WorkloadResult, spec runSpec, r *RunResult, objs objectList) []string {
	var notes []string
	if len(objs.exts) > 0 && (len(objs.exts) > 1 || objs.exts[spec.Ext] == 0) {
		notes = append(notes, fmt.Sprintf("objects are %s, want .%s", extList(objs.exts), spec.Ext))
	}
	if objs.lost > 0 {
		notes = append(notes, fmt.Sprintf("%d loss markers", objs.lost))
	}
	if spec.Name == runJSONLines && r.Bytes != w.JSONLinesBytes {
		notes = append(notes, fmt.Sprintf("wrote %d bytes, the records hold %d", r.Bytes, w.JSONLinesBytes))
	}
	return notes
}

// parquetNotes reads the parquet object at key, one a run wrote, into
// r.Columns, and remarks on a file that cannot be read, has no rows, or
// lacks a typed column the run asked for.
func (b *bench) parquetNotes(ctx context.Context, spec runSpec, key string, r *RunResult) []string {
	cols, rows, err := b.parquetColumns(ctx, key)
	if err != nil {
		return []string{"first object is not readable parquet: " + err.Error()}
	}
	var notes []string
	r.Columns = cols
	if rows == 0 {
		notes = append(notes, "first object has no rows")
	}
	var missing []string
	for _, c := range typedColumns {
		if spec.Typed && !slices.Contains(cols, c.Name) {
			missing = append(missing, c.Name)
		}
	}
	if len(missing) > 0 {
		notes = append(notes, "typed columns missing from the files: "+strings.Join(missing, ", "))
	}
	return notes
}

// connector returns the connector file of a run; an Iceberg run's catalog
// is the sqlite file catalog.
func (b *bench) connector(w *WorkloadResult, spec runSpec, consumer, prefix, catalog string) []byte {
	var c bytes.Buffer
	fmt.Fprintf(&c, "name = %q\nshutdown_timeout = \"30s\"\n\n", "bench-"+w.Name+"-"+strings.ReplaceAll(spec.Name, "_", "-"))
	fmt.Fprintf(&c, "[nats]\nurl = %q\n\n", b.ns.URL)
	fmt.Fprintf(&c, "[[streams]]\nstream = %q\nconsumer = %q\ndeliver_policy = \"all\"\nack_wait = %q\n",
		w.Stream, consumer, b.ackWait().String())
	if b.cfg.MaxAckPending > 0 {
		fmt.Fprintf(&c, "max_ack_pending = %d\n", b.cfg.MaxAckPending)
	}
	if b.cfg.ConsumerStorage != "" {
		fmt.Fprintf(&c, "consumer_storage = %q\n", b.cfg.ConsumerStorage)
	}
	c.WriteString("\n")
	fmt.Fprintf(&c, "[s3]\nbucket = %q\nendpoint = %q\nprefix = %q\nupload_concurrency = %d\n\n",
		bucket, b.ms.Endpoint, prefix, b.cfg.UploadConcurrency)
	fmt.Fprintf(&c, "[output]\nformat = %q\n", spec.Format)
	if spec.Compression != "" {
		fmt.Fprintf(&c, "compression = %q\n", spec.Compression)
	}
	if !spec.Iceberg {
		// An Iceberg table's partitioning, hour(timestamp) and subject,
		// splits its data files as this template does.
		fmt.Fprintf(&c, "path_template = \"{stream}/{subject}/{date}/{hour}\"\ngroup_by = %q\n", w.GroupBy)
	}
	c.WriteString("\n")
	if spec.Typed {
		for _, col := range typedColumns {
			fmt.Fprintf(&c, "[[output.columns]]\nname = %q\nsource = %q\ntype = %q\n\n", col.Name, col.Source, col.Type)
		}
	}
	if spec.Iceberg {
		fmt.Fprintf(&c, "[iceberg]\ncatalog = \"sql\"\nuri = %q\nnamespace = %q\ntable = %q\ncommit_interval = \"1m\"\n\n",
			"sqlite://"+catalog, icebergNamespace, icebergTable(w, prefix))
	}
	fmt.Fprintf(&c, "[rotation]\nmax_file_size = %q\nmax_messages_per_file = %d\nmax_file_age = %q\nmax_buffered_bytes = %q\n",
		config.FormatSize(b.cfg.MaxFileSize), b.cfg.MaxMessages, b.cfg.MaxFileAge.String(), config.FormatSize(b.cfg.MaxBufferedBytes))
	return c.Bytes()
}

// icebergTable is the table of an Iceberg run whose objects go under
// prefix: a table per round, since every round starts a fresh catalog and
// the state bucket keeps the UUID of the table a connector wrote (a table
// of the same name in a fresh catalog is refused as another table).
func icebergTable(w *WorkloadResult, prefix string) string {
	return w.Name + "_" + strings.ReplaceAll(path.Base(prefix), "-", "_")
}

// removeCatalog removes a sqlite catalog file and its journals, so that an
// Iceberg run starts with a fresh table: a catalog left in -logs by an
// earlier bench names a table in a MinIO that is gone.
func removeCatalog(file string) error {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(file + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove the old catalog: %w", err)
		}
	}
	return nil
}

// validate runs "jetlake validate". It returns the first problem when the
// file is rejected (exit 2), and an error when validate fails otherwise.
func (b *bench) validate(ctx context.Context, file string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, b.jetlake, "validate", "-config", file)
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 2 {
		problem, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		// FILE:LINE: KEY: message → KEY: message
		if parts := strings.SplitN(problem, ": ", 3); len(parts) == 3 && strings.HasPrefix(parts[0], file) {
			problem = parts[1] + ": " + parts[2]
		} else if strings.HasPrefix(problem, file+":") {
			problem = strings.TrimPrefix(problem, file+":")
		}
		return problem, nil
	}
	if err != nil {
		return "", fmt.Errorf("jetlake validate: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return "", nil
}

// childResult is what the kernel says about a finished jetlake process.
type childResult struct {
	wall   time.Duration
	cpu    time.Duration // user + system
	user   time.Duration
	maxRSS int64 // bytes
}

// runJetlake runs jetlake until it exits. It gets SIGTERM when ctx ends and
// SIGKILL stopGrace later; it runs in its own process group, so a Ctrl-C in
// the terminal reaches only this process, which stops it in order, and the
// kernel kills it should this process die first.
func (b *bench) runJetlake(ctx context.Context, file, logFile string) (*childResult, error) {
	args := []string{"run", "-until-idle", "-log-format", "json", "-config", file}
	if b.cfg.Profile {
		args = append(args, "-cpuprofile", strings.TrimSuffix(logFile, ".log")+".cpu.pprof")
	}
	return b.runChild(ctx, logFile, args...)
}

// checkConsumer checks that the run acked every message of the stream and
// returns how many deliveries were redeliveries.
func (b *bench) checkConsumer(ctx context.Context, w *WorkloadResult, name string) (int, error) {
	cons, err := b.js.Consumer(ctx, w.Stream, name)
	if err != nil {
		return 0, fmt.Errorf("consumer %s after the run: %w", name, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("consumer %s after the run: %w", name, err)
	}
	last := uint64(w.Messages)
	if info.AckFloor.Stream < last || info.NumAckPending > 0 || info.NumPending > 0 {
		return 0, fmt.Errorf("jetlake exited idle but acked only up to sequence %d of %d (%d ack pending, %d pending)",
			info.AckFloor.Stream, last, info.NumAckPending, info.NumPending)
	}
	return int(info.Delivered.Consumer - min(info.Delivered.Consumer, last)), nil
}

// objectList sums up what a run wrote under its prefix.
type objectList struct {
	count int            // data objects
	bytes int64          // of data objects
	exts  map[string]int // data objects by extension
	first string         // key of one data object
	other int            // objects under _jetlake/
	lost  int            // loss markers among them
	meta  int            // other objects outside the data prefix: an Iceberg table's metadata
}

// listObjects sums up the objects under prefix. With data set, only the
// objects under data are data objects; without, every object outside
// _jetlake/ is.
func (b *bench) listObjects(ctx context.Context, prefix, data string) (objectList, error) {
	l := objectList{exts: map[string]int{}}
	own, lost := pathtemplate.OwnPrefix(prefix), pathtemplate.KindPrefix(prefix, pathtemplate.Lost)
	for obj := range b.s3.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true}) {
		if obj.Err != nil {
			return l, fmt.Errorf("list %s: %w", prefix, obj.Err)
		}
		if strings.HasPrefix(obj.Key, own) {
			l.other++
			if strings.HasPrefix(obj.Key, lost) {
				l.lost++
			}
			continue
		}
		if data != "" && !strings.HasPrefix(obj.Key, data) {
			l.meta++
			continue
		}
		l.count++
		l.bytes += obj.Size
		base := path.Base(obj.Key)
		if i := strings.IndexByte(base, '.'); i >= 0 {
			l.exts[base[i+1:]]++
		} else {
			l.exts[""]++
		}
		if l.first == "" {
			l.first = obj.Key
		}
	}
	return l, nil
}

// parquetColumns reads an object as a parquet file and returns its column
// names and row count.
func (b *bench) parquetColumns(ctx context.Context, key string) ([]string, int64, error) {
	obj, err := b.s3.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, 0, err
	}
	defer obj.Close()
	body, err := io.ReadAll(obj)
	if err != nil {
		return nil, 0, err
	}
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return nil, 0, err
	}
	var cols []string
	for _, field := range f.Schema().Fields() {
		cols = append(cols, field.Name())
	}
	return cols, f.NumRows(), nil
}

func extList(exts map[string]int) string {
	var out []string
	for e, n := range exts {
		out = append(out, fmt.Sprintf(".%s (%d)", e, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func reasonList(reasons map[string]int) string {
	var out []string
	for r, n := range reasons {
		out = append(out, fmt.Sprintf("%s %d", r, n))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ", ")
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
