// Package exporter reads JetStream streams through durable pull consumers and
// writes their messages to an object store as rotated objects, acking each
// message only after the object that holds it was stored.
//
// One goroutine, the one running Run, owns every buffer and counter of a
// connector. Pullers hand it messages over a channel; uploaders take sealed
// batches from it and hand back results. The commit path of a batch is
// sealed → uploaded → acked → confirmed; see upload.go.
package exporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/lossmarker"
	"github.com/jetlake/jetlake/pathtemplate"
)

// Options tune an Exporter. The zero value runs until the context ends,
// writes to S3 as configured and logs to slog.Default().
type Options struct {
	Logger    *slog.Logger
	UntilIdle bool        // return once every consumer has nothing pending and everything is acked
	Store     ObjectStore // nil: S3 from the connector's [s3] settings
	Intents   IntentStore // nil: the JetStream key-value bucket of [state]
	Version   string      // exporter version, written into object metadata
	// MaxObjectSize is the largest object the store accepts in one
	// PutObject; a message that can not fit is poison. Zero means 5 GiB.
	MaxObjectSize int64
	// Metrics receives the exporter's metrics; nil keeps them unexported.
	Metrics *Metrics
	// ReadyUploadFailure is how long uploads may fail in a row before
	// Ready reports the exporter unready; zero means one minute.
	ReadyUploadFailure time.Duration
}

// Exporter runs one connector.
type Exporter struct {
	cfg   *config.Connector
	opts  Options
	log   *slog.Logger
	store ObjectStore
	enc   formats.Encoder
	// rejEnc writes rejected messages: JSON Lines with metadata and
	// headers, the reason among them.
	rejEnc formats.Encoder

	intents     IntentStore
	conditional bool  // the store honours If-None-Match: *
	acks        acker // the connection messages arrive on; set by Run

	m *Metrics

	// Readiness, read by Ready from other goroutines.
	nc          atomic.Pointer[nats.Conn]
	bound       atomic.Bool  // every consumer is set up and pulling
	failingFrom atomic.Int64 // unix nanos of the first upload failure in a row; 0 when uploads succeed

	peak atomic.Int64 // most bytes buffered and in flight at once, for tests
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
	enc, err := formats.New(fo)
	if err != nil {
		return nil, fmt.Errorf("connector %s: %w", cfg.Name, err)
	}
	rejEnc, err := formats.New(formats.Options{Format: formats.JSONLines, Metadata: true, Headers: true})
	if err != nil {
		return nil, err
	}
	store := opts.Store
	if store == nil {
		s3, err := NewS3Store(cfg.S3)
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
		m = NewMetrics(nil)
	}
	return &Exporter{
		cfg:     cfg,
		opts:    opts,
		log:     log.With("connector", cfg.Name),
		store:   store,
		enc:     enc,
		rejEnc:  rejEnc,
		intents: opts.Intents,
		m:       m,
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
// Run returns nil after a clean stop. It returns a *ConfigError when a stream
// or consumer does not fit, a *PermanentError when the store refuses the
// writes for good, and ErrConsumerDeleted when a consumer vanishes.
func (e *Exporter) Run(ctx context.Context) error {
	if bc, ok := e.store.(bucketChecker); ok {
		err := retry(ctx, e.log, "object store", func(ctx context.Context) error { return bc.CheckBucket(ctx) })
		if err != nil {
			return err
		}
	}
	nc, err := e.connect(ctx)
	if err != nil {
		return err
	}
	e.nc.Store(nc)
	e.acks = nc
	defer nc.Close()
	defer e.bound.Store(false)
	js, err := NewJetStream(nc, e.cfg.NATS)
	if err != nil {
		return err
	}
	if e.intents == nil {
		var kv *kvIntents
		err := retry(ctx, e.log, "state bucket", func(ctx context.Context) error {
			var err error
			kv, err = openIntents(ctx, js, e.cfg.State.Bucket, e.cfg.State.Replicas)
			return err
		})
		if err != nil {
			return err
		}
		e.intents = kv
	}
	if err := e.probe(ctx); err != nil {
		return err
	}
	streams := make([]*streamState, len(e.cfg.Streams))
	for i, sc := range e.cfg.Streams {
		s := &streamState{cfg: sc, committed: map[uint64]*committed{},
			unresolved: map[string]*unresolved{}, pending: map[uint64]*unresolved{}, own: map[string]bool{},
			mReceived:    e.m.received.WithLabelValues(e.cfg.Name, sc.Stream),
			mRedelivered: e.m.redelivered.WithLabelValues(e.cfg.Name, sc.Stream),
			mAcked:       e.m.acked.WithLabelValues(e.cfg.Name, sc.Stream),
		}
		err := retry(ctx, e.log, "jetstream", func(ctx context.Context) error {
			return e.setupStream(ctx, js, s)
		})
		if err != nil {
			return err
		}
		streams[i] = s
		e.log.Info("consumer ready", "stream", sc.Stream, "consumer", sc.Consumer,
			"ack_wait", sc.AckWait, "max_ack_pending", sc.MaxAckPending, "recovered_batches", s.recovered)
	}
	e.bound.Store(true)
	r := newRunner(e, streams)
	err = r.run(ctx)
	if ferr := nc.FlushTimeout(5 * time.Second); ferr != nil && err == nil && !nc.IsClosed() {
		e.log.Warn("flushing acks to NATS failed; unflushed acks are redelivered", "error", ferr)
	}
	return err
}

// Dial connects to the connector's NATS servers once, without the retries
// Run does; for commands that inspect rather than export.
func Dial(cfg *config.Connector) (*nats.Conn, error) {
	opts, err := natsOptions(cfg.NATS, cfg.Name)
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(cfg.NATS.URL, append(opts, nats.MaxReconnects(0))...)
	if err != nil {
		return nil, fmt.Errorf("nats %s: %w", cfg.NATS.URL, err)
	}
	return nc, nil
}

// NewJetStream returns the JetStream context for the [nats] settings: the
// default API, a domain, or an API prefix.
func NewJetStream(nc *nats.Conn, c config.NATS) (jetstream.JetStream, error) {
	var js jetstream.JetStream
	var err error
	switch {
	case c.JetStreamDomain != "":
		js, err = jetstream.NewWithDomain(nc, c.JetStreamDomain)
	case c.JetStreamAPIPrefix != "":
		js, err = jetstream.NewWithAPIPrefix(nc, c.JetStreamAPIPrefix)
	default:
		js, err = jetstream.New(nc)
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return js, nil
}

// connect dials NATS, retrying with backoff until it succeeds or ctx ends.
func (e *Exporter) connect(ctx context.Context) (*nats.Conn, error) {
	opts, err := natsOptions(e.cfg.NATS, e.cfg.Name)
	if err != nil {
		return nil, err
	}
	log := e.log
	opts = append(opts,
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected; reconnecting", "error", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted()) }),
		// Client errors (a slow consumer, a permission violation) go to the
		// log like everything else, not raw to stderr.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("NATS client error", "subject", subject, "error", err)
		}),
	)
	var nc *nats.Conn
	err = retry(ctx, e.log, "NATS", func(context.Context) error {
		var err error
		nc, err = nats.Connect(e.cfg.NATS.URL, opts...)
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) {
			return &PermanentError{Err: fmt.Errorf("nats %s: %w: check the credentials in [nats]", e.cfg.NATS.URL, err)}
		}
		return err
	})
	return nc, err
}

