// Package exporter reads JetStream streams through durable pull consumers and
// writes their messages to an object store as rotated objects, acking each
// message only after the object that holds it was stored.
//
// One goroutine, the one running Run, owns every buffer and counter of a
// connector. Pullers hand it messages over a channel; uploaders take sealed
// batches from it and hand back results. The commit path of a batch is
// sealed → uploaded → acked → confirmed; see commit.go.
package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/content"
	"github.com/jetlake/jetlake/internal/failure"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/lease"
	"github.com/jetlake/jetlake/internal/metrics"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/state"
)

// Options tune an Exporter. The zero value runs until the context ends,
// writes to S3 as configured and logs to slog.Default().
type Options struct {
	Logger    *slog.Logger
	UntilIdle bool                 // return once every consumer has nothing pending and everything is acked
	Store     objstore.ObjectStore // nil: S3 from the connector's [s3] settings
	Version   string               // exporter version, written into object metadata
	// MaxObjectSize is the largest object the store accepts in one
	// PutObject; a message that can not fit is poison. Zero means 5 GiB.
	MaxObjectSize int64
	// Metrics receives the exporter's metrics; nil keeps them unexported.
	Metrics *metrics.Metrics
	// ReadyUploadFailure is how long uploads may fail in a row before
	// Ready reports the exporter unready; zero means one minute.
	ReadyUploadFailure time.Duration
	// LogPayloads logs, at debug level, the reason a message was rejected
	// with the bytes of its payload or headers it quotes (a value a typed
	// column refused, a header that held no time). Without it, logs quote
	// none: they may be personal data, and are the publisher's to choose.
	LogPayloads bool
}

// Exporter runs one connector.
type Exporter struct {
	cfg   *config.Connector
	opts  Options
	log   *slog.Logger
	store objstore.ObjectStore
	// formatOptions are the data encoder's options as the connector
	// configures them; a session's encoder may differ (see session).
	formatOptions formats.Options
	// rejEnc writes rejected messages: JSON Lines with metadata and
	// headers, the reason among them.
	rejEnc formats.Encoder
	// content reads what paths take from payloads and headers, for the
	// runner's loop; nil when they take the envelope alone.
	content *content.Reader
	// openSink opens where a Run's data batches land: objects under the
	// path template, or the connector's Iceberg table.
	openSink func(ctx context.Context, sn *session) (sink, error)

	// wrapState, when set, wraps the state bucket: tests use it to stall
	// it.
	wrapState func(state.Store) state.Store
	encoding  sync.Mutex               // held while a parquet batch is encoded
	perms     jsclient.PermissionWatch // ends a Run that NATS refuses a publish or subscription; see permission.go

	m *metrics.Metrics

	// Readiness, read by Ready from other goroutines.
	nc          atomic.Pointer[nats.Conn]
	bound       atomic.Bool            // every consumer is set up and pulling
	done        atomic.Bool            // the last Run ended with Options.UntilIdle's work done
	failingFrom atomic.Int64           // unix nanos of the first upload failure in a row; 0 when uploads succeed
	partitions  atomic.Int64           // of the partitioned entries
	held        atomic.Int64           // partitions whose lease this instance holds
	stalled     atomic.Pointer[string] // why a consumer (or held partition) can not pull; nil when all can
}

// Ready reports whether the exporter is doing its job: connected to NATS,
// every consumer bound, and uploads not failing for longer than
// Options.ReadyUploadFailure. The error says what is wrong. Safe for
// concurrent use.
func (e *Exporter) Ready() error {
	nc := e.nc.Load()
	switch {
	case nc == nil || !nc.IsConnected():
		return fmt.Errorf("connector %s: not connected to NATS", e.cfg.Name)
	case !e.bound.Load():
		return fmt.Errorf("connector %s: consumers not bound yet", e.cfg.Name)
	}
	if why := e.stalled.Load(); why != nil {
		return fmt.Errorf("connector %s: %s", e.cfg.Name, *why)
	}
	if from := e.failingFrom.Load(); from != 0 {
		if d := time.Since(time.Unix(0, from)); d > e.opts.ReadyUploadFailure {
			return fmt.Errorf("connector %s: uploads failing for %s", e.cfg.Name, d.Round(time.Second))
		}
	}
	return nil
}

// uploadFailed and uploadSucceeded track how long uploads fail in a row.
func (e *Exporter) uploadFailed() { e.failingFrom.CompareAndSwap(0, time.Now().UnixNano()) }

func (e *Exporter) uploadSucceeded() { e.failingFrom.Store(0) }

