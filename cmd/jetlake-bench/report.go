package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Report is the result of a benchmark run; it is written as JSON with -out.
// Sizes are bytes, rates per second, MB are 10^6 bytes.
type Report struct {
	Started   time.Time         `json:"started"`
	Seconds   float64           `json:"seconds"`
	Rounds    int               `json:"rounds"` // measurements of each limit and run
	Machine   Machine           `json:"machine"`
	Settings  Settings          `json:"settings"`
	Workloads []*WorkloadResult `json:"workloads"`
	// Compaction measures jetlake compact over an Iceberg table of small
	// files; nil when not measured.
	Compaction *CompactionResult `json:"compaction,omitempty"`
}

// Machine names what ran.
type Machine struct {
	CPUs       int    `json:"cpus"`
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Jetlake    string `json:"jetlake_version"`
	NATSServer string `json:"nats_server_version"`
	MinIO      string `json:"minio_version"`
}

// Settings are the connector settings every run used.
type Settings struct {
	PayloadBytes       int     `json:"payload_bytes"`
	MaxFileSize        int64   `json:"max_file_size"`
	MaxMessagesPerFile int     `json:"max_messages_per_file"`
	MaxFileAgeSeconds  float64 `json:"max_file_age_seconds"`
	MaxBufferedBytes   int64   `json:"max_buffered_bytes"`
	UploadConcurrency  int     `json:"upload_concurrency"`
	BudgetSeconds      float64 `json:"budget_seconds"`
}

// WorkloadResult is one stream, its limits and the jetlake runs over it.
type WorkloadResult struct {
	Name           string  `json:"name"`
	Stream         string  `json:"stream"`
	Messages       int     `json:"messages"`
	Subjects       int     `json:"subjects"`
	GroupBy        string  `json:"group_by"`
	PayloadBytes   float64 `json:"payload_bytes"`    // mean
	StreamBytes    int64   `json:"stream_bytes"`     // as the server counts them
	JSONLinesBytes int64   `json:"json_lines_bytes"` // the uncompressed json_lines output
	PrefillSeconds float64 `json:"prefill_seconds"`

	ConsumeLimit *Limit `json:"consume_limit,omitempty"`
	UploadLimit  *Limit `json:"upload_limit,omitempty"`
	// LimitSeconds is consume limit + upload limit (the median round).
	LimitSeconds float64   `json:"limit_seconds"`
	LimitRounds  []float64 `json:"limit_rounds,omitempty"`
	// SameObjectsLimit uploads as many objects of the mean size as the
	// json_lines run wrote, when that is many more than UploadLimit's.
	SameObjectsLimit        *Limit  `json:"same_objects_limit,omitempty"`
	SameObjectsLimitSeconds float64 `json:"same_objects_limit_seconds,omitempty"`

	Runs  []*RunResult `json:"runs"`
	Error string       `json:"error,omitempty"`
}

// Limit is one baseline measurement: the round of the median time, with
// the times of every round.
type Limit struct {
	Seconds           float64   `json:"seconds"`
	RoundSeconds      []float64 `json:"round_seconds,omitempty"`
	Messages          int       `json:"messages,omitempty"`
	MessagesPerSecond float64   `json:"messages_per_second,omitempty"`
	Objects           int       `json:"objects,omitempty"`
	ObjectBytes       int64     `json:"object_bytes,omitempty"`
	Bytes             int64     `json:"bytes,omitempty"`
	MBPerSecond       float64   `json:"mb_per_second,omitempty"`
	Redeliveries      int       `json:"redeliveries,omitempty"`         // consume limit, over all rounds: messages delivered again
	SlowConsumer      int       `json:"slow_consumer_errors,omitempty"` // consume limit, over all rounds: "slow consumer, messages dropped" errors
}

