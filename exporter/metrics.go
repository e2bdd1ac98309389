package exporter

import (
	"context"
	"errors"
	"net"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/exporter/objstore"
)

// Metrics are the Prometheus metrics of every connector of a process.
// Labels are connector and stream, never subject: subjects are unbounded.
// The zero value is not usable; call NewMetrics.
type Metrics struct {
	received      *prometheus.CounterVec
	redelivered   *prometheus.CounterVec
	acked         *prometheus.CounterVec
	objects       *prometheus.CounterVec
	bytes         *prometheus.CounterVec
	uploadSeconds *prometheus.HistogramVec
	objectBytes   *prometheus.HistogramVec
	uploadErrors  *prometheus.CounterVec
	lost          *prometheus.CounterVec
	rejected      *prometheus.CounterVec
	untrusted     *prometheus.CounterVec

	consumerRebuilds *prometheus.CounterVec

	bufferedMessages *prometheus.GaugeVec
	bufferedBytes    *prometheus.GaugeVec
	bufferedPeak     *prometheus.GaugeVec
	oldestBuffered   *prometheus.GaugeVec
	pending          *prometheus.GaugeVec
	ackPending       *prometheus.GaugeVec
	freshness        *prometheus.GaugeVec

	// Iceberg tables, by connector and table.
	commits        *prometheus.CounterVec
	commitSeconds  *prometheus.HistogramVec
	commitFiles    *prometheus.HistogramVec
	lastCommit     *prometheus.GaugeVec
	tableSnapshots *prometheus.GaugeVec
	expired        *prometheus.CounterVec
	compactedFiles *prometheus.CounterVec
	compactedBytes *prometheus.CounterVec
	dataFiles      *prometheus.GaugeVec
	smallFiles     *prometheus.GaugeVec
	compactable    *prometheus.GaugeVec
	oldestClosed   *prometheus.GaugeVec
	metadataBytes  *prometheus.GaugeVec
	orphans        *prometheus.CounterVec

	// Partitioned streams, by connector and stream.
	partitionsHeld    *prometheus.GaugeVec
	partitionsStalled *prometheus.GaugeVec
	leaseRenewals     *prometheus.CounterVec
	handovers         *prometheus.CounterVec
	handoverSeconds   *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg; a nil reg
// keeps them unregistered.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	cs := []string{"connector", "stream"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "jetlake", Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "jetlake", Name: name, Help: help}, labels)
	}
	m := &Metrics{
		received:    counter("messages_received_total", "Messages delivered to jetlake, redeliveries included.", cs...),
		redelivered: counter("messages_redelivered_total", "Messages delivered more than once.", cs...),
		acked:       counter("messages_acked_total", "Messages acked after the object holding them was stored.", cs...),
		objects:     counter("objects_written_total", "Data objects written, by rotation reason.", "connector", "stream", "reason"),
		bytes:       counter("bytes_written_total", "Bytes of data objects written, by rotation reason.", "connector", "stream", "reason"),
		uploadSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "jetlake", Name: "upload_duration_seconds", Help: "Time to store an object, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}, cs),
		objectBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "jetlake", Name: "object_size_bytes", Help: "Size of the data objects written.",
			Buckets: prometheus.ExponentialBuckets(1024, 4, 11),
		}, cs),
		uploadErrors: counter("upload_errors_total", "Failed attempts to store an object or intent, by kind.", "connector", "stream", "kind"),
		lost:         counter("messages_lost_total", "Messages recorded in loss markers, by reason.", "connector", "stream", "reason"),
		rejected:     counter("messages_rejected_total", "Messages written to rejected objects, by reason.", "connector", "stream", "reason"),
		untrusted: counter("state_untrusted_total",
			"Values jetlake read back and did not believe (an export record claiming sequences the stream never had, an intent jetlake could not have written), by kind.", "connector", "kind"),

		bufferedMessages: gauge("buffered_messages", "Messages held in buffers and uploads, not yet acked.", cs...),
		bufferedBytes:    gauge("buffered_bytes", "Bytes held in open buffers and uploads.", "connector"),
		bufferedPeak: gauge("buffered_bytes_peak",
			"Most bytes held at once in open buffers, uploads and delivered messages awaiting their acks, since the connector started.", "connector"),
		oldestBuffered: gauge("oldest_buffered_age_seconds", "Age of the oldest open buffer.", "connector"),
		pending:        gauge("consumer_pending_messages", "Messages in the stream not yet delivered to the consumer.", cs...),
		ackPending:     gauge("consumer_ack_pending_messages", "Messages delivered to the consumer and not yet acked.", cs...),
		freshness:      gauge("freshness_seconds", "Now minus the timestamp of the newest exported message.", cs...),

		commits: counter("iceberg_commits_total", "Commits to an Iceberg table, by outcome: committed or failed.", "connector", "table", "outcome"),
		commitSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "jetlake", Name: "iceberg_commit_duration_seconds", Help: "Time to commit to an Iceberg table, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}, []string{"connector", "table"}),
		commitFiles: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "jetlake", Name: "iceberg_commit_files", Help: "Data files added by a commit to an Iceberg table.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9),
		}, []string{"connector", "table"}),
		lastCommit:     gauge("iceberg_last_commit_timestamp_seconds", "Unix time of the last commit to an Iceberg table.", "connector", "table"),
		tableSnapshots: gauge("iceberg_table_snapshots", "Snapshots in an Iceberg table's metadata after the last commit.", "connector", "table"),
		compactedFiles: counter("iceberg_compacted_files_total", "Small data files of an Iceberg table merged by compaction.", "connector", "table"),
		compactedBytes: counter("iceberg_compacted_bytes_total", "Bytes of the small data files of an Iceberg table merged by compaction.", "connector", "table"),
		dataFiles:      gauge("iceberg_table_data_files", "Data files in an Iceberg table's current snapshot, after the last compaction pass.", "connector", "table"),
		smallFiles:     gauge("iceberg_table_small_files", "Data files under half of max_file_size in an Iceberg table's current snapshot, after the last compaction pass.", "connector", "table"),
		compactable:    gauge("iceberg_table_compactable_files", "Small data files of closed partitions an Iceberg table's next compaction passes will merge.", "connector", "table"),
		oldestClosed:   gauge("iceberg_oldest_uncompacted_partition_seconds", "How long the oldest closed partition with small files to merge has been closed.", "connector", "table"),
		metadataBytes:  gauge("iceberg_metadata_bytes", "Size of an Iceberg table's current metadata file, after the last compaction pass.", "connector", "table"),
		orphans:        counter("iceberg_orphan_files_removed_total", "Data files of an Iceberg table in no snapshot, intent or commit plan, removed once an hour old.", "connector", "table"),
		expired:        counter("iceberg_snapshots_expired_total", "Snapshots of an Iceberg table expired (beyond keep_snapshots and older than snapshot_retention).", "connector", "table"),

		consumerRebuilds: counter("consumer_rebuilds_total", "Consumers rebuilt from the export record, by reason: missing (created again), skips (it would not deliver sequences the record lacks, and was moved back) or storage (made again where consumer_storage says).", "connector", "stream", "reason"),

		partitionsHeld:    gauge("partitions_held", "Partitions of a partitioned stream whose lease this instance holds.", cs...),
		partitionsStalled: gauge("partitions_stalled", "Partitions this instance holds that can not pull: their consumer is missing or does not answer. /readyz fails while any is.", cs...),
		leaseRenewals:     counter("lease_renewals_total", "Renewals of partition leases, by outcome: renewed, lost (another holds it) or failed (NATS did not answer).", "connector", "stream", "outcome"),
		handovers:         counter("handovers_total", "Partitions this instance gave up: handed over (drained, then released), lost (the lease expired) or left on shutdown.", "connector", "stream", "kind"),
		handoverSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "jetlake", Name: "handover_duration_seconds", Help: "Time from stopping the pulls of a partition to releasing its lease: its messages uploaded and acked.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}, cs),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.received, m.redelivered, m.acked, m.objects, m.bytes, m.uploadSeconds,
			m.objectBytes, m.uploadErrors, m.lost, m.rejected, m.untrusted, m.consumerRebuilds, m.bufferedMessages, m.bufferedBytes, m.bufferedPeak, m.oldestBuffered,
			m.pending, m.ackPending, m.freshness, m.commits, m.commitSeconds, m.commitFiles, m.lastCommit, m.tableSnapshots, m.expired, m.compactedFiles, m.compactedBytes, m.dataFiles, m.smallFiles, m.compactable, m.oldestClosed, m.metadataBytes, m.orphans,
			m.partitionsHeld, m.partitionsStalled, m.leaseRenewals, m.handovers, m.handoverSeconds} {
			reg.MustRegister(c)
		}
	}
	return m
}

// errorKind classifies a failed store or state operation for the
// upload_errors_total metric.
func errorKind(err error) string {
	var ce *objstore.CollisionError
	var er minio.ErrorResponse
	var ne net.Error
	switch {
	case errors.Is(err, ErrAbandoned):
		return "abandoned"
	case errors.As(err, &ce):
		return "collision"
	case objstore.IsPermanent(err):
		return "permanent"
	case errors.As(err, &er) && (er.Code == "SlowDown" || er.StatusCode == 503):
		return "throttled"
	case errors.As(err, &er) && er.StatusCode >= 500:
		return "server"
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &ne), strings.Contains(err.Error(), "connection refused"):
		return "network"
	}
	return "other"
}
