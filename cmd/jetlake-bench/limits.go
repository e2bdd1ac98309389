package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/pathtemplate"
)

// pullBatch is how many messages a pull request asks for, as jetlake does.
const pullBatch = 1000

// limitKey is the key of an upload limit's object i: under prefix, in the
// directory of subject i mod subjects laid out as jetlake's path template
// {stream}/{subject}/{date}/{hour} lays it out, and named by a sequence
// range as jetlake names its objects.
func limitKey(prefix string, i int64, subjects int) string {
	dir := fmt.Sprintf("BENCH/bench.s%05d/2026-12-01/00", i%int64(max(subjects, 1)))
	return string(pathtemplate.AppendKey(nil, prefix, []byte(dir), uint64(i+1), uint64(i+1), "jsonl"))
}

// maxAckPending is the consume limit's MaxAckPending: what jetlake derives
// for a consumer from the rotation settings, or the one set with
// -max-ack-pending. The limit acks as it goes, so it never has more than a
// pull's worth.
func (b *bench) maxAckPending() int {
	if b.cfg.MaxAckPending > 0 {
		return b.cfg.MaxAckPending
	}
	return config.DerivedAckPending(config.Rotation{MaxBufferedBytes: b.cfg.MaxBufferedBytes, MaxMessagesPerFile: b.cfg.MaxMessages})
}

// ackWait is the AckWait of every consumer: the least jetlake allows with
// the max_file_age, so that a message lost on its way costs as little as
// can be.
func (b *bench) ackWait() time.Duration {
	return max(time.Minute, 2*b.cfg.MaxFileAge)
}

// pullBytes is the byte limit jetlake gives its pull requests for one
// stream.
func (b *bench) pullBytes() int {
	return int(min(max(b.cfg.MaxBufferedBytes/8, 64<<10), 16<<20))
}

// consumeLimit reads the whole stream with a plain durable pull consumer
// that acks every message and does nothing else: the fastest jetlake could
// consume on this machine. The consumer is created fresh and deleted after.
// The time runs until the server has every ack.
func (b *bench) consumeLimit(ctx context.Context, w *WorkloadResult, round int) (*Limit, error) {
	name := fmt.Sprintf("bench-consume-%s-r%d", w.Name, round)
	cons, err := b.limitConsumer(ctx, w.Stream, jetstream.ConsumerConfig{
		Durable:       name,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       b.ackWait(),
		MaxDeliver:    -1,
		MaxAckPending: b.maxAckPending(),
	})
	if err != nil {
		return nil, err
	}
	defer b.deleteConsumer(ctx, w.Stream, name)

	// Consume hands messages to a callback through the subscription's
	// own queue. (The Messages iterator, which jetlake uses, queues them
	// in a channel only as large as the pull batch; when the reader falls
	// behind, the client drops what does not fit as a slow consumer and
	// the server redelivers it only after AckWait.)
	slow := b.slow.Load()
	var got, redelivered atomic.Int64
	done := make(chan struct{})
	errs := make(chan error, 1)
	start, startCPU := time.Now(), b.serverCPU()
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		if md, err := msg.Metadata(); err == nil && md.NumDelivered > 1 {
			redelivered.Add(1)
		} else if got.Add(1) == int64(w.Messages) {
			close(done)
		}
		if err := msg.Ack(); err != nil {
			select {
			case errs <- fmt.Errorf("ack: %w", err):
			default:
			}
		}
	}, jetstream.PullMaxMessagesWithBytesLimit(pullBatch, b.pullBytes()))
	if err != nil {
		return nil, fmt.Errorf("consume: %w", err)
	}
	defer cc.Stop()
	select {
	case <-done:
	case err := <-errs:
		return nil, err
	case <-ctx.Done():
		return nil, fmt.Errorf("consume after %d messages: %w", got.Load(), ctx.Err())
	}
	cc.Stop()
	if err := b.nc.FlushWithContext(ctx); err != nil {
		return nil, fmt.Errorf("flush acks: %w", err)
	}
	if err := waitAcked(ctx, cons, uint64(w.Messages)); err != nil {
		return nil, err
	}
	l := &Limit{Seconds: time.Since(start).Seconds(), Messages: w.Messages,
		Redeliveries: int(redelivered.Load()), SlowConsumer: int(b.slow.Load() - slow)}
	b.since(startCPU, &l.NATSCPUSeconds, &l.MinIOCPUSeconds)
	l.MessagesPerSecond = float64(w.Messages) / l.Seconds
	b.progress("%s: consume limit %s (%s msg/s)", w.Name, fmtSeconds(l.Seconds), fmtInt(int64(l.MessagesPerSecond)))
	return l, nil
}