// New returns an exporter for a validated connector. It does no network I/O.
func New(cfg *config.Connector, opts Options) (*Exporter, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	fo := cfg.Output.FormatsOptions()
	// Chunks of compressed output are compressed by the runner's
	// compressors, beside the runner instead of in it.
	fo.DeferCompression = true
	fo.TargetSize = cfg.Rotation.MaxFileSize
	// Data files of an Iceberg table carry the schema's field ids: those of
	// a new table until the table is opened (openTable).
	if cfg.Iceberg != nil {
		fo.FieldIDs = formats.PositionalFieldIDs(formats.Fields(fo))
	}
	if _, err := formats.New(fo); err != nil {
		return nil, fmt.Errorf("connector %s: %w", cfg.Name, err)
	}
	rejEnc, err := formats.New(formats.Options{Format: formats.JSONLines, Metadata: true, Headers: true})
	if err != nil {
		return nil, err
	}
	place, err := content.New(&cfg.Output, cfg.Iceberg != nil && cfg.Iceberg.ReadsPayload())
	if err != nil {
		return nil, fmt.Errorf("connector %s: %w", cfg.Name, err)
	}
	store := opts.Store
	if store == nil {
		s3, err := objstore.NewS3Store(cfg.S3)
		if err != nil {
			return nil, fmt.Errorf("connector %s: %w", cfg.Name, err)
		}
		store = s3
	}
	if opts.MaxObjectSize == 0 {
		opts.MaxObjectSize = 5 << 30
	}
	if opts.ReadyUploadFailure == 0 {
		opts.ReadyUploadFailure = cfg.ReadyUploadFailure
	}
	if opts.ReadyUploadFailure == 0 {
		opts.ReadyUploadFailure = time.Minute
	}
	m := opts.Metrics
	if m == nil {
		m = metrics.New(nil)
	}
	openSink := func(context.Context, *session) (sink, error) {
		return objectSink{cfg: cfg, content: place != nil}, nil
	}
	if cfg.Iceberg != nil {
		openSink = openLakeTable
	}
	return &Exporter{
		openSink:      openSink,
		cfg:           cfg,
		opts:          opts,
		log:           log.With("connector", cfg.Name),
		store:         store,
		formatOptions: fo,
		rejEnc:        rejEnc,
		content:       place,
		m:             m,
	}, nil
}

// bucketChecker is implemented by stores that can check their bucket up
// front.
type bucketChecker interface {
	CheckBucket(ctx context.Context) error
}

// Run connects, makes sure every consumer exists with the right settings and
// exports until ctx ends (or, with Options.UntilIdle, until there is nothing
// left to export). On the way out it stops pulling, seals every buffer and
// uploads and acks what it can within the connector's shutdown timeout; what
// it could not upload stays unacked and JetStream redelivers it.
//
// Run returns nil after a clean stop, ctx ending while it sets up included.
// It returns a *ConfigError when a stream or consumer does not fit, a
// *failure.Permanent when the store or NATS refuses for good (a permissions
// violation among them: a *PermissionError), a
// *CollisionError when another writer's object holds a key, and
// ErrConsumerDeleted when a stream vanishes. A consumer that vanishes is
// created again from the export record.
func (e *Exporter) Run(ctx context.Context) error {
	ctx, unwatch := e.perms.Context(ctx)
	defer unwatch()
	sn, streams, err := e.setUp(ctx)
	if sn != nil && sn.nc != nil {
		defer sn.nc.Close()
	}
	defer e.bound.Store(false)
	if err != nil {
		if denied := jsclient.Denied(ctx); denied != nil {
			return denied
		}
		if ctx.Err() != nil {
			// Stopped while setting up: nothing is held yet.
			e.log.Info("stopped while setting up", "error", err)
			return nil
		}
		return err
	}
	e.bound.Store(true)
	defer sn.sink.close()
	r := newRunner(sn, streams)
	err = r.run(ctx)
	if denied := jsclient.Denied(ctx); denied != nil {
		err = denied // what else failed followed from it
	}
	e.done.Store(err == nil && r.chores.idleDone)
	nc := sn.nc
	if ferr := nc.FlushTimeout(5 * time.Second); ferr != nil && err == nil && !nc.IsClosed() {
		e.log.Warn("flushing acks to NATS failed; unflushed acks are redelivered", "error", ferr)
	}
	return err
}

// Done reports whether the last Run returned because, with
// Options.UntilIdle, every consumer had nothing pending and everything was
// uploaded and acked. A Run stopped by its context before that is not idle:
// a backfill that was interrupted has not exported everything.
func (e *Exporter) Done() bool { return e.done.Load() }

// setUp checks the bucket, connects, opens the state bucket, sets every
// stream up and probes the store, in an order that writes nothing to the
// store before the streams are known to fit. The session it returns, also
// with an error, holds the connection, the caller's to close.
func (e *Exporter) setUp(ctx context.Context) (*session, []*streamWriter, error) {
	if bc, ok := e.store.(bucketChecker); ok {
		err := retry(ctx, e.log, "object store", func(ctx context.Context) error { return bc.CheckBucket(ctx) })
		if err != nil {
			return nil, nil, err
		}
	}
	nc, err := e.connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	e.nc.Store(nc)
	sn, err := newSession(e, nc)
	if err != nil {
		return sn, nil, err
	}
	streams, err := sn.open(ctx)
	return sn, streams, err
}