// RunResult is one jetlake process; in the report, the round with the
// median limit ratio among the rounds that succeeded, with the figures of
// every round in Rounds.
type RunResult struct {
	Name         string `json:"name"`
	Round        int    `json:"round,omitempty"`
	Format       string `json:"format"`
	Compression  string `json:"compression,omitempty"`
	TypedColumns int    `json:"typed_columns,omitempty"`
	Skipped      bool   `json:"skipped,omitempty"`

	Seconds           float64        `json:"seconds,omitempty"` // wall time of the process
	MessagesPerSecond float64        `json:"messages_per_second,omitempty"`
	MBPerSecond       float64        `json:"mb_per_second,omitempty"` // written: object bytes / wall time
	Objects           int            `json:"objects,omitempty"`
	Bytes             int64          `json:"bytes,omitempty"`
	Extensions        map[string]int `json:"extensions,omitempty"`
	OtherObjects      int            `json:"other_objects,omitempty"` // under _jetlake/
	PeakRSSBytes      int64          `json:"peak_rss_bytes,omitempty"`
	CPUSeconds        float64        `json:"cpu_seconds,omitempty"` // user + system
	UserSeconds       float64        `json:"user_seconds,omitempty"`
	Ratio             float64        `json:"limit_ratio,omitempty"`              // limit time / wall time
	RatioSameObjects  float64        `json:"same_objects_limit_ratio,omitempty"` // same-objects limit time / wall time
	Reasons           map[string]int `json:"rotation_reasons,omitempty"`
	Redeliveries      int            `json:"redeliveries,omitempty"`
	SlowConsumer      int            `json:"slow_consumer_errors,omitempty"` // "nats: slow consumer, messages dropped" in its output
	Warnings          int            `json:"warnings,omitempty"`
	Columns           []string       `json:"parquet_columns,omitempty"`

	Rounds []RoundFigures `json:"rounds,omitempty"`
	Note   string         `json:"note,omitempty"`
	Error  string         `json:"error,omitempty"`

	cut bool // ended by the time budget
}

// RoundFigures are the main figures of one round of a run.
type RoundFigures struct {
	Round            int     `json:"round"`
	Seconds          float64 `json:"seconds"`
	CPUSeconds       float64 `json:"cpu_seconds"`
	PeakRSSBytes     int64   `json:"peak_rss_bytes"`
	Ratio            float64 `json:"limit_ratio"`
	RatioSameObjects float64 `json:"same_objects_limit_ratio,omitempty"`
	Redeliveries     int     `json:"redeliveries,omitempty"`
	SlowConsumer     int     `json:"slow_consumer_errors,omitempty"`
	Error            string  `json:"error,omitempty"`
}

// Failures counts the measurements that failed or were cut by the time
// budget; runs that validate rejects do not count.
func (r *Report) Failures() int {
	n := 0
	if r.Compaction != nil && r.Compaction.Error != "" {
		n++
	}
	for _, w := range r.Workloads {
		if w.Error != "" {
			n++
		}
		for _, run := range w.Runs {
			if run.Error != "" || run.Skipped && !strings.HasPrefix(run.Note, "jetlake validate rejects") {
				n++
			}
		}
	}
	return n
}