// ackNoneRead reads the whole stream as consumeLimit does, with a consumer
// that takes no acks (AckPolicy None) kept where the consume limit's is:
// the server keeps no pending set for it and gets no ack messages, which
// is what a cursor with progress kept by jetlake alone would save it.
func (b *bench) ackNoneRead(ctx context.Context, w *WorkloadResult, round int) (*Limit, error) {
	name := fmt.Sprintf("bench-acknone-%s-r%d", w.Name, round)
	cons, err := b.limitConsumer(ctx, w.Stream, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckNonePolicy})
	if err != nil {
		return nil, err
	}
	defer b.deleteConsumer(ctx, w.Stream, name)
	var got atomic.Int64
	done := make(chan struct{})
	start, startCPU := time.Now(), b.serverCPU()
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		if got.Add(1) == int64(w.Messages) {
			close(done)
		}
	}, jetstream.PullMaxMessagesWithBytesLimit(pullBatch, b.pullBytes()))
	if err != nil {
		return nil, fmt.Errorf("consume: %w", err)
	}
	defer cc.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("read after %d messages: %w", got.Load(), ctx.Err())
	}
	cc.Stop()
	l := &Limit{Seconds: time.Since(start).Seconds(), Messages: w.Messages}
	b.since(startCPU, &l.NATSCPUSeconds, &l.MinIOCPUSeconds)
	l.MessagesPerSecond = float64(w.Messages) / l.Seconds
	b.progress("%s: ack-none read %s (%s msg/s)", w.Name, fmtSeconds(l.Seconds), fmtInt(int64(l.MessagesPerSecond)))
	return l, nil
}

// limitConsumer creates cfg, a consumer of a limit, on stream: delivering
// the whole stream, in the storage of the bench's consumers.
func (b *bench) limitConsumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	cfg.MemoryStorage = b.cfg.ConsumerStorage == config.StorageMemory
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cons, err := b.js.CreateConsumer(cctx, stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", cfg.Durable, err)
	}
	return cons, nil
}

// waitAcked polls the consumer until its ack floor reaches last.
func waitAcked(ctx context.Context, cons jetstream.Consumer, last uint64) error {
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			return fmt.Errorf("consumer info: %w", err)
		}
		if info.AckFloor.Stream >= last && info.NumAckPending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the acks (ack floor %d of %d): %w", info.AckFloor.Stream, last, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (b *bench) deleteConsumer(ctx context.Context, stream, name string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := b.js.DeleteConsumer(dctx, stream, name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		b.progress("delete consumer %s of %s: %v", name, stream, err)
	}
}

// uploadClient is a minio-go client set up as jetlake's store sets up its
// own: path-style, one attempt per call.
func uploadClient(ms *exportertest.MinIOServer) (*minio.Client, error) {
	return minio.New("127.0.0.1:"+strconv.Itoa(ms.Port), &minio.Options{
		Creds:        credentials.NewStaticV4(ms.AccessKey, ms.SecretKey, ""),
		Region:       exportertest.MinIORegion,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   1,
		// As jetlake's client: it passes the x-amz-checksum-crc32c header.
		TrailingHeaders: true,
	})
}

// uploadsInFlight is how many uploads jetlake has in flight for objects of
// objSize bytes with upload_concurrency c: c, and four times as many for
// objects of up to 1 MiB (exporter.smallUpload, smallUploads).
func uploadsInFlight(c int, objSize int64) int {
	if objSize <= 1<<20 {
		return 4 * c
	}
	return c
}

