package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/pathtemplate"
)

// CardinalityResult measures jetlake partitioning by a field of many
// distinct values ("{stream}/key={column:key}"): every value is a
// directory, and so an open buffer, all of them within max_buffered_bytes.
// It is three runs over the same number of messages: Normal over
// NormalValues values (an ordinary layout), Uncapped over Values values
// with max_open_directories = 0 (jetlake before the cap: an object per
// value), and the run of the embedded CardinalityRun over them with
// jetlake's default max_open_directories, whose values beyond it are
// rejected. The flood's rates are compared with Normal's. Peak RSS is
// compared with the bound the memory budget is to keep: 1.5 ×
// max_buffered_bytes + 64 MiB. Like the targets of the other measurements,
// a peak over it is reported, not a failed measurement.
type CardinalityResult struct {
	Messages     int   `json:"messages"`
	Values       int   `json:"values"`        // distinct values of the key field
	NormalValues int   `json:"normal_values"` // of Normal's key field
	BudgetBytes  int64 `json:"max_buffered_bytes"`
	BoundBytes   int64 `json:"bound_bytes"` // 1.5 × BudgetBytes + 64 MiB
	// MaxOpenDirectories is the embedded run's: jetlake's default unless
	// -cardinality-max-open sets it.
	MaxOpenDirectories int `json:"max_open_directories"`

	CardinalityRun                 // with MaxOpenDirectories
	Uncapped       *CardinalityRun `json:"uncapped,omitempty"` // max_open_directories = 0
	Normal         *CardinalityRun `json:"normal,omitempty"`   // over NormalValues values
	// Ratio and UncappedRatio are the embedded run's and Uncapped's
	// messages per second over Normal's.
	Ratio         float64 `json:"ratio,omitempty"`
	UncappedRatio float64 `json:"uncapped_ratio,omitempty"`

	Error string `json:"error,omitempty"`
}

// CardinalityRun is one jetlake run of the high-cardinality measurement.
type CardinalityRun struct {
	Seconds           float64 `json:"seconds"` // wall time of jetlake run -until-idle
	MessagesPerSecond float64 `json:"messages_per_second"`
	CPUSeconds        float64 `json:"cpu_seconds"`
	PeakRSSBytes      int64   `json:"peak_rss_bytes"`
	// WithinBound is PeakRSSBytes <= the result's BoundBytes.
	WithinBound bool           `json:"within_bound"`
	Objects     int            `json:"objects"`     // data objects
	Directories int            `json:"directories"` // distinct directories among them
	Bytes       int64          `json:"bytes"`
	Reasons     map[string]int `json:"rotation_reasons,omitempty"`
	// Rejected is the messages the run's log says it rejected, and
	// RejectedObjects the objects under _jetlake/rejected/ that hold them.
	Rejected        int `json:"rejected"`
	RejectedObjects int `json:"rejected_objects"`
}

// cardinalitySpec is the high-cardinality measurement: messages whose key
// field takes values distinct values, message i the value i mod values,
// exported with a memory budget of budget bytes.
type cardinalitySpec struct {
	Messages, Values int
	Budget           int64
	// MaxOpen is the capped run's max_open_directories; 0 leaves the key
	// out, for jetlake's default.
	MaxOpen int
}

// cardinalityBound is the peak RSS a memory budget promises: 1.5 times
// the budget, and 64 MiB for the rest of the process.
func cardinalityBound(budget int64) int64 { return budget*3/2 + 64<<20 }

// defaultMaxOpenDirectories is jetlake's max_open_directories by default,
// which the capped run leaves in place.
const defaultMaxOpenDirectories = 4096

// normalValues is how many values the key field of the normal run takes.
const normalValues = 10

// cardinalityRunSpec is one run of the measurement: its name, the values
// of its stream's key field and the max_open_directories it sets (-1: the
// key left out, jetlake's default).
type cardinalityRunSpec struct {
	name      string
	values    int
	maxOpen   int
	directory int // the directories it must write: -1 when the cap decides
	cap       int // the cap in force, when it decides
}

