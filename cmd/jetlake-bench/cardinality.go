package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/pathtemplate"
)

// CardinalityResult measures jetlake partitioning by a field of many
// distinct values ("{stream}/key={column:key}"): every value is a
// directory, and so an open buffer, all of them within max_buffered_bytes.
// Its peak RSS is compared with the bound the memory budget is to keep:
// 1.5 × max_buffered_bytes + 64 MiB. Like the targets of the other
// measurements, a peak over it is reported, not a failed measurement.
type CardinalityResult struct {
	Messages    int   `json:"messages"`
	Values      int   `json:"values"` // distinct values of the key field
	BudgetBytes int64 `json:"max_buffered_bytes"`
	BoundBytes  int64 `json:"bound_bytes"` // 1.5 × BudgetBytes + 64 MiB

	Seconds           float64 `json:"seconds"` // wall time of jetlake run -until-idle
	MessagesPerSecond float64 `json:"messages_per_second"`
	CPUSeconds        float64 `json:"cpu_seconds"`
	PeakRSSBytes      int64   `json:"peak_rss_bytes"`
	// WithinBound is PeakRSSBytes <= BoundBytes.
	WithinBound bool           `json:"within_bound"`
	Objects     int            `json:"objects"`     // data objects
	Directories int            `json:"directories"` // distinct directories among them
	Bytes       int64          `json:"bytes"`
	Reasons     map[string]int `json:"rotation_reasons,omitempty"`

	Error string `json:"error,omitempty"`
}

// cardinalitySpec is the high-cardinality measurement: messages whose key
// field takes values distinct values, message i the value i mod values,
// exported with a memory budget of budget bytes.
type cardinalitySpec struct {
	Messages, Values int
	Budget           int64
}

// cardinalityBound is the peak RSS a memory budget promises: 1.5 times
// the budget, and 64 MiB for the rest of the process.
func cardinalityBound(budget int64) int64 { return budget*3/2 + 64<<20 }

// cardinality measures one jetlake run over a stream of spec.Messages
// messages whose key field takes spec.Values values, partitioned by it.
func (b *bench) cardinality(ctx context.Context, spec cardinalitySpec) *CardinalityResult {
	r := &CardinalityResult{Messages: spec.Messages, Values: spec.Values, BudgetBytes: spec.Budget, BoundBytes: cardinalityBound(spec.Budget)}
	if b.skip("cardinality", &r.Error) {
		return r
	}
	w := &WorkloadResult{Name: "card", Messages: spec.Messages, Subjects: 10, Stream: "BENCH_CARD"}
	defer b.deleteStream(ctx, w.Stream)
	if err := b.prefill(ctx, workloadSpec{Name: w.Name, Messages: spec.Messages, Subjects: w.Subjects, KeyValues: spec.Values}, w); err != nil {
		r.Error = b.failure("cardinality pre-fill", ctx, err)
		return r
	}
	const consumer, prefix = "bench-cardinality", "cardinality"
	file := filepath.Join(b.logDir, "cardinality.toml")
	log := filepath.Join(b.logDir, "cardinality.log")
	if err := os.WriteFile(file, b.cardinalityConnector(w, spec, consumer, prefix), 0o644); err != nil {
		r.Error = err.Error()
		return r
	}
	b.progress("cardinality: jetlake run over %s messages, %s values of key, max_buffered_bytes %s",
		fmtInt(int64(spec.Messages)), fmtInt(int64(spec.Values)), fmtMiB(spec.Budget))
	defer b.deleteConsumer(ctx, w.Stream, consumer)
	res, err := b.runJetlake(ctx, file, log)
	if res != nil {
		r.Seconds, r.CPUSeconds, r.PeakRSSBytes = res.wall.Seconds(), res.cpu.Seconds(), res.maxRSS
		r.WithinBound = res.maxRSS <= r.BoundBytes
	}
	r.Reasons = parseLog(log).reasons
	if err != nil {
		r.Error = b.failure("cardinality run", ctx, err)
		return r
	}
	r.MessagesPerSecond = float64(spec.Messages) / r.Seconds
	r.Error = b.checkCardinality(ctx, w, spec, consumer, prefix, log, r)
	b.progress("cardinality: %s, %s msg/s, %s objects in %s directories, CPU %s, peak RSS %s (bound %s), rotation %s",
		fmtSeconds(r.Seconds), fmtInt(int64(r.MessagesPerSecond)), fmtInt(int64(r.Objects)), fmtInt(int64(r.Directories)),
		fmtSeconds(r.CPUSeconds), fmtMiB(r.PeakRSSBytes), fmtMiB(r.BoundBytes), reasonList(r.Reasons))
	if r.Error != "" {
		b.progress("cardinality: %s", r.Error)
	}
	return r
}