// streamState is what the runner keeps per configured stream. Set up
// before the runner starts; afterwards only the runner goroutine changes it,
// and uploaders read only cfg, created and intentPrefix.
type streamState struct {
	cfg          config.Stream
	cons         jetstream.Consumer
	cc           jetstream.ConsumeContext
	created      time.Time // the stream's creation time: with its name, its identity
	intentPrefix string

	held       heldSet                // sequences received and not yet acked or abandoned
	sealed     int                    // of those, messages in sealed batches
	committed  map[uint64]*committed  // sequences stored in an object whose acks are not confirmed
	unresolved map[string]*unresolved // intents of others whose object was missing, by intent key
	pending    map[uint64]*unresolved // their sequences
	own        map[string]bool        // intents of this process's batches in flight
	pin        string                 // Nats-Pin-Id of the last message on a pinned consumer
	retired    []*committed           // intents of confirmed batches, kept until the ack floor passes them
	recovered  int                    // intents recovered at start

	mReceived, mRedelivered, mAcked prometheus.Counter
	newest                          time.Time // timestamp of the newest exported message

	// Gap detection for consumers that see every message of the stream:
	// the stream sequence the next first delivery should have (0: unknown).
	poisoned     *job                 // a poison marker that consecutive poison messages may still join
	startMarkers []*lossmarker.Marker // found while setting up; written when the runner starts

	drained bool // the last delivery said the consumer had nothing more to deliver

	gapCheck bool
	next     uint64
	suspects []Range          // skipped ranges to check against the stream
	stream   jetstream.Stream // for those checks
}

// delivery is a message handed from a puller to the runner.
type delivery struct {
	stream int // index into runner.streams
	msg    jetstream.Msg
}

// RejectReasonHeader is the header that carries, in a rejected message's
// record, why a typed column refused it.
const RejectReasonHeader = "Jetlake-Reject-Reason"

// pinHeader carries the pin id on messages of a pinned consumer.
const pinHeader = "Nats-Pin-Id"

// ErrConsumerDeleted is returned by Run when a consumer or its stream is
// deleted while the exporter reads it.
var ErrConsumerDeleted = errors.New("consumer or stream deleted")

// runner is the state of one Run. Only the goroutine in run touches it.
type runner struct {
	e        *Exporter
	log      *slog.Logger
	streams  []*streamState
	chunks   formats.ChunkSource // the data encoder, when it defers compression
	chunkBuf []*formats.Chunk
	compress chan *formats.Chunk // to the compressors
	set      *batchSet           // data
	rej      *batchSet           // rejected messages
	budget   int64

	in        chan delivery
	fatal     chan error
	jobs      chan *job
	results   chan *result
	queue     []*job            // sealed batches waiting for an uploader
	uploading map[bufferKey]int // batches with an uploader, by buffer key

	inflightBytes int64 // bytes of sealed batches not yet done
	heldMem       int64 // memory of the delivered messages kept for their acks
	inflight      int   // jobs not yet done
	lastMsg       time.Time
	lastForget    time.Time
	bg            sync.WaitGroup // intent deletions

	ctx      context.Context // of run; for the set-up steps the loop does itself
	fatalErr error           // a failure found inside add, returned by the loop

	rec     formats.Record
	dirBuf  []byte
	grpBuf  []byte
	tplVals pathtemplate.Values
}

