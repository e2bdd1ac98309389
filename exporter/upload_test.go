package exporter

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/failure"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/metrics"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/pathtemplate"
)

// fakeMsg records what the exporter does with a message.
type fakeMsg struct {
	mu               sync.Mutex
	seq              uint64
	acks             int
	doubleAcks       int
	inProgress       int
	naks             int
	terms            int
	refuseInProgress bool   // InProgress fails, as on a broken connection
	reply            string // built once
	data             []byte
}

func (m *fakeMsg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: m.seq}, Stream: "S", Timestamp: time.Unix(0, 0)}, nil
}
func (m *fakeMsg) Data() []byte {
	if m.data == nil {
		return []byte(`{}`)
	}
	return m.data
}
func (m *fakeMsg) Headers() nats.Header { return nil }
func (m *fakeMsg) Subject() string      { return "s.a" }
func (m *fakeMsg) Reply() string {
	if m.reply == "" {
		m.reply = "$JS.ACK.S.c.1." + strconv.FormatUint(m.seq, 10) + "." + strconv.FormatUint(m.seq, 10) + ".1764399600123456789.0"
	}
	return m.reply
}
func (m *fakeMsg) count(p *int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	*p++
	return nil
}
func (m *fakeMsg) Ack() error                       { return m.count(&m.acks) }
func (m *fakeMsg) DoubleAck(context.Context) error  { return m.count(&m.doubleAcks) }
func (m *fakeMsg) Nak() error                       { return m.count(&m.naks) }
func (m *fakeMsg) NakWithDelay(time.Duration) error { return m.count(&m.naks) }
func (m *fakeMsg) InProgress() error {
	m.count(&m.inProgress)
	if m.refuseInProgress {
		return nats.ErrConnectionClosed
	}
	return nil
}
func (m *fakeMsg) Term() error                 { return m.count(&m.terms) }
func (m *fakeMsg) TermWithReason(string) error { return m.count(&m.terms) }
func (m *fakeMsg) snapshot() (acks, doubleAcks, inProgress int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.acks, m.doubleAcks, m.inProgress
}

// fakeAcker routes what the exporter sends to reply subjects to the fake
// messages those subjects belong to.
type fakeAcker struct {
	mu     sync.Mutex
	msgs   map[string]*fakeMsg
	silent bool // requests get no answer
}

func (a *fakeAcker) register(m *fakeMsg) jsclient.AckRef {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.msgs == nil {
		a.msgs = map[string]*fakeMsg{}
	}
	a.msgs[m.Reply()] = m
	return jsclient.AckRef(m.Reply())
}

func (a *fakeAcker) msg(subj string) *fakeMsg {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.msgs[subj]
}

func (a *fakeAcker) Publish(subj string, data []byte) error {
	m := a.msg(subj)
	if m == nil {
		return nil // a message the test does not watch
	}
	switch body := string(data); {
	case body == "+ACK":
		return m.Ack()
	case body == "+WPI":
		return m.InProgress()
	case strings.HasPrefix(body, "+TERM"):
		return m.Term()
	case strings.HasPrefix(body, "-NAK"):
		return m.Nak()
	}
	return fmt.Errorf("unexpected ack body %q", data)
}

func (a *fakeAcker) RequestWithContext(ctx context.Context, subj string, data []byte) (*nats.Msg, error) {
	m := a.msg(subj)
	if m == nil {
		return nil, fmt.Errorf("unexpected request %q to %s", data, subj)
	}
	a.mu.Lock()
	silent := a.silent
	a.mu.Unlock()
	if silent {
		// A link that stopped answering: what was sent is held somewhere.
		<-ctx.Done()
		return nil, ctx.Err()
	}
	switch string(data) {
	case "+ACK":
		return &nats.Msg{}, m.DoubleAck(ctx)
	case "+WPI":
		return &nats.Msg{}, m.InProgress()
	}
	return nil, fmt.Errorf("unexpected request %q to %s", data, subj)
}

