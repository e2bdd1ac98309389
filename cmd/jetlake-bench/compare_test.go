package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// reports returns two reports as -out writes them: before, as a bench
// without the Iceberg run and the newer figures wrote it, and after.
func reports() (before, after *Report) {
	started := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	before = &Report{
		Started: started, Rounds: 3, Machine: Machine{CPUs: 2, Jetlake: "v1.2.0"},
		Workloads: []*WorkloadResult{
			{Name: "w1", Messages: 1_000_000, Subjects: 10, Runs: []*RunResult{
				{Name: "json_lines", Seconds: 1, Ratio: 0.84, MessagesPerSecond: 130_064, CPUSeconds: 4.1, PeakRSSBytes: 253 << 20},
				{Name: "parquet", Seconds: 1, Ratio: 0.65, MessagesPerSecond: 101_001, CPUSeconds: 5.7, PeakRSSBytes: 444 << 20},
				{Name: "parquet_typed", Seconds: 1, Ratio: 0.63, MessagesPerSecond: 98_079, CPUSeconds: 6.8, PeakRSSBytes: 443 << 20},
			}},
			{Name: "w2", Messages: 100_000, Subjects: 10_000, Runs: []*RunResult{
				{Name: "json_lines", Seconds: 1, Ratio: 0.05, MessagesPerSecond: 6_500, CPUSeconds: 9.5, PeakRSSBytes: 169 << 20},
				{Name: "parquet", Skipped: true, Note: "jetlake validate rejects it: output.format: unknown"},
			}},
		},
		Compaction: &CompactionResult{SmallFiles: 2000, Seconds: 11.63, Ratio: 0.13},
	}
	after = &Report{
		Started: started.Add(26 * time.Hour), Rounds: 2, Machine: Machine{CPUs: 2, Jetlake: "v1.3.0"},
		Workloads: []*WorkloadResult{
			{Name: "w1", Messages: 1_000_000, Subjects: 10, Runs: []*RunResult{
				{Name: "json_lines", Seconds: 1, Ratio: 0.88, MessagesPerSecond: 143_070, CPUSeconds: 3.69, CPUPerMillion: 3.69, PeakRSSBytes: 240 << 20},
				{Name: "parquet", Seconds: 1, Ratio: 0.70, MessagesPerSecond: 111_101, CPUSeconds: 5.0, CPUPerMillion: 5.0, PeakRSSBytes: 444 << 20},
				{Name: "iceberg", Iceberg: true, Seconds: 1, Ratio: 0.66, MessagesPerSecond: 104_000, CPUSeconds: 5.2, CPUPerMillion: 5.2,
					PeakRSSBytes: 450 << 20, IcebergToParquet: 0.94},
			}},
			{Name: "w2", Messages: 10_000, Subjects: 1_000, Runs: []*RunResult{
				{Name: "json_lines", Seconds: 1, Ratio: 0.06, MessagesPerSecond: 7_000, CPUSeconds: 1.2, CPUPerMillion: 120, PeakRSSBytes: 150 << 20, PutRateRatio: 0.81},
				{Name: "parquet", Seconds: 1, Ratio: 0.05, MessagesPerSecond: 6_000, CPUSeconds: 1.5, CPUPerMillion: 150, PeakRSSBytes: 160 << 20, PutRateRatio: 0.7},
			}},
		},
		Compaction: &CompactionResult{SmallFiles: 2000, Seconds: 10.5, Ratio: 0.15},
	}
	return before, after
}