func newRunner(e *Exporter, streams []*streamState) *runner {
	rot := e.cfg.Rotation
	return &runner{
		e:         e,
		log:       e.log,
		streams:   streams,
		uploading: map[bufferKey]int{},
		set: buffer.New[ackRef, formats.Record](e.enc.NewBatch, buffer.Limits{
			MaxBytes:    int(rot.MaxFileSize),
			MaxMessages: rot.MaxMessagesPerFile,
			MaxAge:      rot.MaxFileAge,
		}),
		// Rejected messages wait in their own buffers, one object per stream
		// and day, under _jetlake/rejected/.
		rej: buffer.New[ackRef, formats.Record](e.rejEnc.NewBatch, buffer.Limits{
			MaxBytes:    int(rot.MaxFileSize),
			MaxMessages: rot.MaxMessagesPerFile,
			MaxAge:      rot.MaxFileAge,
		}),
		budget:  rot.MaxBufferedBytes,
		in:      make(chan delivery, 64),
		fatal:   make(chan error, len(streams)+1),
		jobs:    make(chan *job),
		results: make(chan *result, e.cfg.S3.UploadConcurrency),
	}
}

// pullBytes bounds the bytes the client buffers per consumer ahead of the
// runner, so the pull buffer counts inside the memory budget.
func (r *runner) pullBytes() int {
	b := r.budget / int64(8*len(r.streams))
	return int(min(max(b, 64<<10), 16<<20))
}

func (r *runner) run(ctx context.Context) error {
	r.ctx = ctx
	// Uploads outlive ctx: on shutdown they get the shutdown timeout.
	uctx, cancelUploads := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelUploads()
	var workers sync.WaitGroup
	for range r.e.cfg.S3.UploadConcurrency {
		workers.Go(func() {
			for j := range r.jobs {
				r.results <- r.e.process(uctx, j)
			}
		})
	}
	if cs, ok := r.e.enc.(formats.ChunkSource); ok {
		r.chunks = cs
		r.compress = make(chan *formats.Chunk, 4*runtime.GOMAXPROCS(0))
		var compressors sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			compressors.Go(func() {
				for c := range r.compress {
					c.Compress()
				}
			})
		}
		defer compressors.Wait()
		defer close(r.compress)
	}
	quit := make(chan struct{})
	pullersDone := make(chan struct{})
	defer func() {
		close(quit)
		for _, s := range r.streams {
			if s.cc != nil {
				s.cc.Stop()
			}
		}
		cancelUploads()
		close(r.jobs)
		// Drain results so workers can finish, then wait for them.
		go func() {
			for range r.results {
			}
		}()
		workers.Wait()
		close(r.results)
		r.bg.Wait()
	}()

	// A callback, not an iterator: Consume's subscription queues what the
	// server sends while the runner applies backpressure, where the
	// iterator's fixed channel would drop messages (slow consumer) that
	// then come back only after AckWait.
	var closed []<-chan struct{}
	for i, s := range r.streams {
		opts := []jetstream.PullConsumeOpt{
			jetstream.PullMaxMessagesWithBytesLimit(min(max(s.cfg.MaxAckPending, 1), 1000), r.pullBytes()),
			jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) { r.pullError(s, err) }),
		}
		if s.cfg.Failover == config.FailoverPinned {
			opts = append(opts, jetstream.PullPriorityGroup(PriorityGroup))
		}
		cc, err := s.cons.Consume(func(msg jetstream.Msg) {
			select {
			case r.in <- delivery{stream: i, msg: msg}:
			case <-quit:
			}
		}, opts...)
		if err != nil {
			return fmt.Errorf("stream %s: consume: %w", s.cfg.Stream, err)
		}
		s.cc = cc
		closed = append(closed, cc.Closed())
	}
	go func() {
		for _, c := range closed {
			<-c
		}
		close(pullersDone)
	}()
	for _, s := range r.streams {
		for _, m := range s.startMarkers {
			r.enqueue(&job{stream: s, marker: m})
		}
		s.startMarkers = nil
	}

	err := r.loop(ctx)
	if err != nil {
		return err
	}
	// Stopping: hand over what the client already buffered, then seal
	// everything and upload it within the shutdown timeout.
	for _, s := range r.streams {
		s.cc.Drain()
	}
	for drained := false; !drained; {
		select {
		case d := <-r.in:
			r.add(d)
		case <-pullersDone:
			drained = true
		case err := <-r.fatal:
			return err
		}
	}
	for {
		select {
		case d := <-r.in:
			r.add(d)
			continue
		default:
		}
		break
	}
	r.flushPoison()
	r.set.SealAll(buffer.ReasonShutdown)
	r.rej.SealAll(buffer.ReasonShutdown)
	r.takeSealed()
	deadline := time.NewTimer(r.e.cfg.ShutdownTimeout)
	defer deadline.Stop()
	for r.inflight > 0 {
		var jobs chan *job
		var next *job
		idx := r.nextJob()
		if idx >= 0 {
			jobs, next = r.jobs, r.queue[idx]
		}
		select {
		case jobs <- next:
			r.dispatched(idx)
		case res := <-r.results:
			if err := r.finish(res); err != nil {
				return err
			}
		case <-deadline.C:
			r.log.Warn("shutdown timeout: leaving unuploaded messages unacked; JetStream redelivers them",
				"batches", r.inflight, "bytes", r.inflightBytes, "shutdown_timeout", r.e.cfg.ShutdownTimeout)
			return nil
		}
	}
	r.forgetAcked(context.WithoutCancel(ctx))
	r.log.Info("stopped cleanly")
	return nil
}

