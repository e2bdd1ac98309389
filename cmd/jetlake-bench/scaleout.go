package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ScaleOutResult measures instances that share a partitioned stream: each
// one's CPU per million messages it wrote, against one instance's on the
// same stream, measured in the same run. On a machine whose cores the
// servers share, more instances cannot show more throughput; the CPU per
// message tells how many instances a rate needs.
type ScaleOutResult struct {
	Messages   int `json:"messages"`
	Subjects   int `json:"subjects"`
	Partitions int `json:"partitions"`

	// One instance holding every partition.
	Single *InstanceResult `json:"single,omitempty"`
	// Instances started together on the same stream.
	Instances []*InstanceResult `json:"instances,omitempty"`
	Seconds   float64           `json:"seconds"` // wall time until the last instance exited
	// CPUPerMillion is the instances' CPU seconds together per million
	// messages; Overhead is it over the single instance's.
	CPUPerMillion float64 `json:"cpu_per_million"`
	Overhead      float64 `json:"overhead"`

	Error string `json:"error,omitempty"`
}

// InstanceResult is one jetlake process of the scale-out measurement.
type InstanceResult struct {
	Messages      int64   `json:"messages"` // written to data objects
	Seconds       float64 `json:"seconds"`
	CPUSeconds    float64 `json:"cpu_seconds"`
	CPUPerMillion float64 `json:"cpu_per_million"`
	PeakRSS       int64   `json:"peak_rss"`
}

// scaleOutSpec is the scale-out measurement: messages over subjects in a
// stream of partitions, shared by instances.
type scaleOutSpec struct {
	Messages, Subjects, Partitions, Instances int
}

// scaleOut measures one instance, then spec.Instances at once, each time
// exporting the whole partitioned stream as json_lines with its own
// consumers.
func (b *bench) scaleOut(ctx context.Context, spec scaleOutSpec) *ScaleOutResult {
	r := &ScaleOutResult{Messages: spec.Messages, Subjects: spec.Subjects, Partitions: spec.Partitions}
	if b.skip("scale-out", &r.Error) {
		return r
	}
	w := &WorkloadResult{Name: "scale", Messages: spec.Messages, Subjects: spec.Subjects, Stream: "BENCH_SCALE", GroupBy: "subject"}
	defer b.deleteStream(ctx, w.Stream)
	if err := b.prefill(ctx, workloadSpec{Name: w.Name, Messages: spec.Messages, Subjects: spec.Subjects, Partitions: spec.Partitions}, w); err != nil {
		r.Error = b.failure("scale-out pre-fill", ctx, err)
		return r
	}
	b.progress("scale-out: one instance on %d partitions", spec.Partitions)
	one, _, err := b.instances(ctx, w, spec, "single", 1)
	if err != nil {
		r.Error = b.failure("scale-out single", ctx, err)
		return r
	}
	r.Single = one[0]
	b.progress("scale-out: %d instances on %d partitions", spec.Instances, spec.Partitions)
	many, wall, err := b.instances(ctx, w, spec, "shared", spec.Instances)
	if err != nil {
		r.Error = b.failure("scale-out instances", ctx, err)
		return r
	}
	r.Instances, r.Seconds = many, wall.Seconds()
	var cpu float64
	var msgs int64
	for _, in := range many {
		cpu += in.CPUSeconds
		msgs += in.Messages
	}
	if msgs != int64(spec.Messages) {
		r.Error = fmt.Sprintf("the instances wrote %d messages, want %d", msgs, spec.Messages)
		return r
	}
	r.CPUPerMillion = cpu / float64(msgs) * 1e6
	if r.Single.CPUPerMillion > 0 {
		r.Overhead = r.CPUPerMillion / r.Single.CPUPerMillion
	}
	return r
}

// instances runs n instances of one connector on w's stream at once, with
// consumers of their own, and measures each.
func (b *bench) instances(ctx context.Context, w *WorkloadResult, spec scaleOutSpec, name string, n int) ([]*InstanceResult, time.Duration, error) {
	file := filepath.Join(b.logDir, "scale-"+name+".toml")
	conn := b.connector(w, runSpec{Name: "scale-" + name, Format: "json_lines"}, "scale-"+name, "scale-"+name, "")
	conn = bytes.Replace(conn, []byte("deliver_policy = \"all\"\n"),
		fmt.Appendf(nil, "deliver_policy = \"all\"\npartitions = %d\nlease_ttl = \"3s\"\npriority_timeout = \"5s\"\n", spec.Partitions), 1)
	if err := os.WriteFile(file, conn, 0o644); err != nil {
		return nil, 0, err
	}
	out := make([]*InstanceResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			log := filepath.Join(b.logDir, fmt.Sprintf("scale-%s-%d.log", name, i+1))
			res, err := b.runJetlake(ctx, file, log)
			if err != nil {
				errs[i] = err
				return
			}
			written, err := messagesWritten(log)
			if err != nil {
				errs[i] = err
				return
			}
			in := &InstanceResult{Messages: written, Seconds: res.wall.Seconds(), CPUSeconds: res.cpu.Seconds(), PeakRSS: res.maxRSS}
			if written > 0 {
				in.CPUPerMillion = in.CPUSeconds / float64(written) * 1e6
			}
			out[i] = in
		})
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return nil, 0, err
		}
	}
	return out, wall, nil
}

// messagesWritten reads, from a jetlake log in JSON, how many messages the
// process wrote to data objects.
func messagesWritten(logFile string) (int64, error) {
	f, err := os.Open(logFile)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), `"stopped cleanly"`) {
			continue
		}
		var line struct {
			Written *int64 `json:"messages_written"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line.Written == nil {
			return 0, fmt.Errorf("%s: a stop line without messages_written: %s", logFile, sc.Text())
		}
		return *line.Written, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: jetlake did not stop cleanly", logFile)
}

// scaleOutLines writes the scale-out measurement.
func (r *ScaleOutResult) lines(b *strings.Builder) {
	fmt.Fprintf(b, "\n### Partitions: %s messages over %d subjects in %d partitions\n\n", fmtInt(int64(r.Messages)), r.Subjects, r.Partitions)
	if r.Error != "" {
		fmt.Fprintf(b, "**%s**\n\n", r.Error)
	}
	if s := r.Single; s != nil {
		fmt.Fprintf(b, "- one instance: %s, CPU %s, **%s CPU per 1M messages**, peak RSS %s\n",
			fmtSeconds(s.Seconds), fmtSeconds(s.CPUSeconds), fmtSeconds(s.CPUPerMillion), fmtMB(s.PeakRSS))
	}
	for i, in := range r.Instances {
		fmt.Fprintf(b, "- instance %d of %d: wrote %s messages in %s, CPU %s, **%s CPU per 1M messages**, peak RSS %s\n",
			i+1, len(r.Instances), fmtInt(in.Messages), fmtSeconds(in.Seconds), fmtSeconds(in.CPUSeconds), fmtSeconds(in.CPUPerMillion), fmtMB(in.PeakRSS))
	}
	if r.CPUPerMillion > 0 {
		fmt.Fprintf(b, "- %d instances together: %s until the last exited, %s CPU per 1M messages: **%.2f ×** one instance's\n",
			len(r.Instances), fmtSeconds(r.Seconds), fmtSeconds(r.CPUPerMillion), r.Overhead)
	}
}
