// Command jetlake-bench measures how fast jetlake exports a stream, next to
// the limits of the machine it runs on, measured in the same run.
//
// It starts nats-server and MinIO on loopback (the pinned builds of package
// exportertest), fills a file-storage stream per workload, and measures:
//
//   - the consume limit: a plain jetstream pull consumer (durable, explicit
//     acks, created fresh and deleted after) that fetches in batches and acks
//     every message, doing nothing else;
//   - the upload limit: minio-go PutObject at the connector's upload
//     concurrency, in objects of max_file_size, for as many bytes as the
//     uncompressed json_lines output of the workload holds;
//   - the limit time, consume time + upload time: what a naive exporter that
//     first reads everything and then uploads it would need;
//   - over the high-cardinality workload, the small-PUT rate: PutObject
//     objects/s at the same concurrency for as many objects of the size
//     jetlake writes there as it writes;
//   - jetlake itself, one "bin/jetlake run -until-idle" process per output
//     (json_lines, json_lines with zstd, parquet, parquet with five typed
//     columns, and parquet into an Iceberg table in an embedded sqlite
//     catalog), each from a fresh consumer and its own bucket prefix: wall
//     time, messages/s, MB/s written, objects, peak RSS, CPU seconds, CPU
//     seconds per million messages and limit time / jetlake time; over the
//     high-cardinality workload also the PUT-rate ratio (its objects/s over
//     the small-PUT rate), and for the Iceberg run the wall time of the
//     plain parquet run over its own (iceberg / parquet).
//
// The workloads are 1,000,000 messages of about 256 bytes of JSON over 10
// subjects, and 100,000 messages over 10,000 subjects (group_by "subject":
// an object per subject). -quick scales both down; -messages, -subjects,
// -small-messages and -small-subjects set them one by one. After the first
// round it measures jetlake compact over an Iceberg table of small files,
// and jetlake partitioning 100,000 messages by a field of 100,000 values
// ("{stream}/key={column:key}", -quick: 10,000) within max_buffered_bytes
// 16 MiB, with max_open_directories 0 (no cap) and its default (4,096:
// the values beyond are rejected), and the same number of messages over 10
// values: its rates with the flood against the normal one, peak RSS against
// 1.5 × 16 MiB + 64 MiB = 88 MiB, objects and time (-cardinality-messages 0
// skips it).
//
// After the first round it also measures jetlake restore: 1,000,000
// messages of -payload bytes over 10 subjects (-restore-messages; -quick:
// 100,000) exported as json_lines and as parquet, the stream deleted, then
// published back into a fresh stream (file storage, allow_atomic): by a
// plain jetstream publisher of the bench (PublishAsync with 4,096 awaiting
// their acks: the baseline), by an atomic-batch publisher of the bench
// (batches of 1,000 one after the other, for comparison), and by "jetlake
// restore" from each export. It reports each restore's msg/s over the
// plain publisher's of the same round (target 0.8), its CPU, peak RSS and
// the servers' CPU (-restore-rounds rounds, 1 by default, the median
// shown; -restore-messages 0 skips it).
//
// The machine may be noisy, so every limit and run is measured in -rounds
// rounds (3; -quick: 1), interleaved, and the median round is reported;
// ratios compare a run with the limits of its own round. Rounds after the
// first run only while another fits in the -timeout budget, which keeps
// "make bench" under 15 minutes on 2 cores. Progress goes to stderr, the
// results (Markdown: the limits of each workload, then one table with a row
// per workload and run) to stdout, and with -out the results as JSON to a
// file.
//
// With -compare FILE, a JSON file an earlier bench wrote with -out, a second
// table follows: for each workload and run in both, the limit ratio, msg/s,
// CPU seconds per million messages and peak RSS before and after. With
// -against NEW as well it compares the two files and exits, measuring
// nothing:
//
//	jetlake-bench -compare OLD.json -against NEW.json
//
// Run it from the repository with "make bench", which builds bin/jetlake and
// the servers first. Every process it starts is stopped when it ends, fails
// or is interrupted.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jetlake/jetlake/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Defaults of the full run and of -quick.
var (
	fullWorkloads  = [2]workloadSpec{{Name: "w1", Messages: 1_000_000, Subjects: 10}, {Name: "w2", Messages: 100_000, Subjects: 10_000, SmallObjects: true}}
	quickWorkloads = [2]workloadSpec{{Name: "w1", Messages: 100_000, Subjects: 10}, {Name: "w2", Messages: 10_000, Subjects: 1_000, SmallObjects: true}}
	// 2,000 data files over 20 partitions; -quick: 200 over 10.
	fullCompaction  = compactionSpec{Messages: 100_000, Subjects: 20, PerFile: 50}
	quickCompaction = compactionSpec{Messages: 2_000, Subjects: 10, PerFile: 10}
	// 100,000 messages, each with a value of its key field of its own,
	// within max_buffered_bytes 16 MiB: the budget holds about 11,000 open
	// buffers of one message, so every message is an object of its own;
	// -quick: 10,000 over 10,000.
	fullCardinality  = cardinalitySpec{Messages: 100_000, Values: 100_000, Budget: 16 << 20}
	quickCardinality = cardinalitySpec{Messages: 10_000, Values: 10_000, Budget: 16 << 20}
	// Two instances on four partitions; -quick: a tenth of the messages.
	fullScaleOut  = scaleOutSpec{Messages: 500_000, Subjects: 40, Partitions: 4, Instances: 2}
	quickScaleOut = scaleOutSpec{Messages: 20_000, Subjects: 40, Partitions: 4, Instances: 2}
	// Restore: 1,000,000 messages over 10 subjects; -quick: 100,000.
	fullRestore  = restoreSpec{Messages: 1_000_000, Subjects: 10, Rounds: 1}
	quickRestore = restoreSpec{Messages: 100_000, Subjects: 10, Rounds: 1}
)