// pullError handles an error the consumer reports while pulling: a deleted
// consumer or stream stops the exporter; anything else (missed heartbeats,
// a reconnect) is logged, and pulling goes on.
func (r *runner) pullError(s *streamState, err error) {
	switch {
	case errors.Is(err, jetstream.ErrConsumerDeleted), errors.Is(err, jetstream.ErrConsumerNotFound),
		errors.Is(err, jetstream.ErrStreamNotFound):
		select {
		case r.fatal <- fmt.Errorf("stream %s, consumer %s: %w: %w", s.cfg.Stream, s.cfg.Consumer, ErrConsumerDeleted, err):
		default:
		}
	default:
		r.log.Warn("pull problem; pulling goes on", "stream", s.cfg.Stream, "error", err)
	}
}

// loop is the steady state: take messages while memory allows, seal what is
// due, feed uploaders, collect results. It returns nil when it is time to
// stop (ctx ended, or idle with Options.UntilIdle).
func (r *runner) loop(ctx context.Context) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var fast <-chan time.Time
	if r.e.opts.UntilIdle {
		t := time.NewTicker(fastIdle)
		defer t.Stop()
		fast = t.C
	}
	for {
		var in chan delivery
		if r.openMem()+r.inflightBytes+r.heldMem < r.budget {
			in = r.in
		}
		var jobs chan *job
		var next *job
		idx := r.nextJob()
		if idx >= 0 {
			jobs, next = r.jobs, r.queue[idx]
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-r.fatal:
			return err
		case d := <-in:
			r.add(d)
			if r.fatalErr != nil {
				return r.fatalErr
			}
		case jobs <- next:
			r.dispatched(idx)
		case res := <-r.results:
			if err := r.finish(res); err != nil {
				return err
			}
		case now := <-tick.C:
			r.set.Expire(now)
			r.rej.Expire(now)
			r.takeSealed()
			if now.Sub(r.lastForget) >= 5*time.Second {
				r.lastForget = now
				r.forgetAcked(ctx)
			}
			if err := r.resolve(ctx, now); err != nil {
				return err
			}
			r.confirmGaps(ctx)
			r.flushPoison()
			r.gauges(now)
			if r.e.opts.UntilIdle && now.Sub(r.lastMsg) >= 500*time.Millisecond && len(r.queue) == 0 {
				if done, err := r.checkIdle(ctx); done || err != nil {
					return err
				}
			}
		case now := <-fast:
			// The last deliveries said nothing more was pending: check
			// at once rather than after half a second of quiet.
			if r.drained() && now.Sub(r.lastMsg) >= fastIdle && len(r.queue) == 0 &&
				(r.inflight == 0 || r.set.Open()+r.rej.Open() > 0) {
				if done, err := r.checkIdle(ctx); done || err != nil {
					return err
				}
			}
		}
	}
}

// fastIdle is how long Options.UntilIdle waits after a delivery that said
// nothing more was pending before it checks whether the work is done.
const fastIdle = 25 * time.Millisecond

// drained reports whether the last delivery of every stream said its
// consumer had nothing more to deliver.
func (r *runner) drained() bool {
	for _, s := range r.streams {
		if !s.drained {
			return false
		}
	}
	return true
}

// checkIdle runs idle and logs when the work is done.
func (r *runner) checkIdle(ctx context.Context) (bool, error) {
	idle, err := r.idle(ctx)
	if err != nil {
		return false, err
	}
	if idle {
		r.log.Info("idle: every consumer is caught up")
	}
	return idle, nil
}

// idle reports whether every consumer has nothing pending and nothing is
// buffered or in flight. When the consumers are caught up but buffers are
// open, it seals them so the next check can succeed.
func (r *runner) idle(ctx context.Context) (bool, error) {
	acked := true
	for _, s := range r.streams {
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		info, err := s.cons.Info(ictx)
		cancel()
		if err != nil {
			if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
				return false, fmt.Errorf("stream %s, consumer %s: %w: %w", s.cfg.Stream, s.cfg.Consumer, ErrConsumerDeleted, err)
			}
			return false, nil
		}
		if info.NumPending > 0 {
			return false, nil
		}
		if info.NumAckPending > 0 {
			acked = false
		}
	}
	for _, s := range r.streams {
		if len(s.suspects) > 0 {
			r.confirmGaps(ctx)
			return false, nil
		}
	}
	if r.set.Open()+r.rej.Open() > 0 {
		r.set.SealAll(buffer.ReasonShutdown)
		r.rej.SealAll(buffer.ReasonShutdown)
		r.takeSealed()
		return false, nil
	}
	return acked && r.inflight == 0, nil
}

