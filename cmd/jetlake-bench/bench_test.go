package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetlake/jetlake/internal/exportertest"
)

// buildJetlake builds the jetlake command into a temporary directory, or
// returns $JETLAKE_BENCH_JETLAKE, a binary built before. Every test that
// calls it runs the benchmark against real servers, so it skips them under
// -short.
func buildJetlake(t *testing.T) string {
	t.Helper()
	exportertest.SkipShort(t)
	if bin := os.Getenv("JETLAKE_BENCH_JETLAKE"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "jetlake")
	out, err := exec.Command("go", "build", "-o", bin, "../jetlake").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ../jetlake: %v\n%s", err, out)
	}
	return bin
}

func TestQuickBenchMeasuresEveryRunAndStopsItsProcesses(t *testing.T) {
	bin := buildJetlake(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := Main(ctx, []string{"-quick", "-messages", "5000", "-small-messages", "1000", "-small-subjects", "100",
		"-cardinality-messages", "2000", "-cardinality-values", "1000", "-restore-messages", "5000",
		"-jetlake", bin, "-out", out, "-logs", t.TempDir()}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	wantNoChildren(t)

	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("-out holds no report: %v\n%s", err, b)
	}
	if len(rep.Workloads) != 2 {
		t.Fatalf("%d workloads, want 2", len(rep.Workloads))
	}
	var limitsCPU float64 // nats-server in the consume limits, MinIO in the upload limits
	for i, want := range []struct{ messages, subjects int }{{5000, 10}, {1000, 100}} {
		w := rep.Workloads[i]
		if w.Messages != want.messages || w.Subjects != want.subjects || w.Error != "" {
			t.Fatalf("workload %s: %d messages over %d subjects (error %q), want %d over %d",
				w.Name, w.Messages, w.Subjects, w.Error, want.messages, want.subjects)
		}
		if w.ConsumeLimit == nil || w.ConsumeLimit.MessagesPerSecond <= 0 || w.UploadLimit == nil || w.UploadLimit.Bytes != w.JSONLinesBytes ||
			w.LimitSeconds != w.ConsumeLimit.Seconds+w.UploadLimit.Seconds {
			t.Fatalf("workload %s: limits %+v and %+v, limit time %v; want both, the upload of %d bytes",
				w.Name, w.ConsumeLimit, w.UploadLimit, w.LimitSeconds, w.JSONLinesBytes)
		}
		if len(w.Runs) != len(runSpecs) {
			t.Fatalf("workload %s: %d runs, want %d", w.Name, len(w.Runs), len(runSpecs))
		}
		for _, r := range w.Runs {
			if r.Skipped {
				if !strings.HasPrefix(r.Note, "jetlake validate rejects it: ") {
					t.Errorf("workload %s, run %s skipped for another reason than validate: %s", w.Name, r.Name, r.Note)
				}
				continue
			}
			if r.Error != "" || r.Seconds <= 0 || r.Objects == 0 || r.Bytes == 0 || r.PeakRSSBytes == 0 || r.CPUSeconds <= 0 || r.Ratio <= 0 ||
				r.CPUPerMillion != r.CPUSeconds*1e6/float64(w.Messages) {
				t.Errorf("workload %s, run %s: %+v", w.Name, r.Name, r)
			}
			// The PUT-rate ratio is the high-cardinality workload's.
			if (r.PutRateRatio > 0) != (i == 1) {
				t.Errorf("workload %s, run %s: PUT-rate ratio %v", w.Name, r.Name, r.PutRateRatio)
			}
		}
		// The servers' CPU is measured around every run, in ticks of
		// 10 ms: a short limit may take less than one.
		var natsCPU, minioCPU float64
		for _, r := range w.Runs {
			natsCPU += r.NATSCPUSeconds
			minioCPU += r.MinIOCPUSeconds
		}
		if natsCPU <= 0 || minioCPU <= 0 {
			t.Errorf("workload %s: servers' CPU over the runs: nats-server %v s, MinIO %v s", w.Name, natsCPU, minioCPU)
		}
		limitsCPU += w.ConsumeLimit.NATSCPUSeconds + w.UploadLimit.MinIOCPUSeconds
		jl := w.Runs[0]
		if jl.Name != runJSONLines || jl.Skipped || jl.Bytes != w.JSONLinesBytes {
			t.Errorf("workload %s: json_lines run %+v, want %d bytes written", w.Name, jl, w.JSONLinesBytes)
		}
		// The Iceberg run counts the table's data files, as many as the
		// plain parquet run's objects, and nothing of its metadata.
		ice, pq := w.run("iceberg"), w.run("parquet")
		if ice == nil || pq == nil || !ice.Iceberg || ice.Objects != pq.Objects || ice.Extensions["parquet"] != ice.Objects ||
			ice.Commits < 1 || ice.MetadataObjects == 0 || ice.IcebergToParquet <= 0 ||
			math.Abs(ice.IcebergToParquet-pq.Seconds/ice.Seconds) > 1e-9 {
			t.Errorf("workload %s: iceberg run %+v, parquet run %+v", w.Name, ice, pq)
		}
	}
	if limitsCPU <= 0 {
		t.Error("no server CPU measured in any limit")
	}
	// An object per subject: the files are far below max_file_size.
	if jl := rep.Workloads[1].Runs[0]; jl.Objects != 100 {
		t.Errorf("json_lines over 100 subjects wrote %d objects, want 100", jl.Objects)
	}
	// The small-PUT rate: as many PutObjects as json_lines wrote objects.
	if w := rep.Workloads[1]; w.SameObjectsLimit == nil || w.SameObjectsLimit.Objects != 100 || w.SameObjectsLimit.ObjectsPerSecond <= 0 {
		t.Errorf("workload w2: same-objects limit %+v, want 100 objects", w.SameObjectsLimit)
	}
	// -quick compacts 200 small files over 10 partitions into 10.
	if c := rep.Compaction; c == nil || c.Error != "" || c.SmallFiles != 200 || c.Partitions != 10 || c.FilesAfter != 10 ||
		c.Seconds <= 0 || c.LimitSeconds <= 0 || c.Ratio <= 0 {
		t.Errorf("compaction %+v", c)
	}
	// -quick shares 20,000 messages in 4 partitions between 2 instances,
	// after one instance alone.
	if so := rep.ScaleOut; so == nil || so.Error != "" || so.Single == nil || so.Single.Messages != 20000 || len(so.Instances) != 2 ||
		so.Instances[0].Messages+so.Instances[1].Messages != 20000 || so.CPUPerMillion <= 0 || so.Overhead <= 0 {
		t.Errorf("scale-out %+v", so)
	} else {
		for _, in := range so.Instances {
			if in.Messages > 0 && (in.CPUSeconds <= 0 || in.CPUPerMillion != in.CPUSeconds/float64(in.Messages)*1e6) {
				t.Errorf("instance %+v", in)
			}
		}
	}
	// 2,000 messages over 1,000 values of their key field: a directory
	// each, below the cap, with it and without; over 10 values, 10; the
	// peak RSS against 1.5 × 16 MiB + 64 MiB; the rates against the
	// normal run's.
	if c := rep.Cardinality; c == nil || c.Error != "" || c.Messages != 2000 || c.Directories != 1000 || c.Objects < 1000 || c.Rejected != 0 ||
		c.PeakRSSBytes <= 0 || c.CPUSeconds <= 0 || c.BudgetBytes != 16<<20 || c.BoundBytes != 88<<20 ||
		c.WithinBound != (c.PeakRSSBytes <= c.BoundBytes) || c.MaxOpenDirectories != 4096 ||
		c.Uncapped == nil || c.Uncapped.Directories != 1000 || c.Normal == nil || c.Normal.Directories != 10 ||
		c.Ratio != c.MessagesPerSecond/c.Normal.MessagesPerSecond || c.UncappedRatio != c.Uncapped.MessagesPerSecond/c.Normal.MessagesPerSecond {
		t.Errorf("cardinality %+v", c)
	}
	// w1's 5,000 messages, as its json_lines and parquet runs of round 1
	// wrote them, published back by the three publishers and restored from
	// each export, every restore against the plain publisher of its round.
	wantRestore(t, rep.Restore, 5000, "w1's json_lines and parquet runs of round 1")
	for _, want := range []string{"### w1: 5,000 messages over 10 subjects",
		"### Restore: 5,000 messages of 256 B over 10 subjects", "- jetlake restore from parquet (", "× the plain publisher** (target ≥ 0.8)",
		"### High cardinality: 2,000 messages over 1,000 values of one field, max_buffered_bytes 16 MiB", "the bound 1.5 × 16 MiB + 64 MiB = 88 MiB", "- max_open_directories = 0 (no cap): ", "× the normal rate**", "**limit time**", "small-PUT rate",
		"### Partitions: 20,000 messages over 40 subjects in 4 partitions", "- instance 2 of 2: wrote",
		"| CPU s / 1M msg |", "| PUT-rate ratio | iceberg / parquet |",
		"| w1 | json_lines | ", "| w1 | parquet_typed | ", "| w1 | iceberg | ", "| w2 | iceberg | ",
		"### Iceberg compaction: 200 small data files", "- jetlake compact: 10 files after:"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, &stdout)
		}
	}
	// One table: every workload's runs in it.
	if n := strings.Count(stdout.String(), "\n| --- |"); n != 1 {
		t.Errorf("%d tables, want 1:\n%s", n, &stdout)
	}
}

