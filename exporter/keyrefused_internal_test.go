package exporter

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/buffer"
	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/pathtemplate"
)

// A key the store refuses is refused again: the upload gives up at once,
// with a KeyError and nothing acked, where another error is retried until
// the AckWait runs out. A key too long for any store is not even sent.
func TestUploadGivesUpAtOnceOnAKeyTheStoreRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		dir  string
		puts int
	}{
		{"a segment of 256 bytes", strings.Repeat("x", 256), 1},
		{"a key of more than 1024 bytes", strings.Repeat("x/", 520), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &MemStore{}
			e := testExporter(t, store)
			set := buffer.New[jsclient.AckRef, formats.Record](e.enc.NewBatch, buffer.Limits{})
			m := &fakeMsg{seq: 10}
			rec := formats.Record{Stream: "S", Subject: "s.a", Sequence: m.seq, Data: m.Data()}
			if err := set.Add([]byte("0\x00"+tt.dir), []byte(tt.dir), &rec, m.seq, rec.Time, e.acks.(*fakeAcker).register(m), time.Now()); err != nil {
				t.Fatal(err)
			}
			set.SealAll(buffer.ReasonCount)
			b := set.TakeSealed()[0]
			j := &job{batch: b, size: int64(b.Size()), enc: e.enc, format: "json_lines", set: set, progress: b.Opened,
				stream: newStreamWriter(e, config.Stream{Stream: "S", AckWait: time.Minute})}
			j.confirmAt(b.Opened)
			start := time.Now()
			res := upload(context.Background(), e, j)
			var ke *objstore.KeyError
			if !errors.As(res.err, &ke) || store.puts != tt.puts || res.status.isStored() {
				t.Fatalf("err = %v after %d puts, stored %v; want a KeyError after %d", res.err, store.puts, res.status.isStored(), tt.puts)
			}
			if tt.puts == 0 && !errors.Is(res.err, pathtemplate.ErrKeyTooLong) {
				t.Errorf("err = %v, want it to wrap ErrKeyTooLong", res.err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("gave up after %s, want at once", d)
			}
			if acks, doubles, _ := m.snapshot(); acks+doubles != 0 {
				t.Error("the message was acked")
			}
			if got := errorKind(res.err); got != "key" {
				t.Errorf("errorKind = %q, want key", got)
			}
		})
	}
}