// add buffers one message and seals what its arrival makes due.
func (r *runner) add(d delivery) {
	s := r.streams[d.stream]
	msg := d.msg
	r.lastMsg = time.Now()
	md, ok := parseAckReply(msg.Reply())
	if !ok {
		// Not a JetStream message: nothing to ack, nothing to export.
		r.log.Error("message without JetStream metadata", "stream", s.cfg.Stream, "subject", msg.Subject(), "reply", msg.Reply())
		return
	}
	seq := md.streamSeq
	s.drained = md.pending == 0
	ts := time.Unix(0, md.timestamp)
	s.mReceived.Inc()
	if md.delivered > 1 {
		s.mRedelivered.Inc()
	}
	if s.cfg.Failover == config.FailoverPinned {
		if pin := msg.Headers().Get(pinHeader); pin != "" && pin != s.pin {
			// This instance was just pinned: recover what the previous
			// active one left before exporting anything.
			s.pin = pin
			r.log.Info("pinned: this instance is active", "stream", s.cfg.Stream, "consumer", s.cfg.Consumer)
			if err := r.e.recover(r.ctx, s); err != nil {
				r.fail(err)
				return
			}
		}
	}
	if u, ok := s.pending[seq]; ok {
		// The latest delivery of each message is the one to ack: the
		// server redelivers it every AckWait while the store is asked.
		if u.waiting == nil {
			u.waiting = map[uint64]delivery{}
		}
		u.waiting[seq] = d
		return
	}
	if md.delivered > 1 && len(s.retired) > 0 {
		s.expandRetired(seq)
	}
	if _, ok := s.committed[seq]; ok {
		// Stored in an object already: ack without writing it again.
		r.ackCommitted(s, seq, msg)
		return
	}
	if s.held.has(seq) {
		// Redelivered while we hold it: the copy we hold is acked once
		// stored.
		return
	}
	if s.gapCheck && md.delivered == 1 {
		if s.next != 0 && seq > s.next {
			// A jump in first deliveries: the stream removed the skipped
			// sequences, or their first delivery was lost on the way (a
			// consumer leader change) and they come back. confirmGaps asks
			// the stream which.
			s.suspects = append(s.suspects, Range{s.next, seq - 1})
		}
		s.next = max(s.next, seq+1)
	}
	s.held.add(seq)
	out := &r.e.cfg.Output
	r.rec = formats.Record{
		Stream:   s.cfg.Stream,
		Subject:  msg.Subject(),
		Sequence: seq,
		Time:     ts,
		Data:     msg.Data(),
	}
	if out.IncludeHeaders {
		r.rec.Headers = msg.Headers()
	}
	if int64(len(r.rec.Data)) > r.e.opts.MaxObjectSize-64<<10 {
		r.poison(s, msg, fmt.Errorf("message of %d bytes can not fit in an object of at most %d bytes", len(r.rec.Data), r.e.opts.MaxObjectSize))
		return
	}
	r.tplVals = pathtemplate.Values{Stream: s.cfg.Stream, Subject: r.rec.Subject, Consumer: s.cfg.Consumer, Time: ts}
	r.dirBuf = out.PathTemplate.AppendDir(r.dirBuf[:0], &r.tplVals)
	// A group starts with the stream's index, so that two [[streams]]
	// entries never share a buffer.
	r.grpBuf = strconv.AppendInt(r.grpBuf[:0], int64(d.stream), 10)
	r.grpBuf = append(r.grpBuf, 0)
	if out.GroupBy == config.GroupBySubject {
		r.grpBuf = append(r.grpBuf, r.rec.Subject...)
	}
	ref := ackRef(msg.Reply())
	if err := r.set.Add(r.grpBuf, r.dirBuf, &r.rec, r.rec.Sequence, r.rec.Time, ref, r.lastMsg); err != nil {
		var te *formats.TypeError
		if errors.As(err, &te) {
			r.reject(d.stream, s, msg, te)
			return
		}
		r.poison(s, msg, err)
		return
	}
	r.heldMem += refMem(ref)
	r.rec = formats.Record{}
	r.dispatchChunks()
	// MaxAckPending: when held messages near the limit the server stops
	// delivering, so buffers waiting for more would wait forever. Sealing
	// helps only when open buffers hold most of them; otherwise the acks of
	// the uploads in flight make room. Sealing already at three quarters
	// when nothing of the stream is being uploaded lets the acks come
	// before delivery stops.
	held, limit := s.held.len(), s.cfg.MaxAckPending
	if held >= limit-limit/10 && held-s.sealed >= s.sealed || held >= limit/4*3 && s.sealed == 0 {
		prefix := string(r.grpBuf[:bytes.IndexByte(r.grpBuf, 0)+1])
		r.set.SealMost(buffer.ReasonPending, func(g string) bool { return strings.HasPrefix(g, prefix) })
	}
	// Memory: when open buffers hold most of the budget, seal the largest so
	// its upload frees memory; otherwise uploads in flight free it.
	r.relieve()
	r.takeSealed()
}

// dispatchChunks hands the chunks the last append filled to the
// compressors. When they are all busy, the runner compresses the chunk
// itself: that is the backpressure.
func (r *runner) dispatchChunks() {
	if r.chunks == nil {
		return
	}
	r.chunkBuf = r.chunks.TakeChunks(r.chunkBuf[:0])
	for i, c := range r.chunkBuf {
		select {
		case r.compress <- c:
		default:
			c.Compress()
		}
		r.chunkBuf[i] = nil
	}
}