// cardinality measures the jetlake runs over a stream of spec.Messages
// messages whose key field takes spec.Values values, partitioned by it,
// and one over normalValues values.
func (b *bench) cardinality(ctx context.Context, spec cardinalitySpec) *CardinalityResult {
	r := &CardinalityResult{Messages: spec.Messages, Values: spec.Values, NormalValues: normalValues, BudgetBytes: spec.Budget,
		BoundBytes: cardinalityBound(spec.Budget), MaxOpenDirectories: defaultMaxOpenDirectories}
	capped := cardinalityRunSpec{name: "capped", values: spec.Values, maxOpen: -1, directory: -1, cap: defaultMaxOpenDirectories}
	if spec.MaxOpen > 0 {
		capped.maxOpen, capped.cap, r.MaxOpenDirectories = spec.MaxOpen, spec.MaxOpen, spec.MaxOpen
	}
	want := min(spec.Values, spec.Messages)
	runs := []cardinalityRunSpec{
		{name: "normal", values: normalValues, maxOpen: -1, directory: min(normalValues, spec.Messages)},
		{name: "uncapped", values: spec.Values, maxOpen: 0, directory: want},
		capped,
	}
	if want <= capped.cap {
		runs[2].directory = want
	}
	var problems []string
	for _, rs := range runs {
		if b.skip("cardinality "+rs.name, &r.Error) {
			return r
		}
		run, err := b.cardinalityRun(ctx, spec, rs, r.BoundBytes)
		switch rs.name {
		case "normal":
			r.Normal = run
		case "uncapped":
			r.Uncapped = run
		default:
			if run != nil {
				r.CardinalityRun = *run
			}
		}
		if err != "" {
			problems = append(problems, rs.name+": "+err)
		}
	}
	r.Error = join(r.Error, strings.Join(problems, "; "))
	if n := r.Normal; n != nil && n.MessagesPerSecond > 0 {
		r.Ratio = r.MessagesPerSecond / n.MessagesPerSecond
		if r.Uncapped != nil {
			r.UncappedRatio = r.Uncapped.MessagesPerSecond / n.MessagesPerSecond
		}
	}
	return r
}

// cardinalityRun measures one jetlake run of the measurement, over a
// stream of its own, and returns it with the problems found.
func (b *bench) cardinalityRun(ctx context.Context, spec cardinalitySpec, rs cardinalityRunSpec, bound int64) (*CardinalityRun, string) {
	w := &WorkloadResult{Name: "card-" + rs.name, Messages: spec.Messages, Subjects: 10, Stream: "BENCH_CARD_" + strings.ToUpper(rs.name)}
	defer b.deleteStream(ctx, w.Stream)
	if err := b.prefill(ctx, workloadSpec{Name: w.Name, Messages: spec.Messages, Subjects: w.Subjects, KeyValues: rs.values}, w); err != nil {
		return nil, b.failure("cardinality pre-fill", ctx, err)
	}
	consumer, prefix := "bench-cardinality-"+rs.name, "cardinality-"+rs.name
	file := filepath.Join(b.logDir, "cardinality-"+rs.name+".toml")
	log := filepath.Join(b.logDir, "cardinality-"+rs.name+".log")
	if err := os.WriteFile(file, b.cardinalityConnector(w, spec, consumer, prefix, rs.maxOpen), 0o644); err != nil {
		return nil, err.Error()
	}
	capNote := "max_open_directories " + strconv.Itoa(defaultMaxOpenDirectories) + " (the default)"
	if rs.maxOpen >= 0 {
		capNote = "max_open_directories " + strconv.Itoa(rs.maxOpen)
	}
	b.progress("cardinality %s: jetlake run over %s messages, %s values of key, max_buffered_bytes %s, %s",
		rs.name, fmtInt(int64(spec.Messages)), fmtInt(int64(rs.values)), fmtMiB(spec.Budget), capNote)
	defer b.deleteConsumer(ctx, w.Stream, consumer)
	res, err := b.runJetlake(ctx, file, log)
	r := &CardinalityRun{}
	if res != nil {
		r.Seconds, r.CPUSeconds, r.PeakRSSBytes = res.wall.Seconds(), res.cpu.Seconds(), res.maxRSS
		r.WithinBound = res.maxRSS <= bound
	}
	sum := parseLog(log)
	r.Reasons, r.Rejected = sum.reasons, sum.rejected
	if err != nil {
		return r, b.failure("cardinality run", ctx, err)
	}
	r.MessagesPerSecond = float64(spec.Messages) / r.Seconds
	problems := b.checkCardinality(ctx, w, spec, rs, consumer, prefix, log, r)
	b.progress("cardinality %s: %s, %s msg/s, %s objects in %s directories, %s rejected in %d objects, CPU %s, peak RSS %s (bound %s), rotation %s",
		rs.name, fmtSeconds(r.Seconds), fmtInt(int64(r.MessagesPerSecond)), fmtInt(int64(r.Objects)), fmtInt(int64(r.Directories)),
		fmtInt(int64(r.Rejected)), r.RejectedObjects, fmtSeconds(r.CPUSeconds), fmtMiB(r.PeakRSSBytes), fmtMiB(bound), reasonList(r.Reasons))
	if problems != "" {
		b.progress("cardinality %s: %s", rs.name, problems)
	}
	return r, problems
}