func testExporter(t testing.TB, store objstore.ObjectStore) *session {
	t.Helper()
	enc, err := formats.New(formats.Options{Format: formats.JSONLines, Metadata: true})
	if err != nil {
		t.Fatal(err)
	}
	e := &Exporter{
		cfg:    &config.Connector{Name: "c", S3: config.S3{Prefix: "p"}, Output: config.Output{Format: "json_lines", PathTemplate: pathtemplate.MustParse("{subject}")}},
		log:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		store:  store,
		rejEnc: enc,
		m:      metrics.New(nil),
	}
	return &session{Exporter: e, enc: enc, acks: &fakeAcker{}, sink: objectSink{cfg: e.cfg}}
}

// sealedJob returns a sealed batch of n fake messages opened at opened.
func sealedJob(t *testing.T, e *session, n int, opened time.Time, ackWait time.Duration) (*job, []*fakeMsg) {
	t.Helper()
	set := buffer.New[jsclient.AckRef, formats.Record](e.enc.NewBatch, buffer.Limits{})
	var msgs []*fakeMsg
	for i := range n {
		m := &fakeMsg{seq: uint64(10 + i)}
		msgs = append(msgs, m)
		rec := formats.Record{Stream: "S", Subject: "s.a", Sequence: m.seq, Data: m.Data()}
		if err := set.Add([]byte("0\x00s.a"), []byte("s.a"), &rec, m.seq, rec.Time, e.acks.(*fakeAcker).register(m), opened); err != nil {
			t.Fatal(err)
		}
	}
	set.SealAll(buffer.ReasonCount)
	b := set.TakeSealed()[0]
	j := &job{batch: b, size: int64(b.Size()), enc: e.enc, format: "json_lines", set: set, progress: b.Opened,
		stream: newStreamWriter(e, config.Stream{Stream: "S", AckWait: ackWait})}
	j.confirmAt(b.Opened)
	return j, msgs
}

func TestUploadAcksEveryMessageOnceAfterTheStoreSucceeds(t *testing.T) {
	store := &MemStore{n: 2, err: errors.New("connection refused")}
	e := testExporter(t, store)
	j, msgs := sealedJob(t, e, 3, time.Now(), time.Minute)
	res := upload(context.Background(), e, j)
	if res.err != nil {
		t.Fatal(res.err)
	}
	if store.puts != 3 || len(store.keys) != 1 || store.keys[0] != "p/s.a/00000000000000000010-00000000000000000012.jsonl" {
		t.Fatalf("puts = %d, stored %q", store.puts, store.keys)
	}
	for i, m := range msgs {
		acks, doubles, _ := m.snapshot()
		last := i == len(msgs)-1
		if last && (acks != 0 || doubles != 1) || !last && (acks != 1 || doubles != 0) {
			t.Fatalf("message %d: %d acks, %d double acks", m.seq, acks, doubles)
		}
	}
}

func TestUploadNeverAcksOnAPermanentError(t *testing.T) {
	store := &MemStore{n: 1 << 30, err: &failure.Permanent{Code: "AccessDenied", Err: errors.New("access denied")}}
	e := testExporter(t, store)
	j, msgs := sealedJob(t, e, 3, time.Now(), time.Minute)
	res := upload(context.Background(), e, j)
	if !failure.IsPermanent(res.err) || store.puts != 1 {
		t.Fatalf("err = %v after %d puts; want a permanent error after 1", res.err, store.puts)
	}
	for _, m := range msgs {
		if acks, doubles, _ := m.snapshot(); acks+doubles != 0 {
			t.Fatalf("message %d acked after a permanent error", m.seq)
		}
	}
}