func TestCompare(t *testing.T) {
	before, after := reports()
	got := Compare(before, after, "old.json", "new.json")
	want := `### Compared: old.json → new.json

Before: old.json (jetlake v1.2.0, 2026-12-01 09:30 UTC, 3 rounds, 2 CPUs). After: new.json (jetlake v1.3.0, 2026-12-02 11:30 UTC, 2 rounds, 2 CPUs).

| workload | run | limit / jetlake | msg/s | CPU s / 1M msg | peak RSS | PUT-rate ratio | iceberg / parquet |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |
| w1 | json_lines | 0.84 → 0.88 | 130,064 → 143,070 (+10.0%) | 4.1 → 3.7 (-10.0%) | 253 MiB → 240 MiB (-5.1%) |  |  |
| w1 | parquet | 0.65 → 0.70 | 101,001 → 111,101 (+10.0%) | 5.7 → 5.0 (-12.3%) | 444 MiB → 444 MiB (+0.0%) |  |  |
| w2 | json_lines | 0.05 → 0.06 | 6,500 → 7,000 (+7.7%) | 95.0 → 120.0 (+26.3%) | 169 MiB → 150 MiB (-11.2%) | – → 0.81 |  |
| w2 | parquet | – → 0.05 | – → 6,000 | – → 150.0 | – → 160 MiB | – → 0.70 |  |

- w2: 100,000 messages over 10,000 subjects before, 10,000 over 1,000 after; compare the ratios, not msg/s
- only before: w1 parquet_typed
- only after: w1 iceberg
- Iceberg compaction (2,000 → 2,000 small files): limit / jetlake 0.13 → 0.15, wall time 11.63 s → 10.50 s (-9.7%)
`
	if got != want {
		t.Errorf("Compare:\n%s\nwant:\n%s", got, want)
	}

	// Nothing in common.
	other := &Report{Workloads: []*WorkloadResult{{Name: "w9"}}}
	if got := Compare(before, other, "a", "b"); !strings.Contains(got, "No workload and run is in both.") ||
		!strings.Contains(got, "only before: w1, w2") || !strings.Contains(got, "only after: w9") {
		t.Errorf("Compare with nothing in common:\n%s", got)
	}
}

func TestCompareAgainstMeasuresNothing(t *testing.T) {
	before, after := reports()
	dir := t.TempDir()
	write := func(name string, rep *Report) string {
		file := filepath.Join(dir, name)
		if err := writeJSON(file, rep); err != nil {
			t.Fatal(err)
		}
		return file
	}
	old, cur := write("old.json", before), write("new.json", after)
	if err := os.WriteFile(filepath.Join(dir, "empty.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // the whole of it
		stderr string // a part of it
	}{
		{"two files", []string{"-compare", old, "-against", cur}, 0, Compare(before, after, old, cur), ""},
		// The measurement flags are not looked at: no servers start.
		{"measurement flags", []string{"-compare", old, "-against", cur, "-jetlake", "/nonexistent", "-rounds", "0"}, 0,
			Compare(before, after, old, cur), ""},
		{"no -compare", []string{"-against", cur}, 2, "", "-against needs -compare"},
		{"missing file", []string{"-compare", filepath.Join(dir, "none.json"), "-against", cur}, 2, "", "-compare: open "},
		{"no report", []string{"-compare", old, "-against", filepath.Join(dir, "empty.json")}, 2, "", "holds no jetlake-bench results"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			if code := Main(ctx, tc.args, &stdout, &stderr); code != tc.code {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, &stdout, &stderr)
			}
			if stdout.String() != tc.stdout {
				t.Errorf("stdout:\n%s\nwant:\n%s", &stdout, tc.stdout)
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q lacks %q", &stderr, tc.stderr)
			}
		})
	}
}