// Main runs the benchmark with the command-line args and returns the exit
// code: 0 when every measurement that was not skipped succeeded, 1 when one
// failed, 2 on bad usage (a -compare or -against file that holds no report
// included).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f benchFlags
	fs := f.flagSet(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jetlake-bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	before, ok := readBefore(f.compare, stderr)
	if !ok {
		return 2
	}
	if f.against != "" {
		return compareFiles(before, f.compare, f.against, stdout, stderr)
	}
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })

	cfg, problems := f.config(stderr)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stderr, "jetlake-bench:", p)
		}
		return 2
	}
	rep, err := Run(ctx, cfg)
	return f.finish(rep, err, before, stdout, stderr)
}

// benchFlags are the command-line flags of jetlake-bench. Those that are
// settings of the bench as they stand are parsed into cfg.
type benchFlags struct {
	cfg                      Config
	quick                    bool
	given                    [2]workloadSpec // the messages and subjects of the workload flags
	runs, out                string
	maxFileSize, maxBuffered string
	compaction, scaleOut     bool
	cardinality              cardinalitySpec // of the flags given
	restoreMessages          int
	restoreRounds            int
	compare, against         string
	set                      map[string]bool // the flags given, by name
}

// flagSet returns the flag set that parses the command line into f; its
// usage and errors go to stderr.
func (f *benchFlags) flagSet(stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("jetlake-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: jetlake-bench [flags]\n       jetlake-bench -compare OLD.json -against NEW.json\n\n"+
			"Measures jetlake against the consume and upload limits of this machine, or compares the results of two benches.\n\nFlags:")
		fs.PrintDefaults()
	}
	fs.BoolVar(&f.quick, "quick", false, "scaled-down workloads: 100,000 messages over 10 subjects and 10,000 over 1,000")
	fs.IntVar(&f.given[0].Messages, "messages", fullWorkloads[0].Messages, "messages of the first workload")
	fs.IntVar(&f.given[0].Subjects, "subjects", fullWorkloads[0].Subjects, "subjects of the first workload")
	fs.IntVar(&f.given[1].Messages, "small-messages", fullWorkloads[1].Messages, "messages of the second, high-cardinality workload; 0 skips it")
	fs.IntVar(&f.given[1].Subjects, "small-subjects", fullWorkloads[1].Subjects, "subjects of the second workload")
	fs.IntVar(&f.cfg.PayloadBytes, "payload", 256, "bytes of JSON per message")
	fs.StringVar(&f.runs, "runs", strings.Join(runNames(), ","), "jetlake runs, comma-separated")
	fs.StringVar(&f.cfg.Jetlake, "jetlake", "bin/jetlake", "the jetlake binary to measure")
	fs.StringVar(&f.out, "out", "", "write the results as JSON to this file")
	fs.IntVar(&f.cfg.Rounds, "rounds", 3, "measure each limit and run this many times (while the time budget allows) and report the median; -quick: 1")
	fs.DurationVar(&f.cfg.Budget, "timeout", 10*time.Minute, "time budget of the measurements; those that do not fit are skipped or cut, and say so (removing what the runs wrote comes after it: up to 3 minutes)")
	fs.StringVar(&f.maxFileSize, "max-file-size", "8MiB", "rotation.max_file_size, and the size of the upload limit's objects")
	fs.IntVar(&f.cfg.MaxMessages, "max-messages-per-file", 0, "rotation.max_messages_per_file (0: no count limit)")
	fs.IntVar(&f.cfg.MaxAckPending, "max-ack-pending", 0, "max_ack_pending of every stream (0: jetlake derives it)")
	fs.StringVar(&f.cfg.ConsumerStorage, "consumer-storage", config.DefaultConsumerStorage, "consumer_storage of every stream, and the storage of the consume limit's consumer: memory or file")
	fs.DurationVar(&f.cfg.MaxFileAge, "max-file-age", 30*time.Second, "rotation.max_file_age")
	fs.StringVar(&f.maxBuffered, "max-buffered-bytes", "256MiB", "rotation.max_buffered_bytes")
	fs.IntVar(&f.cfg.UploadConcurrency, "upload-concurrency", 4, "s3.upload_concurrency, and the concurrency of the upload limit")
	fs.BoolVar(&f.compaction, "compaction", true, "measure jetlake compact over an Iceberg table of small files (2,000 over 20 partitions; -quick: 200 over 10)")
	fs.BoolVar(&f.scaleOut, "partitions", true, "measure instances sharing a stream of 4 partitions: one instance, then 2 at once, each one's CPU per million messages (500,000 messages; -quick: 20,000)")
	fs.IntVar(&f.cardinality.Messages, "cardinality-messages", fullCardinality.Messages,
		"messages of the high-cardinality measurement, partitioned by a field of -cardinality-values values within max_buffered_bytes 16 MiB, without a cap on open directories and with the default one, against as many over 10 values; peak RSS against 1.5 × 16 MiB + 64 MiB (-quick: 10,000); 0 skips it")
	fs.IntVar(&f.cardinality.Values, "cardinality-values", fullCardinality.Values, "distinct values of the high-cardinality measurement's field (-quick: 10,000)")
	fs.IntVar(&f.cardinality.MaxOpen, "cardinality-max-open", 0, "max_open_directories of the high-cardinality measurement's capped run (0: jetlake's default, 4,096)")
	fs.IntVar(&f.restoreMessages, "restore-messages", fullRestore.Messages,
		"messages of the restore measurement, exported as json_lines and as parquet and restored into a fresh stream, against a plain jetstream publisher publishing as many (-quick: 100,000); 0 skips it")
	fs.IntVar(&f.restoreRounds, "restore-rounds", fullRestore.Rounds, "rounds of the restore measurement (the publishers and every restore once each), while the time budget allows; the median is reported")
	fs.BoolVar(&f.cfg.Profile, "cpuprofile", false, "write a CPU profile of each jetlake run and restore next to its log (use with -logs)")
	fs.StringVar(&f.cfg.LogDir, "logs", "", "keep jetlake's logs and connector files in this directory (default: a temporary directory, removed)")
	fs.StringVar(&f.compare, "compare", "", "after the results, compare them with those of an earlier bench: a JSON file written by -out")
	fs.StringVar(&f.against, "against", "", "with -compare: compare with the results in this JSON file instead, measuring nothing")
	return fs
}