// crc32cHeader returns the x-amz-checksum-crc32c value of body.
func crc32cHeader(body []byte) string {
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// uploadLimit stores total bytes in objects of objSize bytes (the last one
// smaller) with the connector's upload concurrency, using the PutObject
// options jetlake uses (single part, x-amz-checksum-crc32c, unsigned
// payload, If-None-Match: *), as many at once as jetlake has in flight for
// objects of that size. The objects go round the directories jetlake's
// path template makes of the workload's subjects (limitKey), since MinIO's
// cost of an object grows with the directories it creates on disk for it.
func (b *bench) uploadLimit(ctx context.Context, prefix string, total, objSize int64, subjects int) (*Limit, error) {
	if total <= 0 || objSize <= 0 {
		return nil, fmt.Errorf("nothing to upload (%d bytes in objects of %d)", total, objSize)
	}
	objSize = min(objSize, total)
	n := ceilDiv(total, objSize)
	body := make([]byte, 0, objSize+int64(b.cfg.PayloadBytes)+1)
	gen := newPayloadGen(b.cfg.PayloadBytes, 1)
	now := time.Now()
	for i := 0; int64(len(body)) < objSize; i++ {
		body = append(body, gen.next(i, now)...)
		body = append(body, '\n')
	}
	body = body[:objSize]
	sums := map[int64]string{objSize: crc32cHeader(body)}
	if last := total - (n-1)*objSize; last != objSize {
		sums[last] = crc32cHeader(body[:last])
	}
	conc := uploadsInFlight(b.cfg.UploadConcurrency, objSize)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idx := make(chan int64)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	start, startCPU := time.Now(), b.serverCPU()
	for range conc {
		wg.Go(func() {
			for i := range idx {
				size := min(objSize, total-i*objSize)
				opts := minio.PutObjectOptions{
					ContentType:          "application/x-ndjson",
					UserMetadata:         map[string]string{"x-amz-checksum-crc32c": sums[size]},
					DisableMultipart:     true,
					DisableContentSha256: true,
				}
				opts.SetMatchETagExcept("*")
				key := limitKey(prefix, i, subjects)
				if _, err := b.s3.PutObject(ctx, bucket, key, bytes.NewReader(body[:size]), size, opts); err != nil {
					once.Do(func() { firstErr = fmt.Errorf("put %s: %w", key, err); cancel() })
					return
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case idx <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(idx)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l := &Limit{Seconds: time.Since(start).Seconds(), Objects: int(n), ObjectBytes: objSize, Bytes: total, InFlight: conc}
	b.since(startCPU, &l.NATSCPUSeconds, &l.MinIOCPUSeconds)
	l.MBPerSecond = float64(total) / 1e6 / l.Seconds
	l.ObjectsPerSecond = float64(n) / l.Seconds
	b.progress("%s: upload limit %s for %d objects of %s (%.1f MB/s)",
		prefix, fmtSeconds(l.Seconds), n, fmtBytes(objSize), l.MBPerSecond)
	return l, nil
}

// smallObjects returns the bytes and the object size of the upload limit
// with jetlake's objects, and what the size was taken from; 0 bytes when it
// is not measured. It is measured as many objects of the mean size as the
// json_lines run wrote when that is many more than the upload limit's
// objects, and always for a workload of small objects: there, without a
// json_lines run to go by, as an object per subject (at most maxFileSize).
func (w *workloadState) smallObjects(runs []*RunResult, u *Limit, maxFileSize int64) (total, size int64, from string) {
	for _, r := range runs {
		if r.Name == runJSONLines && succeeded(r) && r.Objects > 0 && (w.spec.SmallObjects || r.Objects > 2*u.Objects) {
			return r.Bytes, ceilDiv(r.Bytes, int64(r.Objects)), "json_lines' objects"
		}
	}
	if w.spec.SmallObjects && w.res.JSONLinesBytes > 0 {
		return w.res.JSONLinesBytes, min(ceilDiv(w.res.JSONLinesBytes, int64(w.spec.Subjects)), maxFileSize), "an object per subject"
	}
	return 0, 0, ""
}