// confirmGaps asks each stream which of the suspected gaps it really
// removed (below its first sequence, or deleted) and writes loss markers for
// those; sequences still in the stream will be delivered again.
func (r *runner) confirmGaps(ctx context.Context) {
	for _, s := range r.streams {
		if len(s.suspects) == 0 {
			continue
		}
		ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
		info, err := s.stream.Info(ictx, jetstream.WithDeletedDetails(true))
		cancel()
		if err != nil {
			r.log.Warn("could not check a suspected gap; trying again", "stream", s.cfg.Stream, "error", err)
			continue
		}
		deleted := make(map[uint64]bool, len(info.State.Deleted))
		for _, q := range info.State.Deleted {
			deleted[q] = true
		}
		for _, sus := range s.suspects {
			var lost []uint64
			for q := sus.First; q <= sus.Last; q++ {
				if q < info.State.FirstSeq || deleted[q] {
					lost = append(lost, q)
				}
			}
			for _, run := range toRanges(lost) {
				r.enqueue(&job{stream: s, marker: &lossmarker.Marker{
					Stream: s.cfg.Stream, Consumer: s.cfg.Consumer,
					FirstSeq: run.First, LastSeq: run.Last, Count: run.Last - run.First + 1,
					Reason: lossmarker.Gap,
					Error:  fmt.Sprintf("the stream removed sequences %s before they were exported (limits, max age, or a delete)", run),
				}})
			}
		}
		s.suspects = s.suspects[:0]
	}
}

// fail records a failure found while handling a message; the loop returns
// it.
func (r *runner) fail(err error) {
	if r.fatalErr == nil {
		r.fatalErr = err
	}
}

// resolve decides about unresolved intents whose time is up: the object
// exists now (its messages are acked, not written) or it never will (the
// intent is deleted and its messages are exported anew).
func (r *runner) resolve(ctx context.Context, now time.Time) error {
	for _, s := range r.streams {
		for ikey, u := range s.unresolved {
			if now.Before(u.deadline) {
				continue
			}
			hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			md, err := r.e.store.Head(hctx, u.in.Key)
			cancel()
			switch {
			case errors.Is(err, ErrNotFound):
				dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := r.e.intents.Delete(dctx, ikey)
				cancel()
				if err != nil {
					continue // try again on the next tick
				}
				r.log.Info("recovery: batch was never stored; its messages are exported again", "key", u.in.Key, "messages", u.in.Seqs.Len())
			case err != nil:
				continue
			case md[MetaIntent] != u.in.ID:
				return &CollisionError{Key: u.in.Key, Intent: md[MetaIntent], Stream: md[MetaStream], StreamCreated: md[MetaStreamCreated]}
			default:
				r.log.Info("recovery: batch was stored by its writer; its messages are acked", "key", u.in.Key, "messages", u.in.Seqs.Len())
				s.commit(ikey, u.in.Seqs)
			}
			delete(s.unresolved, ikey)
			u.in.Seqs.All(func(q uint64) { delete(s.pending, q) })
			for _, d := range u.waiting {
				r.add(d)
			}
			if r.fatalErr != nil {
				return r.fatalErr
			}
		}
	}
	return nil
}

// openMem is the memory held by open buffers.
func (r *runner) openMem() int64 { return r.set.Mem() + r.rej.Mem() }

// relieve keeps memory within the budget: when open buffers hold most of it,
// it seals the largest so its upload frees memory; otherwise the uploads in
// flight free it, and pulling waits. It seals already at three quarters of
// the budget when nothing is being uploaded, so that the upload runs while
// pulling goes on instead of stopping it.
func (r *runner) relieve() {
	open := r.openMem()
	total := open + r.inflightBytes + r.heldMem
	if total > r.e.peak.Load() {
		r.e.peak.Store(total)
	}
	if total >= r.budget && open >= r.inflightBytes || total >= r.budget/4*3 && r.inflight == 0 {
		if !r.set.SealLargest(buffer.ReasonMemory) {
			r.rej.SealLargest(buffer.ReasonMemory)
		}
	}
}

// reject sets aside a message a typed column refuses: it goes, with the
// reason in its headers, to a JSON Lines object under
// <prefix>/_jetlake/rejected/<stream>/<date>/, outside the table folders, and
// is acked once that object is stored.
func (r *runner) reject(idx int, s *streamState, msg jetstream.Msg, te *formats.TypeError) {
	rec := r.rec
	r.rec = formats.Record{}
	h := make(map[string][]string, len(rec.Headers)+1)
	for k, v := range rec.Headers {
		h[k] = v
	}
	h[RejectReasonHeader] = []string{te.Error()}
	rec.Headers = h
	dir := []byte(lossmarker.Dir + "/rejected/")
	dir = pathtemplate.AppendEscaped(dir, s.cfg.Stream)
	dir = append(dir, '/')
	dir = rec.Time.UTC().AppendFormat(dir, "2006-01-02")
	group := strconv.AppendInt(nil, int64(idx), 10)
	group = append(group, 0)
	ref := ackRef(msg.Reply())
	if err := r.rej.Add(group, dir, &rec, rec.Sequence, rec.Time, ref, r.lastMsg); err != nil {
		r.poison(s, msg, fmt.Errorf("rejected by a typed column (%v) and not writable as JSON: %w", te, err))
		return
	}
	r.heldMem += refMem(ref)
	r.log.Warn("message rejected", "stream", s.cfg.Stream, "subject", rec.Subject, "sequence", rec.Sequence, "reason", te.Error())
	r.relieve()
	r.takeSealed()
}