// Markdown renders the report as Markdown tables.
func (r *Report) Markdown() string {
	var b strings.Builder
	s := r.Settings
	fmt.Fprintf(&b, "## jetlake-bench\n\n")
	fmt.Fprintf(&b, "jetlake %s, nats-server %s, MinIO %s, %s %s/%s, %d CPUs. ",
		r.Machine.Jetlake, r.Machine.NATSServer, r.Machine.MinIO, r.Machine.GoVersion, r.Machine.OS, r.Machine.Arch, r.Machine.CPUs)
	fmt.Fprintf(&b, "Rotation: max_file_size %s, max_messages_per_file %d, max_file_age %s, max_buffered_bytes %s; upload_concurrency %d. ",
		fmtMiB(s.MaxFileSize), s.MaxMessagesPerFile, time.Duration(s.MaxFileAgeSeconds*float64(time.Second)), fmtMiB(s.MaxBufferedBytes), s.UploadConcurrency)
	fmt.Fprintf(&b, "MB = 10^6 bytes, MiB = 2^20. Total time: %s.\n", fmtSeconds(r.Seconds))
	if r.Rounds > 1 {
		fmt.Fprintf(&b, "\nEvery limit and run was measured in %d rounds, interleaved; a row shows the median round "+
			"(by time for the limits, by limit / jetlake for the runs), with the spread of all rounds in brackets and notes.\n", r.Rounds)
	}

	for _, w := range r.Workloads {
		fmt.Fprintf(&b, "\n### %s: %s messages over %s subjects (%.0f B of JSON each, group_by %s)\n\n",
			w.Name, fmtInt(int64(w.Messages)), fmtInt(int64(w.Subjects)), w.PayloadBytes, w.GroupBy)
		if w.PrefillSeconds > 0 {
			fmt.Fprintf(&b, "Pre-fill: %s (%s msg/s); the stream holds %s, the uncompressed json_lines output %s.\n\n",
				fmtSeconds(w.PrefillSeconds), fmtInt(int64(float64(w.Messages)/w.PrefillSeconds)), fmtMB(w.StreamBytes), fmtMB(w.JSONLinesBytes))
		}
		if w.Error != "" {
			fmt.Fprintf(&b, "**%s**\n\n", w.Error)
		}
		if w.ConsumeLimit != nil || w.UploadLimit != nil {
			b.WriteString("| baseline | time | throughput |\n| --- | ---: | ---: |\n")
			if l := w.ConsumeLimit; l != nil {
				var extra string
				if l.Redeliveries > 0 || l.SlowConsumer > 0 {
					extra = fmt.Sprintf(" (over all rounds: %s, %s)", count(l.Redeliveries, "redelivery", "redeliveries"),
						count(l.SlowConsumer, "slow consumer error", "slow consumer errors"))
				}
				fmt.Fprintf(&b, "| consume limit: durable pull consumer (Consume), batches of %d, acks every message%s | %s%s | %s msg/s |\n",
					pullBatch, extra, fmtSeconds(l.Seconds), spread(l.RoundSeconds), fmtInt(int64(l.MessagesPerSecond)))
			}
			if l := w.UploadLimit; l != nil {
				fmt.Fprintf(&b, "| upload limit: PutObject ×%d, %s of %s, %s | %s%s | %.1f MB/s |\n",
					s.UploadConcurrency, count(l.Objects, "object", "objects"), fmtBytes(l.ObjectBytes), fmtMB(l.Bytes), fmtSeconds(l.Seconds), spread(l.RoundSeconds), l.MBPerSecond)
			}
			if w.LimitSeconds > 0 {
				fmt.Fprintf(&b, "| **limit time** = consume + upload | **%s**%s | %s msg/s |\n",
					fmtSeconds(w.LimitSeconds), spread(w.LimitRounds), fmtInt(int64(float64(w.Messages)/w.LimitSeconds)))
			}
			if l := w.SameObjectsLimit; l != nil {
				fmt.Fprintf(&b, "| upload limit with json_lines' objects: PutObject ×%d, %s objects of %s | %s%s | %.1f MB/s, %s objects/s |\n",
					s.UploadConcurrency, fmtInt(int64(l.Objects)), fmtBytes(l.ObjectBytes), fmtSeconds(l.Seconds), spread(l.RoundSeconds), l.MBPerSecond,
					fmtInt(int64(float64(l.Objects)/l.Seconds)))
				fmt.Fprintf(&b, "| limit time with json_lines' objects = consume + that upload | %s | %s msg/s |\n",
					fmtSeconds(w.SameObjectsLimitSeconds), fmtInt(int64(float64(w.Messages)/w.SameObjectsLimitSeconds)))
			}
			b.WriteString("\n")
		}
		if len(w.Runs) == 0 {
			continue
		}
		same := w.SameObjectsLimit != nil
		b.WriteString("| jetlake run | wall | msg/s | MB/s written | written | objects | peak RSS | CPU (user+sys) | limit / jetlake |")
		if same {
			b.WriteString(" same-objects limit / jetlake |")
		}
		b.WriteString(" notes |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
		if same {
			b.WriteString(" ---: |")
		}
		b.WriteString(" --- |\n")
		for _, run := range w.Runs {
			note := run.Note
			if run.Error != "" {
				note = join("**failed: "+run.Error+"**", note)
			}
			if len(run.Reasons) > 0 {
				note = join("rotation: "+reasonList(run.Reasons), note)
			}
			if len(run.Rounds) > 1 {
				var secs, ratios, odd []string
				for _, f := range run.Rounds {
					if f.Error != "" {
						secs, ratios = append(secs, "failed"), append(ratios, "–")
						continue
					}
					secs = append(secs, strconv.FormatFloat(f.Seconds, 'f', 1, 64))
					ratios = append(ratios, fmtRatio(f.Ratio))
					if f.Round != run.Round && (f.Redeliveries > 0 || f.SlowConsumer > 0) {
						odd = append(odd, fmt.Sprintf("round %d: %s, %s", f.Round, count(f.Redeliveries, "redelivery", "redeliveries"),
							count(f.SlowConsumer, "slow consumer error", "slow consumer errors")))
					}
				}
				note = join(fmt.Sprintf("rounds: %s s, ratio %s", strings.Join(secs, " / "), strings.Join(ratios, " / ")), join(note, strings.Join(odd, "; ")))
			}
			if run.Skipped || run.Seconds == 0 {
				fmt.Fprintf(&b, "| %s | – | – | – | – | – | – | – | – |", run.Name)
				if same {
					b.WriteString(" – |")
				}
				fmt.Fprintf(&b, " %s |\n", mdEscape(note))
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %.1f | %s | %s | %s | %s | %s |",
				run.Name, fmtSeconds(run.Seconds), fmtInt(int64(run.MessagesPerSecond)), run.MBPerSecond, fmtMB(run.Bytes),
				fmtInt(int64(run.Objects)), fmtMiB(run.PeakRSSBytes), fmtSeconds(run.CPUSeconds), fmtRatio(run.Ratio))
			if same {
				fmt.Fprintf(&b, " %s |", fmtRatio(run.RatioSameObjects))
			}
			fmt.Fprintf(&b, " %s |\n", mdEscape(note))
		}
	}
	b.WriteString("\nlimit / jetlake above 1 means jetlake beat reading everything first and uploading it after (it overlaps the two).\n")
	if c := r.Compaction; c != nil {
		fmt.Fprintf(&b, "\n### Iceberg compaction: %s small data files (%s) over %d partitions\n\n", fmtInt(int64(c.SmallFiles)), fmtMB(c.Bytes), c.Partitions)
		if c.Error != "" {
			fmt.Fprintf(&b, "**%s**\n\n", c.Error)
		}
		if c.Seconds > 0 && c.LimitSeconds > 0 {
			b.WriteString("| | time | throughput | CPU (user+sys) | limit / jetlake |\n| --- | ---: | ---: | ---: | ---: |\n")
			fmt.Fprintf(&b, "| limit: GetObject every small file, PutObject each partition's bytes once, ×%d | %s | %.1f MB/s | | |\n",
				s.UploadConcurrency, fmtSeconds(c.LimitSeconds), c.LimitMBPerSecond)
			fmt.Fprintf(&b, "| jetlake compact: %s files after | %s | %.1f MB/s | %s | %s |\n",
				fmtInt(int64(c.FilesAfter)), fmtSeconds(c.Seconds), c.MBPerSecond, fmtSeconds(c.CPUSeconds), fmtRatio(c.Ratio))
		}
	}
	return b.String()
}

// spread formats the range of several rounds' times: " (5.1–6.0)".
func spread(xs []float64) string {
	if len(xs) < 2 {
		return ""
	}
	return fmt.Sprintf(" (%.2f–%.2f)", slices.Min(xs), slices.Max(xs))
}

// count writes n with the singular or plural noun: "1 object", "2 objects".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmtInt(int64(n)) + " " + many
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func fmtRatio(r float64) string {
	if r == 0 {
		return "–"
	}
	return strconv.FormatFloat(r, 'f', 2, 64)
}

func fmtSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return strconv.FormatFloat(s, 'f', 2, 64) + " s"
}

func fmtDur(d time.Duration) string { return fmtSeconds(d.Seconds()) }

// fmtInt writes n with thousands separators: 1,000,000.
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func fmtMB(n int64) string {
	return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " MB"
}

func fmtMiB(n int64) string {
	v := float64(n) / (1 << 20)
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10) + " MiB"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " MiB"
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}