// A report read back from its JSON renders as before, with every new figure
// kept.
func TestReportJSONKeepsEveryFigure(t *testing.T) {
	_, after := reports()
	b, err := json.Marshal(after)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"cpu_per_million":3.69`, `"put_rate_ratio":0.81`, `"iceberg_to_parquet":0.94`, `"iceberg":true`} {
		if !bytes.Contains(b, []byte(key)) {
			t.Errorf("JSON lacks %s:\n%s", key, b)
		}
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got, want := back.Markdown(), after.Markdown(); got != want {
		t.Errorf("read back:\n%s\nwant:\n%s", got, want)
	}
}

// The runs of every workload are in one table, a row each, with the
// PUT-rate ratio on the high-cardinality workload's rows alone and iceberg
// / parquet on the Iceberg run's.
func TestMarkdownHasOneRunTable(t *testing.T) {
	_, rep := reports()
	rep.Settings.UploadConcurrency = 4
	w2 := rep.Workloads[1]
	w2.ConsumeLimit = &Limit{Seconds: 0.13, MessagesPerSecond: 76_487, NATSCPUSeconds: 0.5}
	w2.AckNoneRead = &Limit{Seconds: 0.1, MessagesPerSecond: 100_000, NATSCPUSeconds: 0.25}
	w2.UploadLimit = &Limit{Seconds: 0.04, Objects: 1, ObjectBytes: 3_789_000, Bytes: 3_789_000, MBPerSecond: 92.6}
	w2.LimitSeconds = 0.17
	w2.SameObjectsLimit = &Limit{Seconds: 1.55, Objects: 1000, ObjectBytes: 3789, ObjectsPerSecond: 645, MBPerSecond: 2.4,
		NATSCPUSeconds: 0.02, MinIOCPUSeconds: 2.71}
	w2.SameObjectsLimitSeconds, w2.SameObjectsFrom = 1.68, "json_lines' objects"
	for _, w := range rep.Workloads {
		for _, r := range w.Runs {
			r.Seconds, r.Objects, r.Bytes, r.MBPerSecond = 2.5, 10, 6_500_000, 2.6
		}
	}
	w2.Runs[1].RatioSameObjects = 0.67
	w2.Runs[0].NATSCPUSeconds, w2.Runs[0].MinIOCPUSeconds = 0.85, 2.6
	w2.Runs = append(w2.Runs,
		// Stopped: a wall time and CPU seconds until then, no other figure.
		&RunResult{Name: "parquet_typed", Seconds: 126.13, CPUSeconds: 66.49, PeakRSSBytes: 122 << 20, Ratio: 0.001, RatioSameObjects: 0.07,
			NATSCPUSeconds: 20.5, MinIOCPUSeconds: 1.25, Error: "stopped after 2m6s"},
		&RunResult{Name: "iceberg", Iceberg: true, Error: "no Iceberg commit: 0 logged, 0 metadata objects"})

	md := rep.Markdown()
	if n := strings.Count(md, "\n| --- |"); n != 1 {
		t.Errorf("%d tables, want 1:\n%s", n, md)
	}
	var rows []string
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| w1 |") || strings.HasPrefix(line, "| w2 |") {
			rows = append(rows, line)
		}
	}
	want := []string{
		"| w1 | json_lines | 2.50 | 143,070 | 2.6 | 6.5 MB | 10 | 240 MiB | 3.69 | 3.7 | – |  |  | – | 0.88 |  |  |  |  |",
		"| w1 | parquet | 2.50 | 111,101 | 2.6 | 6.5 MB | 10 | 444 MiB | 5.00 | 5.0 | – |  |  | – | 0.70 |  |  |  |  |",
		"| w1 | iceberg | 2.50 | 104,000 | 2.6 | 6.5 MB | 10 | 450 MiB | 5.20 | 5.2 | – |  |  | – | 0.66 |  |  | 0.94 | table: 10 data files, 0 metadata objects, 0 commits |",
		"| w2 | json_lines | 2.50 | 7,000 | 2.6 | 6.5 MB | 10 | 150 MiB | 1.20 | 120.0 | 0.85 | 1.70× | 3.40× | 2.60 | 0.06 | – | 0.81 |  |  |",
		"| w2 | parquet | 2.50 | 6,000 | 2.6 | 6.5 MB | 10 | 160 MiB | 1.50 | 150.0 | – |  |  | – | 0.05 | 0.67 | 0.70 |  |  |",
		"| w2 | parquet_typed | 126.13 | – | – | – | – | 122 MiB | 66.49 | – | 20.50 | – | – | 1.25 | – | – | – | – | **failed: stopped after 2m6s** |",
		"| w2 | iceberg | – | – | – | – | – | – | – | – | – | – | – | – | – | – | – | – | **failed: no Iceberg commit: 0 logged, 0 metadata objects** |",
	}
	if got := strings.Join(rows, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	for _, want := range []string{
		"| workload | run | wall s | msg/s | MB/s written | written | objects | peak RSS | CPU s | CPU s / 1M msg | nats-server CPU s | nats-server CPU / consume limit's | nats-server CPU / ack-none read's | MinIO CPU s | limit / jetlake | same-objects limit / jetlake | PUT-rate ratio | iceberg / parquet | notes |",
		"- **limit time** = consume + upload: **0.17 s**, 58,823 msg/s\n" +
			"- small-PUT rate, upload limit with jetlake's objects: PutObject ×4, 1,000 objects of 3.7 KiB (json_lines' objects): 1.55 s, **645 objects/s**, 2.4 MB/s; nats-server CPU 0.02 s, MinIO CPU 2.71 s\n" +
			"- same-objects limit time = consume + that upload: 1.68 s, 5,952 msg/s\n",
		"### Iceberg compaction: 2,000 small data files",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in:\n%s", want, md)
		}
	}
}
