package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
)

// publishWindow is how many asynchronous publishes may await their acks.
const publishWindow = 4096

// prefill creates the workload's stream (file storage) and publishes every
// message with asynchronous publishes in a window. It records the bytes the
// json_lines output of the stream holds, computed with the formats package
// as jetlake encodes it.
func (b *bench) prefill(ctx context.Context, spec workloadSpec, w *WorkloadResult) error {
	if err := b.createStream(ctx, spec, w.Stream); err != nil {
		return err
	}
	b.dropPublishErrors()
	payloadBytes, elapsed, err := b.publish(ctx, spec, w)
	if err != nil {
		return err
	}
	stream, err := b.js.Stream(ctx, w.Stream)
	if err != nil {
		return err
	}
	st := stream.CachedInfo().State
	if st.Msgs != uint64(spec.Messages) || st.LastSeq != uint64(spec.Messages) {
		return fmt.Errorf("stream %s holds %d messages up to sequence %d after the pre-fill, want %d",
			w.Stream, st.Msgs, st.LastSeq, spec.Messages)
	}
	w.PrefillSeconds = elapsed.Seconds()
	w.StreamBytes = int64(st.Bytes)
	w.PayloadBytes = float64(payloadBytes) / float64(spec.Messages)
	b.progress("%s: pre-filled %s with %d messages over %d subjects in %s (%s msg/s), %s in the stream, %s of json_lines",
		spec.Name, w.Stream, spec.Messages, spec.Subjects, fmtSeconds(w.PrefillSeconds),
		fmtInt(int64(float64(spec.Messages)/w.PrefillSeconds)), fmtMB(w.StreamBytes), fmtMB(w.JSONLinesBytes))
	return nil
}

// createStream creates the workload's stream afresh, in file storage,
// with jetlake's partition transform when the workload is partitioned.
func (b *bench) createStream(ctx context.Context, spec workloadSpec, name string) error {
	if err := b.js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("delete old stream %s: %w", name, err)
	}
	sc := jetstream.StreamConfig{
		Name:     name,
		Subjects: []string{"bench." + spec.Name + ".>"},
		Storage:  jetstream.FileStorage,
	}
	if spec.Partitions > 1 {
		src, dst := config.PartitionTransform(spec.Partitions)
		sc.SubjectTransform = &jetstream.SubjectTransformConfig{Source: src, Destination: dst}
	}
	if _, err := b.js.CreateStream(ctx, sc); err != nil {
		return fmt.Errorf("create stream %s: %w", name, err)
	}
	return nil
}

// dropPublishErrors drops a publish error left over from an earlier
// workload.
func (b *bench) dropPublishErrors() {
	for {
		select {
		case <-b.pubErrs:
			continue
		default:
		}
		break
	}
}

// publish publishes the workload's messages, round-robin over its
// subjects, and waits for every ack. It adds the bytes of each message's
// json_lines record to w.JSONLinesBytes, and returns the bytes of the
// payloads and the time publishing took.
func (b *bench) publish(ctx context.Context, spec workloadSpec, w *WorkloadResult) (int64, time.Duration, error) {
	subjects := make([]string, spec.Subjects)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("bench.%s.s%05d", spec.Name, i)
	}
	gen := newPayloadGen(b.cfg.PayloadBytes, uint64(spec.Messages))
	gen.keys = spec.KeyValues
	rec := formats.Record{Stream: w.Stream, Time: time.Now()}
	opts := formats.Options{Format: formats.JSONLines, Metadata: true}
	var line []byte
	var payloadBytes int64
	start := time.Now()
	lastReport := start
	for i := range spec.Messages {
		subject := subjects[i%len(subjects)]
		// A fresh slice per message: the publish future keeps it until
		// the ack arrives.
		data := gen.next(i, time.Now())
		if _, err := b.js.PublishAsync(subject, data, jetstream.WithStallWait(time.Minute)); err != nil {
			return 0, 0, fmt.Errorf("publish message %d: %w", i+1, err)
		}
		payloadBytes += int64(len(data))
		rec.Subject, rec.Sequence, rec.Data = subject, uint64(i+1), data
		line = formats.AppendJSONRecord(line[:0], &rec, opts)
		w.JSONLinesBytes += int64(len(line)) + 1
		if i%4096 == 0 {
			select {
			case err := <-b.pubErrs:
				return 0, 0, fmt.Errorf("publish: %w", err)
			case <-ctx.Done():
				return 0, 0, ctx.Err()
			default:
			}
			if time.Since(lastReport) >= 5*time.Second {
				lastReport = time.Now()
				b.progress("%s: published %d of %d messages", spec.Name, i, spec.Messages)
			}
		}
	}
	if err := b.publishComplete(ctx); err != nil {
		return 0, 0, err
	}
	return payloadBytes, time.Since(start), nil
}

// publishComplete waits until every asynchronous publish is acked, and
// returns the first publish error, or ctx's.
func (b *bench) publishComplete(ctx context.Context) error {
	select {
	case <-b.js.PublishAsyncComplete():
	case err := <-b.pubErrs:
		return fmt.Errorf("publish: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-b.pubErrs:
		return fmt.Errorf("publish: %w", err)
	default:
	}
	return nil
}

// payloadGen makes the JSON payloads: an order-like event with the fields
// the typed parquet columns read, padded with words to the wanted size.
type payloadGen struct {
	rng  *rand.Rand
	size int
	keys int // more than 0: a "key" field of this many values
}

func newPayloadGen(size int, seed uint64) *payloadGen {
	return &payloadGen{rng: rand.New(rand.NewPCG(2026, seed)), size: size}
}

var (
	countries = []string{"DE", "FR", "US", "GB", "NL", "JP", "BR", "IN"}
	pages     = []string{"/", "/pricing", "/docs", "/blog/jetstream-to-s3", "/signup", "/checkout"}
	words     = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
		"juliett", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra",
		"tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu"}
)

// typedColumns are the typed parquet columns of the parquet_typed run, read
// from the fields next writes.
var typedColumns = []struct{ Name, Source, Type string }{
	{"order_id", "id", "int64"},
	{"user_id", "user.id", "string"},
	{"amount", "amount", "double"},
	{"paid", "paid", "boolean"},
	{"created_at", "created_at", "timestamp"},
}

// next returns the payload of message i, created at t.
func (g *payloadGen) next(i int, t time.Time) []byte {
	r := g.rng
	b := make([]byte, 0, g.size+32)
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(i+1), 10)
	if g.keys > 0 {
		b = fmt.Appendf(b, `,"key":"k-%06d"`, i%g.keys)
	}
	b = fmt.Appendf(b, `,"user":{"id":"u-%06d","country":%q},"amount":%d.%02d,"paid":%t,"created_at":%q,"page":%q,"note":"`,
		r.IntN(100000), countries[r.IntN(len(countries))], r.IntN(1000), r.IntN(100), r.IntN(4) != 0,
		t.UTC().Format("2006-01-02T15:04:05.000Z07:00"), pages[r.IntN(len(pages))])
	fixed := len(b)
	for n := 0; len(b) < g.size-2; n++ {
		if n > 0 {
			b = append(b, ' ')
		}
		b = append(b, words[r.IntN(len(words))]...)
	}
	if len(b) > g.size-2 && g.size-2 >= fixed {
		b = b[:g.size-2]
	}
	return append(b, `"}`...)
}
