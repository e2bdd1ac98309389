package main

import (
	"fmt"
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
	// ScaleOut measures instances sharing a partitioned stream; nil when
	// not measured.
	ScaleOut *ScaleOutResult `json:"scale_out,omitempty"`
	// Cardinality measures partitions by a field of many distinct values
	// within a memory budget; nil when not measured.
	Cardinality *CardinalityResult `json:"cardinality,omitempty"`
	// Restore measures jetlake restore against a plain publisher; nil
	// when not measured.
	Restore *RestoreResult `json:"restore,omitempty"`
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
	MaxAckPending      int     `json:"max_ack_pending,omitempty"` // 0: derived
	ConsumerStorage    string  `json:"consumer_storage,omitempty"`
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
	// AckNoneRead reads the stream as the consume limit does with a
	// consumer that takes no acks (AckPolicy None): what a cursor that
	// leaves the server no pending set and no ack messages would cost it.
	AckNoneRead *Limit `json:"ack_none_read,omitempty"`
	UploadLimit *Limit `json:"upload_limit,omitempty"`
	// LimitSeconds is consume limit + upload limit (the median round).
	LimitSeconds float64   `json:"limit_seconds"`
	LimitRounds  []float64 `json:"limit_rounds,omitempty"`
	// SameObjectsLimit uploads as many objects of the mean size as the
	// json_lines run wrote, when that is many more than UploadLimit's;
	// over the high-cardinality workload always, there also without a
	// json_lines run: then an object per subject. Its ObjectsPerSecond is
	// MinIO's small-PUT rate that PutRateRatio compares runs with.
	SameObjectsLimit        *Limit  `json:"same_objects_limit,omitempty"`
	SameObjectsLimitSeconds float64 `json:"same_objects_limit_seconds,omitempty"`
	// SameObjectsFrom says what SameObjectsLimit's object size was taken
	// from: "json_lines' objects" or "an object per subject".
	SameObjectsFrom string `json:"same_objects_from,omitempty"`

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
	ObjectsPerSecond  float64   `json:"objects_per_second,omitempty"`   // upload limits
	InFlight          int       `json:"in_flight,omitempty"`            // upload limits: PutObject calls at once
	Redeliveries      int       `json:"redeliveries,omitempty"`         // consume limit, over all rounds: messages delivered again
	SlowConsumer      int       `json:"slow_consumer_errors,omitempty"` // consume limit, over all rounds: "slow consumer, messages dropped" errors
	NATSCPUSeconds    float64   `json:"nats_cpu_seconds,omitempty"`     // nats-server's CPU (user+sys) meanwhile
	MinIOCPUSeconds   float64   `json:"minio_cpu_seconds,omitempty"`    // MinIO's CPU (user+sys) meanwhile
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
	Iceberg      bool   `json:"iceberg,omitempty"` // writes an Iceberg table
	Skipped      bool   `json:"skipped,omitempty"`

	Seconds           float64        `json:"seconds,omitempty"` // wall time of the process
	MessagesPerSecond float64        `json:"messages_per_second,omitempty"`
	MBPerSecond       float64        `json:"mb_per_second,omitempty"` // written: object bytes / wall time
	Objects           int            `json:"objects,omitempty"`       // data objects; of an Iceberg run, the data files under the table's data/
	ObjectsPerSecond  float64        `json:"objects_per_second,omitempty"`
	Bytes             int64          `json:"bytes,omitempty"`
	Extensions        map[string]int `json:"extensions,omitempty"`
	OtherObjects      int            `json:"other_objects,omitempty"`    // under _jetlake/
	MetadataObjects   int            `json:"metadata_objects,omitempty"` // an Iceberg table's, outside data/
	Commits           int            `json:"iceberg_commits,omitempty"`
	PeakRSSBytes      int64          `json:"peak_rss_bytes,omitempty"`
	CPUSeconds        float64        `json:"cpu_seconds,omitempty"` // user + system
	UserSeconds       float64        `json:"user_seconds,omitempty"`
	CPUPerMillion     float64        `json:"cpu_per_million,omitempty"` // CPU seconds × 10^6 / messages
	// NATSCPUSeconds and MinIOCPUSeconds are what the servers used while
	// the process ran (user+sys), for the run and whatever else they
	// served meanwhile: nothing else, in the bench.
	NATSCPUSeconds   float64 `json:"nats_cpu_seconds,omitempty"`
	MinIOCPUSeconds  float64 `json:"minio_cpu_seconds,omitempty"`
	Ratio            float64 `json:"limit_ratio,omitempty"`              // limit time / wall time
	RatioSameObjects float64 `json:"same_objects_limit_ratio,omitempty"` // same-objects limit time / wall time
	// PutRateRatio is, over the high-cardinality workload, the run's
	// objects/s over MinIO's PutObject objects/s for objects of the size
	// the workload writes (SameObjectsLimit), in the same round.
	PutRateRatio float64 `json:"put_rate_ratio,omitempty"`
	// IcebergToParquet is, for an Iceberg run, the wall time of the run
	// that writes the same parquet as bare objects over its own, in the
	// same round: its limit ratio over that run's.
	IcebergToParquet float64        `json:"iceberg_to_parquet,omitempty"`
	Reasons          map[string]int `json:"rotation_reasons,omitempty"`
	Redeliveries     int            `json:"redeliveries,omitempty"`
	SlowConsumer     int            `json:"slow_consumer_errors,omitempty"` // "nats: slow consumer, messages dropped" in its output
	Warnings         int            `json:"warnings,omitempty"`
	Columns          []string       `json:"parquet_columns,omitempty"`

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
	CPUPerMillion    float64 `json:"cpu_per_million,omitempty"`
	Ratio            float64 `json:"limit_ratio"`
	RatioSameObjects float64 `json:"same_objects_limit_ratio,omitempty"`
	PutRateRatio     float64 `json:"put_rate_ratio,omitempty"`
	IcebergToParquet float64 `json:"iceberg_to_parquet,omitempty"`
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
	if r.ScaleOut != nil && r.ScaleOut.Error != "" {
		n++
	}
	if r.Cardinality != nil && r.Cardinality.Error != "" {
		n++
	}
	if r.Restore != nil && r.Restore.Error != "" {
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

// Markdown renders the report: the limits of each workload, then one table
// with a row per workload and run, then the compaction measurement.
func (r *Report) Markdown() string {
	var b strings.Builder
	s := r.Settings
	fmt.Fprintf(&b, "## jetlake-bench\n\n")
	fmt.Fprintf(&b, "jetlake %s, nats-server %s, MinIO %s, %s %s/%s, %d CPUs. ",
		r.Machine.Jetlake, r.Machine.NATSServer, r.Machine.MinIO, r.Machine.GoVersion, r.Machine.OS, r.Machine.Arch, r.Machine.CPUs)
	fmt.Fprintf(&b, "Rotation: max_file_size %s, max_messages_per_file %d, max_file_age %s, max_buffered_bytes %s; upload_concurrency %d. ",
		fmtMiB(s.MaxFileSize), s.MaxMessagesPerFile, time.Duration(s.MaxFileAgeSeconds*float64(time.Second)), fmtMiB(s.MaxBufferedBytes), s.UploadConcurrency)
	if s.MaxAckPending > 0 {
		fmt.Fprintf(&b, "max_ack_pending %d. ", s.MaxAckPending)
	}
	if s.ConsumerStorage != "" {
		fmt.Fprintf(&b, "Consumers (jetlake's and the consume limit's) keep their state: %s. ", s.ConsumerStorage)
	}
	fmt.Fprintf(&b, "MB = 10^6 bytes, MiB = 2^20. Total time: %s.\n", fmtSeconds(r.Seconds))
	if r.Rounds > 1 {
		fmt.Fprintf(&b, "\nEvery limit and run was measured in %d rounds, interleaved; a figure is the median round "+
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
		w.limitLines(&b, s)
	}
	r.runTable(&b)
	if c := r.Compaction; c != nil {
		fmt.Fprintf(&b, "\n### Iceberg compaction: %s small data files (%s) over %d partitions\n\n", fmtInt(int64(c.SmallFiles)), fmtMB(c.Bytes), c.Partitions)
		if c.Error != "" {
			fmt.Fprintf(&b, "**%s**\n\n", c.Error)
		}
		if c.Seconds > 0 && c.LimitSeconds > 0 {
			fmt.Fprintf(&b, "- limit: GetObject every small file, PutObject each partition's bytes once, ×%d: %s, %.1f MB/s\n",
				s.UploadConcurrency, fmtSeconds(c.LimitSeconds), c.LimitMBPerSecond)
			fmt.Fprintf(&b, "- jetlake compact: %s files after: %s, %.1f MB/s, CPU (user+sys) %s; limit / jetlake **%s**\n",
				fmtInt(int64(c.FilesAfter)), fmtSeconds(c.Seconds), c.MBPerSecond, fmtSeconds(c.CPUSeconds), fmtRatio(c.Ratio))
		}
	}
	if r.ScaleOut != nil {
		r.ScaleOut.lines(&b)
	}
	if r.Cardinality != nil {
		r.Cardinality.lines(&b)
	}
	if r.Restore != nil {
		r.Restore.lines(&b)
	}
	return b.String()
}

// limitLines writes the limits of a workload, a line each.
func (w *WorkloadResult) limitLines(b *strings.Builder, s Settings) {
	if w.ConsumeLimit == nil && w.UploadLimit == nil {
		return
	}
	if l := w.ConsumeLimit; l != nil {
		var extra string
		if l.Redeliveries > 0 || l.SlowConsumer > 0 {
			extra = fmt.Sprintf(" (over all rounds: %s, %s)", count(l.Redeliveries, "redelivery", "redeliveries"),
				count(l.SlowConsumer, "slow consumer error", "slow consumer errors"))
		}
		fmt.Fprintf(b, "- consume limit: durable pull consumer (Consume), batches of %d, acks every message%s: %s%s, %s msg/s%s\n",
			pullBatch, extra, fmtSeconds(l.Seconds), spread(l.RoundSeconds), fmtInt(int64(l.MessagesPerSecond)), l.serverCPU())
	}
	if l := w.AckNoneRead; l != nil {
		fmt.Fprintf(b, "- ack-none read (for comparison, not in the limit): the same with AckPolicy None, no acks: %s%s, %s msg/s%s\n",
			fmtSeconds(l.Seconds), spread(l.RoundSeconds), fmtInt(int64(l.MessagesPerSecond)), l.serverCPU())
	}
	if l := w.UploadLimit; l != nil {
		fmt.Fprintf(b, "- upload limit: PutObject ×%d, %s of %s, %s: %s%s, %.1f MB/s%s\n",
			inFlight(l, s), count(l.Objects, "object", "objects"), fmtBytes(l.ObjectBytes), fmtMB(l.Bytes),
			fmtSeconds(l.Seconds), spread(l.RoundSeconds), l.MBPerSecond, l.serverCPU())
	}
	if w.LimitSeconds > 0 {
		fmt.Fprintf(b, "- **limit time** = consume + upload: **%s**%s, %s msg/s\n",
			fmtSeconds(w.LimitSeconds), spread(w.LimitRounds), fmtInt(int64(float64(w.Messages)/w.LimitSeconds)))
	}
	if l := w.SameObjectsLimit; l != nil {
		from := w.SameObjectsFrom
		if from == "" {
			from = "json_lines' objects"
		}
		fmt.Fprintf(b, "- small-PUT rate, upload limit with jetlake's objects: PutObject ×%d, %s objects of %s (%s): %s%s, **%s objects/s**, %.1f MB/s%s\n",
			inFlight(l, s), fmtInt(int64(l.Objects)), fmtBytes(l.ObjectBytes), from, fmtSeconds(l.Seconds), spread(l.RoundSeconds),
			fmtInt(int64(limitObjectsPerSecond(l))), l.MBPerSecond, l.serverCPU())
		fmt.Fprintf(b, "- same-objects limit time = consume + that upload: %s, %s msg/s\n",
			fmtSeconds(w.SameObjectsLimitSeconds), fmtInt(int64(float64(w.Messages)/w.SameObjectsLimitSeconds)))
	}
}

// serverCPU says what the servers used during the limit's median round,
// for its line; empty when that was not measured.
func (l *Limit) serverCPU() string {
	if l.NATSCPUSeconds == 0 && l.MinIOCPUSeconds == 0 {
		return ""
	}
	return fmt.Sprintf("; nats-server CPU %s, MinIO CPU %s", fmtSeconds(l.NATSCPUSeconds), fmtSeconds(l.MinIOCPUSeconds))
}

// limitObjectsPerSecond is the objects/s of an upload limit, also of one
// read from a report written before the field was.
func limitObjectsPerSecond(l *Limit) float64 {
	if l.ObjectsPerSecond == 0 && l.Seconds > 0 {
		return float64(l.Objects) / l.Seconds
	}
	return l.ObjectsPerSecond
}

// runTable writes the table of every workload's runs, a row each, and what
// its columns mean.
func (r *Report) runTable(b *strings.Builder) {
	rows := 0
	for _, w := range r.Workloads {
		rows += len(w.Runs)
	}
	if rows == 0 {
		return
	}
	b.WriteString("\n### jetlake runs\n\n")
	b.WriteString("| workload | run | wall s | msg/s | MB/s written | written | objects | peak RSS | CPU s | CPU s / 1M msg " +
		"| nats-server CPU s | nats-server CPU / consume limit's | nats-server CPU / ack-none read's | MinIO CPU s | limit / jetlake | same-objects limit / jetlake | PUT-rate ratio | iceberg / parquet | notes |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, w := range r.Workloads {
		for _, run := range w.Runs {
			note := run.Note
			if run.Error != "" {
				note = join("**failed: "+run.Error+"**", note)
			}
			// A run that did not finish has a wall time and CPU
			// seconds until it stopped, and no other figure.
			finished := run.MessagesPerSecond > 0
			if run.Iceberg && finished {
				note = join(fmt.Sprintf("table: %s data files, %s, %s", fmtInt(int64(run.Objects)),
					count(run.MetadataObjects, "metadata object", "metadata objects"), count(run.Commits, "commit", "commits")), note)
			}
			if len(run.Reasons) > 0 {
				note = join("rotation: "+reasonList(run.Reasons), note)
			}
			note = join(roundsNote(run), note)
			if run.Skipped || run.Seconds == 0 {
				fmt.Fprintf(b, "| %s | %s | – | – | – | – | – | – | – | – | – | – | – | – | – | – | – | – | %s |\n", w.Name, run.Name, mdEscape(note))
				continue
			}
			if !finished {
				fmt.Fprintf(b, "| %s | %s | %.2f | – | – | – | – | %s | %.2f | – | %s | – | – | %s | – | – | – | – | %s |\n",
					w.Name, run.Name, run.Seconds, fmtMiB(run.PeakRSSBytes), run.CPUSeconds,
					fmtServerCPU(run.NATSCPUSeconds), fmtServerCPU(run.MinIOCPUSeconds), mdEscape(note))
				continue
			}
			same, put, ice := "", "", ""
			if w.SameObjectsLimit != nil {
				same = fmtRatio(run.RatioSameObjects)
			}
			if anyPutRate(w) {
				put = fmtRatio(run.PutRateRatio)
			}
			if run.Iceberg {
				ice = fmtRatio(run.IcebergToParquet)
			}
			natsRatio, ackNoneRatio := cpuRatio(run, w.ConsumeLimit), cpuRatio(run, w.AckNoneRead)
			fmt.Fprintf(b, "| %s | %s | %.2f | %s | %.1f | %s | %s | %s | %.2f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				w.Name, run.Name, run.Seconds, fmtInt(int64(run.MessagesPerSecond)), run.MBPerSecond, fmtMB(run.Bytes),
				fmtInt(int64(run.Objects)), fmtMiB(run.PeakRSSBytes), run.CPUSeconds, fmtCPU(cpuPerMillion(run, w.Messages)),
				fmtServerCPU(run.NATSCPUSeconds), natsRatio, ackNoneRatio, fmtServerCPU(run.MinIOCPUSeconds),
				fmtRatio(run.Ratio), same, put, ice, mdEscape(note))
		}
	}
	b.WriteString("\n- **limit / jetlake**: limit time / wall time; above 1 means jetlake beat reading everything first and uploading it after (it overlaps the two).\n")
	b.WriteString("- **same-objects limit / jetlake**: consume time + the upload of jetlake's objects, over wall time.\n")
	b.WriteString("- **PUT-rate ratio** (high-cardinality workload): the run's objects/s over MinIO's small-PUT objects/s of the same round (target ≥ 0.8).\n")
	b.WriteString("- **iceberg / parquet**: the wall time of the plain parquet run over the Iceberg run's, in the same round (target ≥ 0.9).\n")
	b.WriteString("- **CPU s / 1M msg**: CPU seconds (user+sys) × 10^6 / messages.\n")
	b.WriteString("- **nats-server CPU s**, **MinIO CPU s**: what the servers used (user+sys) while the run went on; the limits' lines give theirs.\n")
	b.WriteString("- **nats-server CPU / consume limit's**: the run's nats-server CPU over what the server used while the consume limit read the same stream with a plain consumer of the same storage, acking every message (target ≤ 0.6: jetlake reads a limits stream without acks).\n")
	b.WriteString("- **nats-server CPU / ack-none read's**: the same over the read of the stream with AckPolicy None, no acks (target ≤ 1.2).\n")
}

// cpuRatio is the run's nats-server CPU over what the server used during
// the limit l, as the table shows it; empty when either was not measured.
func cpuRatio(run *RunResult, l *Limit) string {
	if l == nil || l.NATSCPUSeconds <= 0 || run.NATSCPUSeconds <= 0 {
		return ""
	}
	return fmt.Sprintf("%.2f×", run.NATSCPUSeconds/l.NATSCPUSeconds)
}

// anyPutRate reports whether a run of w has a PUT-rate ratio.
func anyPutRate(w *WorkloadResult) bool {
	for _, r := range w.Runs {
		if r.PutRateRatio > 0 {
			return true
		}
	}
	return false
}

// roundsNote lists the figures of every round of a run measured in more
// than one, and what went wrong in a round other than the one shown.
func roundsNote(run *RunResult) string {
	if len(run.Rounds) < 2 {
		return ""
	}
	var secs, ratios, puts, ices, odd []string
	for _, f := range run.Rounds {
		if f.Error != "" {
			secs, ratios, puts, ices = append(secs, "failed"), append(ratios, "–"), append(puts, "–"), append(ices, "–")
			continue
		}
		secs = append(secs, strconv.FormatFloat(f.Seconds, 'f', 1, 64))
		ratios = append(ratios, fmtRatio(f.Ratio))
		puts = append(puts, fmtRatio(f.PutRateRatio))
		ices = append(ices, fmtRatio(f.IcebergToParquet))
		if f.Round != run.Round && (f.Redeliveries > 0 || f.SlowConsumer > 0) {
			odd = append(odd, fmt.Sprintf("round %d: %s, %s", f.Round, count(f.Redeliveries, "redelivery", "redeliveries"),
				count(f.SlowConsumer, "slow consumer error", "slow consumer errors")))
		}
	}
	note := fmt.Sprintf("rounds: %s s, ratio %s", strings.Join(secs, " / "), strings.Join(ratios, " / "))
	if run.PutRateRatio > 0 {
		note += ", PUT-rate ratio " + strings.Join(puts, " / ")
	}
	if run.IcebergToParquet > 0 {
		note += ", iceberg / parquet " + strings.Join(ices, " / ")
	}
	return join(note, strings.Join(odd, "; "))
}

// cpuPerMillion is a run's CPU seconds per million messages, also of a run
// read from a report written before the field was; 0 for a run that did not
// finish.
func cpuPerMillion(r *RunResult, messages int) float64 {
	if r.CPUPerMillion == 0 && r.MessagesPerSecond > 0 && r.CPUSeconds > 0 && messages > 0 {
		return r.CPUSeconds * 1e6 / float64(messages)
	}
	return r.CPUPerMillion
}

// inFlight is the PutObject calls a limit had in flight; reports from
// before the field was written had upload_concurrency.
func inFlight(l *Limit, s Settings) int {
	if l.InFlight > 0 {
		return l.InFlight
	}
	return s.UploadConcurrency
}