// checkCardinality checks what a run did, outside the measured time:
// every message acked and written, as data or rejected, and the
// directories it was to write (between the cap and the values when the
// cap decides; the peak RSS is reported, whatever it is). It counts the
// objects and directories into r and returns the problems found.
func (b *bench) checkCardinality(ctx context.Context, w *WorkloadResult, spec cardinalitySpec, rs cardinalityRunSpec, consumer, prefix, log string, r *CardinalityRun) string {
	var problems []string
	if _, err := b.checkConsumer(ctx, w, consumer); err != nil {
		problems = append(problems, err.Error())
	}
	if written, err := messagesWritten(log); err != nil {
		problems = append(problems, err.Error())
	} else if written != int64(spec.Messages) {
		problems = append(problems, fmt.Sprintf("jetlake wrote %d messages (data and rejected), want %d", written, spec.Messages))
	}
	objs, err := b.objects(ctx, prefix+"/")
	if err != nil {
		return join(strings.Join(problems, "; "), err.Error())
	}
	dirs := map[string]bool{}
	own := pathtemplate.OwnPrefix(prefix)
	rejected := pathtemplate.KindPrefix(prefix, pathtemplate.Rejected)
	for key, size := range objs {
		if strings.HasPrefix(key, rejected) {
			r.RejectedObjects++
		}
		if strings.HasPrefix(key, own) {
			continue
		}
		r.Objects++
		r.Bytes += size
		dirs[path.Dir(key)] = true
	}
	r.Directories = len(dirs)
	switch {
	case rs.directory >= 0 && (r.Directories != rs.directory || r.Rejected != 0):
		problems = append(problems, fmt.Sprintf("%d directories and %d messages rejected, want one directory per value: %d, and none", r.Directories, r.Rejected, rs.directory))
	case rs.directory < 0:
		// The cap, more when the run outlasted max_file_age: a
		// directory's place is free again max_file_age after its
		// message.
		most := rs.cap * (1 + int(r.Seconds/b.cfg.MaxFileAge.Seconds()))
		if r.Directories < rs.cap || r.Directories > most || r.Rejected == 0 {
			problems = append(problems, fmt.Sprintf("%d directories and %d messages rejected, want %d to %d directories and the rest rejected",
				r.Directories, r.Rejected, rs.cap, most))
		}
	}
	return strings.Join(problems, "; ")
}

