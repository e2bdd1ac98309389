// Package metrics holds the Prometheus metrics of every connector of a
// process.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus metrics of every connector of a process.
// Labels are connector and stream, never subject: subjects are unbounded.
// The zero value is not usable; call New.
type Metrics struct {
	Received      *prometheus.CounterVec
	Redelivered   *prometheus.CounterVec
	Acked         *prometheus.CounterVec
	Objects       *prometheus.CounterVec
	Bytes         *prometheus.CounterVec
	UploadSeconds *prometheus.HistogramVec
	ObjectBytes   *prometheus.HistogramVec
	UploadErrors  *prometheus.CounterVec
	Lost          *prometheus.CounterVec
	Rejected      *prometheus.CounterVec
	Untrusted     *prometheus.CounterVec
	// EventTimeFallback counts messages whose path took the JetStream
	// timestamp because they had no usable event time.
	EventTimeFallback *prometheus.CounterVec

	ConsumerRebuilds *prometheus.CounterVec

	BufferedMessages *prometheus.GaugeVec
	BufferedBytes    *prometheus.GaugeVec
	BufferedPeak     *prometheus.GaugeVec
	OldestBuffered   *prometheus.GaugeVec
	OpenBuffers      *prometheus.GaugeVec
	// OpenDirectories counts the directories max_open_directories caps.
	OpenDirectories *prometheus.GaugeVec
	Pending         *prometheus.GaugeVec
	AckPending      *prometheus.GaugeVec
	Freshness       *prometheus.GaugeVec

	// Iceberg tables, by connector and table.
	Commits        *prometheus.CounterVec
	CommitSeconds  *prometheus.HistogramVec
	CommitFiles    *prometheus.HistogramVec
	LastCommit     *prometheus.GaugeVec
	TableSnapshots *prometheus.GaugeVec
	Expired        *prometheus.CounterVec
	CompactedFiles *prometheus.CounterVec
	CompactedBytes *prometheus.CounterVec
	DataFiles      *prometheus.GaugeVec
	SmallFiles     *prometheus.GaugeVec
	Compactable    *prometheus.GaugeVec
	OldestClosed   *prometheus.GaugeVec
	MetadataBytes  *prometheus.GaugeVec
	Orphans        *prometheus.CounterVec

	// Partitioned streams, by connector and stream.
	PartitionsHeld    *prometheus.GaugeVec
	PartitionsStalled *prometheus.GaugeVec
	LeaseRenewals     *prometheus.CounterVec
	Handovers         *prometheus.CounterVec
	HandoverSeconds   *prometheus.HistogramVec
}