// poison records a message that can be written in no form: a loss marker,
// then the message is terminated so it never blocks the consumer.
func (r *runner) poison(s *streamState, msg jetstream.Msg, why error) {
	r.rec = formats.Record{}
	md, _ := msg.Metadata()
	seq := md.Sequence.Stream
	// Consecutive poison messages share a marker: it waits until the next
	// message that does not continue it, or the next tick.
	if j := s.poisoned; j != nil && j.marker.Subject == msg.Subject() && j.marker.LastSeq+1 == seq {
		j.marker.LastSeq = seq
		j.marker.Count++
		j.term = append(j.term, ackRef(msg.Reply()))
		return
	}
	r.flushPoison()
	s.poisoned = &job{stream: s, term: []ackRef{ackRef(msg.Reply())}, marker: &lossmarker.Marker{
		Stream: s.cfg.Stream, Consumer: s.cfg.Consumer, Subject: msg.Subject(),
		FirstSeq: seq, LastSeq: seq, Count: 1,
		Reason: lossmarker.Poison,
		Error:  why.Error(),
	}}
}

// flushPoison queues the poison markers waiting for more messages.
func (r *runner) flushPoison() {
	for _, s := range r.streams {
		if s.poisoned != nil {
			r.enqueue(s.poisoned)
			s.poisoned = nil
		}
	}
}

// ackCommitted acks a redelivered message that is already stored. Its
// intent is forgotten once the ack floor passes it.
func (r *runner) ackCommitted(s *streamState, seq uint64, msg jetstream.Msg) {
	if err := msg.Ack(); err != nil {
		r.log.Warn("ack of a stored message failed; it will come back", "stream", s.cfg.Stream, "sequence", seq, "error", err)
		return
	}
	s.mAcked.Inc()
	delete(s.committed, seq)
}

// forget deletes an intent in the background; a failure leaves it for the
// next recovery, which handles it the same way.
func (r *runner) forget(intentKey string) {
	r.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.e.intents.Delete(ctx, intentKey); err != nil {
			r.log.Warn("could not delete a committed intent; the next start will", "intent", intentKey, "error", err)
		}
	})
}

// forgetAcked forgets the intents of batches the consumer's ack floor has
// passed: every message of them was acked and no reset can replay them. It
// also refreshes the consumer gauges from the same consumer info.
func (r *runner) forgetAcked(ctx context.Context) {
	for _, s := range r.streams {
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		info, err := s.cons.Info(ictx)
		cancel()
		if err != nil {
			continue
		}
		r.e.m.pending.WithLabelValues(r.e.cfg.Name, s.cfg.Stream).Set(float64(info.NumPending))
		r.e.m.ackPending.WithLabelValues(r.e.cfg.Name, s.cfg.Stream).Set(float64(info.NumAckPending))
		floor := info.AckFloor.Stream
		for seq, c := range s.committed {
			if c.last <= floor {
				delete(s.committed, seq)
			}
		}
		s.retired = slices.DeleteFunc(s.retired, func(c *committed) bool {
			if c.last <= floor {
				r.forget(c.intentKey)
				return true
			}
			return false
		})
	}
}

// gauges sets the gauges that describe the runner's state.
func (r *runner) gauges(now time.Time) {
	m, name := r.e.m, r.e.cfg.Name
	m.bufferedBytes.WithLabelValues(name).Set(float64(r.openMem() + r.inflightBytes + r.heldMem))
	age := 0.0
	if exp, ok := r.set.NextExpiry(); ok {
		age = max(now.Sub(exp.Add(-r.e.cfg.Rotation.MaxFileAge)).Seconds(), 0)
	}
	m.oldestBuffered.WithLabelValues(name).Set(age)
	for _, s := range r.streams {
		m.bufferedMessages.WithLabelValues(name, s.cfg.Stream).Set(float64(s.held.len()))
		if !s.newest.IsZero() {
			m.freshness.WithLabelValues(name, s.cfg.Stream).Set(now.Sub(s.newest).Seconds())
		}
	}
}

// nextJob returns the index in the queue of the job to upload next: the
// oldest whose buffer key has no batch being uploaded, so that the objects
// of one key are stored in the order they were sealed. It returns -1 when
// there is none.
func (r *runner) nextJob() int {
	for i, j := range r.queue {
		if j.batch == nil || r.uploading[j.key()] == 0 {
			return i
		}
	}
	return -1
}

// dispatched takes the job at index i, handed to an uploader, off the
// queue.
func (r *runner) dispatched(i int) {
	if j := r.queue[i]; j.batch != nil {
		r.uploading[j.key()]++
		j.uploading = true
	}
	if i == 0 {
		r.queue[0] = nil // the array must not keep the job alive
		r.queue = r.queue[1:]
		return
	}
	n := copy(r.queue[i:], r.queue[i+1:])
	r.queue[i+n] = nil
	r.queue = r.queue[:i+n]
}