// readBefore reads the report of -compare, nil when there is none; it
// reports false after telling stderr why the file holds no report.
func readBefore(compare string, stderr io.Writer) (*Report, bool) {
	if compare == "" {
		return nil, true
	}
	before, err := readReport(compare)
	if err != nil {
		fmt.Fprintln(stderr, "jetlake-bench: -compare:", err)
		return nil, false
	}
	return before, true
}

// compareFiles compares before, read from -compare, with the report of
// -against, measuring nothing, and returns the exit code.
func compareFiles(before *Report, compare, against string, stdout, stderr io.Writer) int {
	if before == nil {
		fmt.Fprintln(stderr, "jetlake-bench: -against needs -compare: the earlier results to compare with")
		return 2
	}
	after, err := readReport(against)
	if err != nil {
		fmt.Fprintln(stderr, "jetlake-bench: -against:", err)
		return 2
	}
	fmt.Fprint(stdout, Compare(before, after, compare, against))
	return 0
}

// config resolves the flags into the Config of a bench, or returns the
// problems with them.
func (f *benchFlags) config(stderr io.Writer) (Config, []string) {
	wl := f.workloads()
	if f.quick && !f.set["rounds"] {
		f.cfg.Rounds = 1
	}
	cfg := f.cfg
	cfg.Progress = stderr
	var problems []string
	var err error
	if cfg.ConsumerStorage != config.StorageMemory && cfg.ConsumerStorage != config.StorageFile {
		problems = append(problems, fmt.Sprintf("-consumer-storage %q: want memory or file", cfg.ConsumerStorage))
	}
	if cfg.MaxFileSize, err = config.ParseSize(f.maxFileSize); err != nil {
		problems = append(problems, "-max-file-size: "+err.Error())
	}
	if cfg.MaxBufferedBytes, err = config.ParseSize(f.maxBuffered); err != nil {
		problems = append(problems, "-max-buffered-bytes: "+err.Error())
	}
	cfg.Cardinality = fullCardinality
	if f.quick {
		cfg.Cardinality = quickCardinality
	}
	if f.set["cardinality-messages"] {
		cfg.Cardinality.Messages = f.cardinality.Messages
	}
	if f.set["cardinality-values"] {
		cfg.Cardinality.Values = f.cardinality.Values
	}
	cfg.Cardinality.MaxOpen = f.cardinality.MaxOpen
	cfg.Restore = fullRestore
	if f.quick {
		cfg.Restore = quickRestore
	}
	if f.set["restore-messages"] {
		cfg.Restore.Messages = f.restoreMessages
	}
	cfg.Restore.Rounds = f.restoreRounds
	problems = append(problems, rangeProblems(cfg, wl)...)
	var runProblems []string
	cfg.Runs, runProblems = parseRuns(f.runs)
	if problems = append(problems, runProblems...); len(problems) > 0 {
		return cfg, problems
	}
	if f.scaleOut {
		cfg.ScaleOut = fullScaleOut
		if f.quick {
			cfg.ScaleOut = quickScaleOut
		}
	}
	if f.compaction {
		cfg.Compaction = fullCompaction
		if f.quick {
			cfg.Compaction = quickCompaction
		}
	}
	cfg.Workloads = append(cfg.Workloads, wl[0])
	if wl[1].Messages > 0 {
		cfg.Workloads = append(cfg.Workloads, wl[1])
	}
	return cfg, nil
}