// New creates the metrics and registers them with reg; a nil reg
// keeps them unregistered.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Received:    counter("messages_received_total", "Messages delivered to jetlake, redeliveries included.", cs...),
		Redelivered: counter("messages_redelivered_total", "Messages delivered more than once.", cs...),
		Acked:       counter("messages_acked_total", "Messages acked after the object holding them was stored.", cs...),
		Objects:     counter("objects_written_total", "Data objects written, by rotation reason.", "connector", "stream", "reason"),
		Bytes:       counter("bytes_written_total", "Bytes of data objects written, by rotation reason.", "connector", "stream", "reason"),
		UploadSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "jetlake", Name: "upload_duration_seconds", Help: "Time to store an object, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}, cs),
		ObjectBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "jetlake", Name: "object_size_bytes", Help: "Size of the data objects written.",
			Buckets: prometheus.ExponentialBuckets(1024, 4, 11),
		}, cs),
		UploadErrors: counter("upload_errors_total", "Failed attempts to store an object or intent, by kind.", "connector", "stream", "kind"),
		Lost:         counter("messages_lost_total", "Messages recorded in loss markers, by reason.", "connector", "stream", "reason"),
		Rejected:     counter("messages_rejected_total", "Messages written to rejected objects, by reason.", "connector", "stream", "reason"),
		Untrusted: counter("state_untrusted_total",
			"Values jetlake read back and did not believe (an export record claiming sequences the stream never had, or that neither the consumer's ack floor nor the lake shows exported; an intent jetlake could not have written), by kind.", "connector", "kind"),
		EventTimeFallback: counter("event_time_fallback_total",
			"Messages without a usable event time whose path took the JetStream timestamp (time_fallback = \"ingest\").", cs...),

		BufferedMessages: gauge("buffered_messages", "Messages held in buffers and uploads, not yet acked.", cs...),
		BufferedBytes:    gauge("buffered_bytes", "Bytes held in open buffers and uploads.", "connector"),
		BufferedPeak: gauge("buffered_bytes_peak",
			"Most bytes held at once in open buffers, uploads and delivered messages awaiting their acks, since the connector started.", "connector"),
		OldestBuffered: gauge("oldest_buffered_age_seconds", "Age of the oldest open buffer.", "connector"),
		OpenBuffers: gauge("open_buffers",
			"Open buffers: one per directory (and subject, with group_by subject) receiving messages; partitions by payload fields or headers open one per distinct value.", "connector"),
		OpenDirectories: gauge("open_directories",
			"Directories counted against max_open_directories (written to within max_file_age), when paths depend on the messages' content or the connector writes a table.", "connector"),
		Pending:    gauge("consumer_pending_messages", "Messages in the stream not yet delivered to the consumer.", cs...),
		AckPending: gauge("consumer_ack_pending_messages", "Messages delivered to the consumer and not yet acked.", cs...),
		Freshness:  gauge("freshness_seconds", "Now minus the timestamp of the newest exported message.", cs...),

		Commits: counter("iceberg_commits_total", "Commits to an Iceberg table, by outcome: committed or failed.", "connector", "table", "outcome"),
		CommitSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "jetlake", Name: "iceberg_commit_duration_seconds", Help: "Time to commit to an Iceberg table, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}, []string{"connector", "table"}),
		CommitFiles: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "jetlake", Name: "iceberg_commit_files", Help: "Data files added by a commit to an Iceberg table.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9),
		}, []string{"connector", "table"}),
		LastCommit:     gauge("iceberg_last_commit_timestamp_seconds", "Unix time of the last commit to an Iceberg table.", "connector", "table"),
		TableSnapshots: gauge("iceberg_table_snapshots", "Snapshots in an Iceberg table's metadata after the last commit.", "connector", "table"),
		CompactedFiles: counter("iceberg_compacted_files_total", "Small data files of an Iceberg table merged by compaction.", "connector", "table"),
		CompactedBytes: counter("iceberg_compacted_bytes_total", "Bytes of the small data files of an Iceberg table merged by compaction.", "connector", "table"),
		DataFiles:      gauge("iceberg_table_data_files", "Data files in an Iceberg table's current snapshot, after the last compaction pass.", "connector", "table"),
		SmallFiles:     gauge("iceberg_table_small_files", "Data files under half of max_file_size in an Iceberg table's current snapshot, after the last compaction pass.", "connector", "table"),
		Compactable:    gauge("iceberg_table_compactable_files", "Small data files of closed partitions an Iceberg table's next compaction passes will merge.", "connector", "table"),
		OldestClosed:   gauge("iceberg_oldest_uncompacted_partition_seconds", "How long the oldest closed partition with small files to merge has been closed.", "connector", "table"),
		MetadataBytes:  gauge("iceberg_metadata_bytes", "Size of an Iceberg table's current metadata file, after the last compaction pass.", "connector", "table"),
		Orphans:        counter("iceberg_orphan_files_removed_total", "Data files of an Iceberg table in no snapshot, intent or commit plan, removed once an hour old.", "connector", "table"),
		Expired:        counter("iceberg_snapshots_expired_total", "Snapshots of an Iceberg table expired (beyond keep_snapshots and older than snapshot_retention).", "connector", "table"),

		ConsumerRebuilds: counter("consumer_rebuilds_total", "Consumers rebuilt from the export record, by reason: missing (created again), skips (it would not deliver sequences the record lacks, and was moved back) or storage (made again where consumer_storage says).", "connector", "stream", "reason"),

		PartitionsHeld:    gauge("partitions_held", "Partitions of a partitioned stream whose lease this instance holds.", cs...),
		PartitionsStalled: gauge("partitions_stalled", "Partitions this instance holds that can not pull: their consumer is missing or does not answer. /readyz fails while any is.", cs...),
		LeaseRenewals:     counter("lease_renewals_total", "Renewals of partition leases, by outcome: renewed, lost (another holds it) or failed (NATS did not answer).", "connector", "stream", "outcome"),
		Handovers:         counter("handovers_total", "Partitions this instance gave up: handed over (drained, then released), lost (the lease expired) or left on shutdown.", "connector", "stream", "kind"),
		HandoverSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "jetlake", Name: "handover_duration_seconds", Help: "Time from stopping the pulls of a partition to releasing its lease: its messages uploaded and acked.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}, cs),
	}
	if reg != nil {
		for _, c := range m.collectors() {
			reg.MustRegister(c)
		}
	}
	return m
}

// cs are the labels of the metrics of a connector's stream.
var cs = []string{"connector", "stream"}

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "jetlake", Name: name, Help: help}, labels)
}

func gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "jetlake", Name: name, Help: help}, labels)
}

// collectors lists every metric, for registration.
func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Received, m.Redelivered, m.Acked, m.Objects, m.Bytes, m.UploadSeconds,
		m.ObjectBytes, m.UploadErrors, m.Lost, m.Rejected, m.Untrusted, m.ConsumerRebuilds, m.BufferedMessages, m.BufferedBytes, m.BufferedPeak, m.OldestBuffered, m.OpenBuffers, m.OpenDirectories, m.EventTimeFallback,
		m.Pending, m.AckPending, m.Freshness, m.Commits, m.CommitSeconds, m.CommitFiles, m.LastCommit, m.TableSnapshots, m.Expired, m.CompactedFiles, m.CompactedBytes, m.DataFiles, m.SmallFiles, m.Compactable, m.OldestClosed, m.MetadataBytes, m.Orphans,
		m.PartitionsHeld, m.PartitionsStalled, m.LeaseRenewals, m.Handovers, m.HandoverSeconds}
}