// enqueue hands a job to the uploaders.
func (r *runner) enqueue(j *job) {
	r.inflight++
	r.inflightBytes += j.size
	r.queue = append(r.queue, j)
}

// takeSealed queues the batches the buffer set sealed.
func (r *runner) takeSealed() {
	for _, set := range []*batchSet{r.set, r.rej} {
		enc, format := r.e.enc, string(r.e.cfg.Output.Format)
		if set == r.rej {
			enc, format = r.e.rejEnc, string(formats.JSONLines)
		}
		for _, b := range set.TakeSealed() {
			j := &job{batch: b, size: int64(b.Body.MemSize()), stream: r.streamOf(b), set: set, enc: enc, format: format, intentID: nuid.Next()}
			j.stream.own[j.stream.intentPrefix+j.intentID] = true
			j.stream.sealed += b.Len()
			r.enqueue(j)
		}
	}
}

// batchSeqs returns the sequences of a batch's messages.
func batchSeqs(b *msgBatch) seqSet {
	seqs := make([]uint64, len(b.Items))
	for i, it := range b.Items {
		seqs[i] = it.Seq
	}
	return newSeqSet(seqs)
}

// streamOf returns the stream a batch belongs to, from the index its group
// starts with.
func (r *runner) streamOf(b *msgBatch) *streamState {
	idx, _, _ := strings.Cut(b.Group, "\x00")
	i, err := strconv.Atoi(idx)
	if err != nil || i < 0 || i >= len(r.streams) {
		panic("exporter: batch of unknown stream " + idx)
	}
	return r.streams[i]
}

// finish accounts for a job that ended, one way or another.
func (r *runner) finish(res *result) error {
	j := res.job
	s := j.stream
	r.inflight--
	r.inflightBytes -= j.size
	var ce *CollisionError
	if IsPermanent(res.err) || errors.As(res.err, &ce) {
		return res.err
	}
	if j.marker != nil {
		for _, ref := range j.term {
			s.held.remove(ref.seq())
		}
		if res.stored {
			r.e.m.lost.WithLabelValues(r.e.cfg.Name, s.cfg.Stream, string(j.marker.Reason)).Add(float64(j.marker.Count))
		}
		return nil
	}
	b := j.batch
	if j.uploading {
		if k := j.key(); r.uploading[k] == 1 {
			delete(r.uploading, k)
		} else {
			r.uploading[k]--
		}
	}
	defer j.set.Release(b)
	delete(s.own, s.intentPrefix+j.intentID)
	s.sealed -= b.Len()
	for _, it := range b.Items {
		s.held.remove(it.Seq)
		r.heldMem -= refMem(it.Handle)
	}
	switch {
	case res.stored && !res.confirmed:
		// Stored, but the acks did not all get through: when the messages
		// come back they are acked, not written again.
		s.commit(res.intentKey, batchSeqs(b))
	case res.confirmed && res.intentKey != "":
		s.retire(&committed{intentKey: res.intentKey, last: b.Last, first: b.First, seqs: res.seqs})
	}
	if res.confirmed {
		s.mAcked.Add(float64(b.Len()))
	}
	if res.stored {
		m, name, reason := r.e.m, r.e.cfg.Name, string(b.Reason)
		m.objects.WithLabelValues(name, s.cfg.Stream, reason).Inc()
		m.bytes.WithLabelValues(name, s.cfg.Stream, reason).Add(float64(res.bytes))
		m.uploadSeconds.WithLabelValues(name, s.cfg.Stream).Observe(res.duration.Seconds())
		m.objectBytes.WithLabelValues(name, s.cfg.Stream).Observe(float64(res.bytes))
		if b.Newest.After(s.newest) {
			s.newest = b.Newest
		}
	}
	if j.set == r.rej && res.stored {
		r.e.m.rejected.WithLabelValues(r.e.cfg.Name, s.cfg.Stream, "type").Add(float64(b.Len()))
	}
	switch {
	case res.err == nil:
		r.log.Info("object uploaded", "key", res.key, "messages", b.Len(), "bytes", res.bytes,
			"reason", string(b.Reason), "upload_duration", res.duration.Round(time.Millisecond))
	case res.stored:
		r.log.Warn("object stored but not acked; its messages are acked when they come back",
			"key", res.key, "messages", b.Len(), "error", res.err)
	default:
		r.log.Warn("batch not exported; its messages stay unacked and are redelivered",
			"key", res.key, "messages", b.Len(), "error", res.err)
		r.awaitUnsure(s, j, res)
	}
	return nil
}

// awaitUnsure handles a batch given up after its intent was recorded: an
// upload attempt that timed out may still have stored the object. Its
// messages, when they come back, wait until the store says whether it
// holds the object, as for an intent found at start.
func (r *runner) awaitUnsure(s *streamState, j *job, res *result) {
	if res.intentKey == "" || len(res.seqs) == 0 {
		return
	}
	var seqs seqSet
	if err := seqs.UnmarshalJSON(res.seqs); err != nil {
		return
	}
	in := &intent{ID: j.intentID, Key: res.key, Stream: s.cfg.Stream, Consumer: s.cfg.Consumer, Seqs: seqs}
	s.await(res.intentKey, in, time.Now().Add(resolveAfter(s.cfg.AckWait)))
}