// workloads returns the two workloads: the full ones or -quick's, with
// the messages and subjects of the flags given.
func (f *benchFlags) workloads() [2]workloadSpec {
	wl := fullWorkloads
	if f.quick {
		wl = quickWorkloads
	}
	if f.set["messages"] {
		wl[0].Messages = f.given[0].Messages
	}
	if f.set["subjects"] {
		wl[0].Subjects = f.given[0].Subjects
	}
	if f.set["small-messages"] {
		wl[1].Messages = f.given[1].Messages
	}
	if f.set["small-subjects"] {
		wl[1].Subjects = f.given[1].Subjects
	}
	return wl
}

// rangeProblems returns the numbers of cfg, and of the workloads wl, that
// are out of range, as the flags that set them.
func rangeProblems(cfg Config, wl [2]workloadSpec) []string {
	var problems []string
	if wl[0].Messages < 1 || wl[0].Subjects < 1 {
		problems = append(problems, "-messages and -subjects must be at least 1")
	}
	if wl[1].Messages < 0 || wl[1].Messages > 0 && wl[1].Subjects < 1 {
		problems = append(problems, "-small-messages must be 0 or more, and -small-subjects at least 1")
	}
	if f := cfg.Cardinality; f.Messages < 0 || f.Messages > 0 && f.Values < 1 {
		problems = append(problems, "-cardinality-messages must be 0 or more, and -cardinality-values at least 1")
	}
	if cfg.Restore.Messages < 0 || cfg.Restore.Rounds < 1 {
		problems = append(problems, "-restore-messages must be 0 or more, and -restore-rounds at least 1")
	}
	if cfg.Cardinality.MaxOpen < 0 {
		problems = append(problems, "-cardinality-max-open must be 0 or more")
	}
	if cfg.PayloadBytes < 64 || cfg.PayloadBytes > 1<<20 {
		problems = append(problems, "-payload must be 64 to 1048576 bytes")
	}
	if cfg.UploadConcurrency < 1 || cfg.UploadConcurrency > 64 {
		problems = append(problems, "-upload-concurrency must be 1 to 64")
	}
	if cfg.MaxFileAge <= 0 {
		problems = append(problems, "-max-file-age must be more than 0")
	}
	if cfg.Rounds < 1 {
		problems = append(problems, "-rounds must be at least 1")
	}
	if cfg.Budget <= 0 {
		problems = append(problems, "-timeout must be more than 0")
	}
	return problems
}