// wantRestore checks a restore measurement of n messages, from exports
// its ExportsFrom names with from.
func wantRestore(t *testing.T, r *RestoreResult, n int, from string) {
	t.Helper()
	if r == nil || r.Error != "" || r.Messages != n || r.Rounds != 1 || !strings.Contains(r.ExportsFrom, from) ||
		r.Publisher == nil || r.Publisher.MessagesPerSecond <= 0 || r.HeadedPublisher == nil || r.HeadedPublisher.MessagesPerSecond <= 0 ||
		r.AtomicPublisher == nil || r.AtomicPublisher.MessagesPerSecond <= 0 || len(r.Runs) != 2 {
		t.Errorf("restore %+v", r)
		return
	}
	for i, run := range r.Runs {
		if run.Format != restoreFormats[i] || run.Error != "" || run.Objects == 0 || run.Seconds <= 0 || run.CPUSeconds <= 0 || run.PeakRSSBytes <= 0 ||
			run.Ratio != run.MessagesPerSecond/r.Publisher.MessagesPerSecond || run.HeadedRatio != run.MessagesPerSecond/r.HeadedPublisher.MessagesPerSecond ||
			run.AtomicRatio != run.MessagesPerSecond/r.AtomicPublisher.MessagesPerSecond {
			t.Errorf("restore from %s: %+v", restoreFormats[i], run)
		}
	}
}