// cardinalityConnector returns the connector file of a run: json_lines
// partitioned by the key field, one object per directory (group_by
// "path"), within the measurement's memory budget, max_open_directories
// set to maxOpen unless it is -1.
func (b *bench) cardinalityConnector(w *WorkloadResult, spec cardinalitySpec, consumer, prefix string, maxOpen int) []byte {
	var c bytes.Buffer
	c.WriteString("name = \"bench-cardinality\"\nshutdown_timeout = \"30s\"\n\n")
	fmt.Fprintf(&c, "[nats]\nurl = %q\n\n", b.ns.URL)
	fmt.Fprintf(&c, "[[streams]]\nstream = %q\nconsumer = %q\ndeliver_policy = \"all\"\nack_wait = %q\n", w.Stream, consumer, b.ackWait().String())
	if b.cfg.ConsumerStorage != "" {
		fmt.Fprintf(&c, "consumer_storage = %q\n", b.cfg.ConsumerStorage)
	}
	fmt.Fprintf(&c, "\n[s3]\nbucket = %q\nendpoint = %q\nprefix = %q\nupload_concurrency = %d\n\n",
		bucket, b.ms.Endpoint, prefix, b.cfg.UploadConcurrency)
	c.WriteString("[output]\nformat = \"json_lines\"\npath_template = \"{stream}/key={column:key}\"\ngroup_by = \"path\"\n")
	if maxOpen >= 0 {
		fmt.Fprintf(&c, "max_open_directories = %d\n", maxOpen)
	}
	c.WriteString("\n[[output.columns]]\nname = \"key\"\nsource = \"key\"\ntype = \"string\"\n\n")
	fmt.Fprintf(&c, "[rotation]\nmax_file_size = %q\nmax_messages_per_file = %d\nmax_file_age = %q\nmax_buffered_bytes = %q\n",
		config.FormatSize(b.cfg.MaxFileSize), b.cfg.MaxMessages, b.cfg.MaxFileAge.String(), config.FormatSize(spec.Budget))
	return c.Bytes()
}

// lines writes the measurement.
func (r *CardinalityResult) lines(b *strings.Builder) {
	fmt.Fprintf(b, "\n### High cardinality: %s messages over %s values of one field, max_buffered_bytes %s\n\n",
		fmtInt(int64(r.Messages)), fmtInt(int64(r.Values)), fmtMiB(r.BudgetBytes))
	if r.Error != "" {
		fmt.Fprintf(b, "**%s**\n\n", r.Error)
	}
	b.WriteString("path_template \"{stream}/key={column:key}\", group_by \"path\"; the flood's rates against the normal run's, over the same number of messages:\n\n")
	if n := r.Normal; n != nil && n.Seconds > 0 {
		r.runLine(b, n, fmt.Sprintf("normal, %d values", r.NormalValues), "")
	}
	if u := r.Uncapped; u != nil && u.Seconds > 0 {
		r.runLine(b, u, "max_open_directories = 0 (no cap)", ratioNote(r.UncappedRatio))
	}
	if r.Seconds > 0 {
		name := fmt.Sprintf("max_open_directories = %d", r.MaxOpenDirectories)
		if r.MaxOpenDirectories == defaultMaxOpenDirectories {
			name += " (the default)"
		}
		r.runLine(b, &r.CardinalityRun, name, ratioNote(r.Ratio))
	}
}

// ratioNote is a run's rate over the normal run's, for its line.
func ratioNote(ratio float64) string {
	if ratio <= 0 {
		return ""
	}
	return fmt.Sprintf(", **%.2f × the normal rate**", ratio)
}

// runLine writes one run of the measurement.
func (r *CardinalityResult) runLine(b *strings.Builder, run *CardinalityRun, name, note string) {
	verdict := "within"
	if !run.WithinBound {
		verdict = "OVER"
	}
	fmt.Fprintf(b, "- %s: %s, %s msg/s%s, %s objects (%s) in %s directories, %s rejected in %d objects, CPU %s, peak RSS %s (%s the bound 1.5 × %s + 64 MiB = %s), rotation %s\n",
		name, fmtSeconds(run.Seconds), fmtInt(int64(run.MessagesPerSecond)), note, fmtInt(int64(run.Objects)), fmtMB(run.Bytes), fmtInt(int64(run.Directories)),
		fmtInt(int64(run.Rejected)), run.RejectedObjects, fmtSeconds(run.CPUSeconds), fmtMiB(run.PeakRSSBytes), verdict, fmtMiB(r.BudgetBytes), fmtMiB(r.BoundBytes), reasonList(run.Reasons))
}