// checkCardinality checks what the run did, outside the measured time:
// every message acked and written, and a directory per value (the peak
// RSS is reported, whatever it is). It counts
// the objects and directories into r and returns the problems found.
func (b *bench) checkCardinality(ctx context.Context, w *WorkloadResult, spec cardinalitySpec, consumer, prefix, log string, r *CardinalityResult) string {
	var problems []string
	if _, err := b.checkConsumer(ctx, w, consumer); err != nil {
		problems = append(problems, err.Error())
	}
	if written, err := messagesWritten(log); err != nil {
		problems = append(problems, err.Error())
	} else if written != int64(spec.Messages) {
		problems = append(problems, fmt.Sprintf("jetlake wrote %d messages, want %d", written, spec.Messages))
	}
	objs, err := b.objects(ctx, prefix+"/")
	if err != nil {
		return join(strings.Join(problems, "; "), err.Error())
	}
	dirs := map[string]bool{}
	own := pathtemplate.OwnPrefix(prefix)
	for key, size := range objs {
		if strings.HasPrefix(key, own) {
			continue
		}
		r.Objects++
		r.Bytes += size
		dirs[path.Dir(key)] = true
	}
	r.Directories = len(dirs)
	if want := min(spec.Values, spec.Messages); r.Directories != want {
		problems = append(problems, fmt.Sprintf("%d directories, want one per value: %d", r.Directories, want))
	}
	return strings.Join(problems, "; ")
}

// cardinalityConnector returns the connector file of the measurement:
// json_lines partitioned by the key field, one object per directory
// (group_by "path"), within the measurement's memory budget.
func (b *bench) cardinalityConnector(w *WorkloadResult, spec cardinalitySpec, consumer, prefix string) []byte {
	var c bytes.Buffer
	c.WriteString("name = \"bench-cardinality\"\nshutdown_timeout = \"30s\"\n\n")
	fmt.Fprintf(&c, "[nats]\nurl = %q\n\n", b.ns.URL)
	fmt.Fprintf(&c, "[[streams]]\nstream = %q\nconsumer = %q\ndeliver_policy = \"all\"\nack_wait = %q\n", w.Stream, consumer, b.ackWait().String())
	if b.cfg.ConsumerStorage != "" {
		fmt.Fprintf(&c, "consumer_storage = %q\n", b.cfg.ConsumerStorage)
	}
	fmt.Fprintf(&c, "\n[s3]\nbucket = %q\nendpoint = %q\nprefix = %q\nupload_concurrency = %d\n\n",
		bucket, b.ms.Endpoint, prefix, b.cfg.UploadConcurrency)
	c.WriteString("[output]\nformat = \"json_lines\"\npath_template = \"{stream}/key={column:key}\"\ngroup_by = \"path\"\n\n")
	c.WriteString("[[output.columns]]\nname = \"key\"\nsource = \"key\"\ntype = \"string\"\n\n")
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
	if r.Seconds <= 0 {
		return
	}
	verdict := "within"
	if !r.WithinBound {
		verdict = "OVER"
	}
	fmt.Fprintf(b, "- path_template \"{stream}/key={column:key}\", group_by \"path\": %s, %s msg/s, %s objects (%s) in %s directories, CPU %s\n",
		fmtSeconds(r.Seconds), fmtInt(int64(r.MessagesPerSecond)), fmtInt(int64(r.Objects)), fmtMB(r.Bytes), fmtInt(int64(r.Directories)), fmtSeconds(r.CPUSeconds))
	fmt.Fprintf(b, "- **peak RSS %s**, %s the bound 1.5 × %s + 64 MiB = %s; rotation %s\n",
		fmtMiB(r.PeakRSSBytes), verdict, fmtMiB(r.BudgetBytes), fmtMiB(r.BoundBytes), reasonList(r.Reasons))
}