// A restore measurement of another size than the workloads' fills and
// exports a stream of its own.
func TestRestoreMeasurementExportsAStreamOfItsOwn(t *testing.T) {
	bin := buildJetlake(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := Main(ctx, []string{"-messages", "1000", "-small-messages", "0", "-runs", "json_lines", "-compaction=false", "-partitions=false",
		"-cardinality-messages", "0", "-restore-messages", "3000", "-rounds", "1", "-jetlake", bin, "-out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	wantNoChildren(t)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	wantRestore(t, rep.Restore, 3000, "a stream of its own")
}

func TestInterruptedBenchStopsJetlakeAndTheServers(t *testing.T) {
	bin := buildJetlake(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Interrupt once jetlake runs, as a Ctrl-C would.
	progress := &watchWriter{match: "running jetlake", then: func() {
		time.AfterFunc(300*time.Millisecond, cancel)
	}}
	done := make(chan int, 1)
	var stdout bytes.Buffer
	logs := t.TempDir() // not in the goroutine: TempDir may call t.Fatal
	go func() {
		done <- Main(ctx, []string{"-messages", "50000", "-small-messages", "0", "-runs", "json_lines", "-rounds", "1",
			"-jetlake", bin, "-logs", logs}, &stdout, progress)
	}()
	select {
	case code := <-done:
		if code != 1 {
			t.Fatalf("exit code %d after an interrupt, want 1\n%s", code, progress)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("no exit within 2 minutes after the interrupt\n%s", progress)
	}
	if !progress.seen() {
		t.Fatalf("jetlake never ran\n%s", progress)
	}
	wantNoChildren(t)
}

// watchWriter collects what is written to it and calls then once the first
// time match is written.
type watchWriter struct {
	match string
	then  func()

	mu      sync.Mutex
	buf     bytes.Buffer
	matched bool
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.matched && bytes.Contains(p, []byte(w.match)) {
		w.matched = true
		w.then()
	}
	return len(p), nil
}

func (w *watchWriter) seen() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.matched
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// wantNoChildren checks that this process has no child processes left: every
// server and jetlake process was stopped and reaped.
func wantNoChildren(t *testing.T) {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil || len(tasks) == 0 {
		t.Log("no /proc/self/task/*/children here; not checking for child processes")
		return
	}
	var pids []string
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pids = append(pids, strings.Fields(string(b))...)
	}
	for _, pid := range pids {
		cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
		if _, err := strconv.Atoi(pid); err == nil {
			t.Errorf("child process %s still runs: %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

func TestMessagesWrittenComesFromTheStopLine(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.log")
	os.WriteFile(good, []byte(`{"msg":"partition claimed"}
{"time":"x","level":"INFO","msg":"stopped cleanly","connector":"c","messages_written":12345}
`), 0o644)
	if n, err := messagesWritten(good); err != nil || n != 12345 {
		t.Fatalf("messagesWritten = %d, %v; want 12345", n, err)
	}
	bad := filepath.Join(dir, "bad.log")
	os.WriteFile(bad, []byte(`{"msg":"idle: every consumer is caught up"}`+"\n"), 0o644)
	if _, err := messagesWritten(bad); err == nil {
		t.Fatal("a log without a clean stop gave a count")
	}
}