func TestUploadKeepsMessagesInProgressThenAbandonsAfterAckWait(t *testing.T) {
	store := &MemStore{n: 1 << 30, err: errors.New("503 SlowDown")}
	e := testExporter(t, store)
	// Opened 0.7 AckWait ago: the first attempt sends InProgress. The
	// messages refuse it, as a broken NATS connection would, so the AckWait
	// runs out and the batch must be abandoned: once too little of it is
	// left for an attempt (a tenth is kept for the time a delivery takes,
	// and an attempt needs a second more), not after it.
	const ackWait = 10 * time.Second
	opened := time.Now().Add(-7 * time.Second)
	j, msgs := sealedJob(t, e, 2, opened, ackWait)
	for _, m := range msgs {
		m.refuseInProgress = true
	}
	res := upload(context.Background(), e, j)
	if !errors.Is(res.err, ErrAbandoned) {
		t.Fatalf("err = %v, want ErrAbandoned", res.err)
	}
	if d := time.Since(opened); d < ackWait*8/10 || d > ackWait*9/10 {
		t.Fatalf("abandoned %s after the batch opened; want between 0.8 and 0.9 AckWait", d)
	}
	for _, m := range msgs {
		acks, doubles, inProgress := m.snapshot()
		if acks+doubles != 0 {
			t.Fatalf("message %d acked after its batch was abandoned", m.seq)
		}
		if inProgress == 0 {
			t.Fatalf("message %d got no InProgress while its upload retried", m.seq)
		}
	}
}

func TestUploadGivesUpWhenItsContextEnds(t *testing.T) {
	store := &MemStore{n: 1 << 30, err: errors.New("connection refused")}
	e := testExporter(t, store)
	j, msgs := sealedJob(t, e, 1, time.Now(), time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	res := upload(ctx, e, j)
	if res.err == nil {
		t.Fatal("upload succeeded with a store that always fails")
	}
	if acks, doubles, _ := msgs[0].snapshot(); acks+doubles != 0 {
		t.Fatal("message acked although nothing was stored")
	}
}

func TestUploadInProgressPostponesTheAckWait(t *testing.T) {
	// The store fails for more than one AckWait; InProgress keeps the batch alive
	// and it is acked once stored.
	store := &MemStore{n: 6, err: errors.New("503 SlowDown")}
	e := testExporter(t, store)
	const ackWait = 2 * time.Second
	j, msgs := sealedJob(t, e, 2, time.Now(), ackWait)
	res := upload(context.Background(), e, j)
	if res.err != nil {
		t.Fatalf("err = %v after %d puts", res.err, store.puts)
	}
	acks, doubles, inProgress := msgs[0].snapshot()
	if acks != 1 || doubles != 0 || inProgress == 0 {
		t.Fatalf("first message: %d acks, %d double acks, %d InProgress", acks, doubles, inProgress)
	}
}

// parquetTail keeps a parquet body's footer and trailer, and nothing of a
// body that is no parquet file.
func TestParquetTailIsTheFooter(t *testing.T) {
	enc, err := formats.New(formats.Options{Format: formats.Parquet})
	if err != nil {
		t.Fatal(err)
	}
	b := enc.NewBatch()
	for q := uint64(1); q <= 100; q++ {
		if err := b.Append(&formats.Record{Stream: "S", Subject: "s.a", Sequence: q, Data: []byte(`{"a":1}`)}); err != nil {
			t.Fatal(err)
		}
	}
	body, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	whole := body.Bytes()
	tail := iceberg.TailOf(body)
	if tail == nil || tail.Size != int64(len(whole)) || !bytes.HasSuffix(whole, tail.Bytes) || len(tail.Bytes) >= len(whole) {
		t.Fatalf("tail %+v of a %d-byte file", tail, len(whole))
	}
	if n := int(binary.LittleEndian.Uint32(tail.Bytes[len(tail.Bytes)-8:])); len(tail.Bytes) != n+8 || string(tail.Bytes[len(tail.Bytes)-4:]) != "PAR1" {
		t.Fatalf("the tail is not the %d-byte footer and its trailer", n)
	}
	if iceberg.TailOf(formats.NewBody([]byte("{\"a\":1}\n"))) != nil {
		t.Fatal("a JSON body has a parquet tail")
	}
}

// upload commits one batch, its acks included, as an uploader and the
// loop do between them.
func upload(ctx context.Context, e *session, j *job) *result {
	res := e.storeBatch(ctx, j)
	res.ack(ctx)
	return res
}