// parseRuns returns the runs named in the comma-separated list, and a
// problem for each name that is not a run.
func parseRuns(list string) ([]runSpec, []string) {
	var runs []runSpec
	var problems []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		spec, ok := runSpecByName(name)
		if !ok {
			problems = append(problems, fmt.Sprintf("-runs: unknown run %q; known: %s", name, strings.Join(runNames(), ", ")))
			continue
		}
		runs = append(runs, spec)
	}
	return runs, problems
}

// finish writes the report of a bench that ended with err: the Markdown
// to stdout, with the comparison of -compare, and the JSON of -out; it
// returns the exit code.
func (f *benchFlags) finish(rep *Report, err error, before *Report, stdout, stderr io.Writer) int {
	if rep != nil {
		fmt.Fprint(stdout, rep.Markdown())
		if before != nil {
			fmt.Fprint(stdout, "\n"+Compare(before, rep, f.compare, "this run"))
		}
		if f.out != "" {
			if werr := writeJSON(f.out, rep); werr != nil {
				fmt.Fprintln(stderr, "jetlake-bench:", werr)
				if err == nil {
					err = werr
				}
			} else {
				fmt.Fprintf(stderr, "jetlake-bench: wrote %s\n", f.out)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "jetlake-bench:", err)
		return 1
	}
	if n := rep.Failures(); n > 0 {
		fmt.Fprintf(stderr, "jetlake-bench: %d measurement(s) failed; see the notes in the table\n", n)
		return 1
	}
	return 0
}

// readReport reads a report that -out wrote.
func readReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s holds no jetlake-bench results: %w", path, err)
	}
	if len(rep.Workloads) == 0 && rep.Compaction == nil && rep.ScaleOut == nil && rep.Restore == nil {
		return nil, fmt.Errorf("%s holds no jetlake-bench results: no workloads", path)
	}
	return &rep, nil
}

func writeJSON(path string, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