// open opens what the session works with: the state bucket, the Iceberg
// table, every stream and the leases of partitioned entries; and probes
// the store.
func (e *session) open(ctx context.Context) ([]*streamWriter, error) {
	if err := e.openState(ctx); err != nil {
		return nil, err
	}
	sk, err := e.openSink(ctx, e)
	if err != nil {
		return nil, err
	}
	e.sink = sk
	streams, err := e.setUpStreams(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.openLeases(ctx); err != nil {
		return nil, err
	}
	if err := e.sink.setUpDone(ctx); err != nil {
		return nil, err
	}
	// Probed once the streams are known to fit, so that a run refused for
	// its streams writes nothing to the store.
	if err := e.probe(ctx); err != nil {
		return nil, err
	}
	return streams, nil
}

// openState opens the state bucket, retrying until it answers.
func (e *session) openState(ctx context.Context) error {
	var kv *state.KV
	err := retry(ctx, e.log, "state bucket", func(ctx context.Context) error {
		var err error
		kv, err = state.Open(ctx, e.js, e.cfg.State.Bucket, e.cfg.State.Replicas)
		return err
	})
	if err != nil {
		return err
	}
	e.intents = kv
	e.stateReplicas = kv.Replicas()
	if e.wrapState != nil {
		e.intents = e.wrapState(kv)
	}
	return nil
}

// openLakeTable opens the connector's Iceberg table, retrying while the
// catalog is unreachable; a table that does not fit, a catalog pointing
// elsewhere or a missing folder stop the run.
func openLakeTable(ctx context.Context, e *session) (sink, error) {
	var lt *lakeTable
	err := retry(ctx, e.log, "iceberg catalog", func(ctx context.Context) error {
		t, err := e.openTable(ctx)
		var me *iceberg.MismatchError
		var fh *iceberg.ForeignHostError
		var nf *iceberg.NoCatalogFolderError
		switch {
		case errors.As(err, &me):
			return &failure.Permanent{Code: "IcebergTable", Err: fmt.Errorf("iceberg table %s.%s: %w", e.cfg.Iceberg.Namespace, e.cfg.Iceberg.Table, err)}
		case errors.As(err, &fh), errors.As(err, &nf):
			// A catalog pointing elsewhere, or a folder that is not
			// there, stays so however often it is asked.
			return &failure.Permanent{Code: "IcebergCatalog", Err: err}
		}
		lt = t
		return err
	})
	if err != nil {
		return nil, err
	}
	return lt, nil
}

// setUpStreams sets up every [[streams]] entry: its consumer, or a
// partitioned entry's partitions, each recovered.
func (e *session) setUpStreams(ctx context.Context) ([]*streamWriter, error) {
	var streams []*streamWriter
	for _, sc := range e.cfg.Streams {
		if sc.Partitioned() {
			var g *partGroup
			err := retry(ctx, e.log, "jetstream", func(attempt context.Context) (err error) {
				g, err = e.setUpPartitions(ctx, attempt, sc)
				return err
			})
			if err != nil {
				return nil, err
			}
			e.groups = append(e.groups, g)
			streams = append(streams, g.parts...)
			continue
		}
		s := newStreamWriter(e, sc)
		err := retry(ctx, e.log, "jetstream", func(attempt context.Context) error {
			return s.setupStream(ctx, attempt)
		})
		if err != nil {
			return nil, err
		}
		streams = append(streams, s)
		attrs := []any{"stream", sc.Stream, "consumer", sc.Consumer, "read", s.mode.String(), "why", s.mode.Why}
		if !s.mode.AckLess {
			attrs = append(attrs, "ack_wait", sc.AckWait, "max_ack_pending", sc.MaxAckPending)
		}
		e.log.Info("consumer ready", append(attrs, "recovered_batches", s.recovered)...)
	}
	parts := 0
	for _, g := range e.groups {
		parts += len(g.parts)
	}
	e.partitions.Store(int64(parts))
	return streams, nil
}

// openLeases opens the lease store of the partitioned entries, if there
// are any, with the shortest of their lease_ttl for membership.
func (e *session) openLeases(ctx context.Context) error {
	if len(e.groups) == 0 {
		return nil
	}
	ttl := e.groups[0].cfg.LeaseTTL
	for _, g := range e.groups {
		ttl = min(ttl, g.cfg.LeaseTTL)
	}
	return retry(ctx, e.log, "state bucket", func(ctx context.Context) error {
		store, err := lease.Open(ctx, e.js, e.cfg.State.Bucket)
		if err == nil {
			e.leases = &leasing{Leaser: lease.NewLeaser(store, e.cfg.Name, ttl), warned: map[string]uint64{}}
		}
		return err
	})
}

// ErrConsumerDeleted is returned by Run when a stream is deleted while the
// exporter reads it.
var ErrConsumerDeleted = errors.New("consumer or stream deleted")
