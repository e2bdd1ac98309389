package lake

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/lossmarker"
	"github.com/jetlake/jetlake/pathtemplate"
)

// What the lake holds of a stream, that an export record is rebuilt from,
// is the objects of that stream's name and creation time, its rejected
// objects, and the markers of its consumer written after the stream was
// created: not another stream's, not an earlier stream's of the same name,
// not another consumer's object or marker, not a file that is not jetlake's.
func TestReadExportedTakesOnlyThisStreamsObjectsAndThisConsumersMarkers(t *testing.T) {
	const prefix, stream, consumer = "lake", "S", "c"
	created := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	earlier := created.Add(-time.Hour)
	var st mapStore
	// data puts a data object of the sequences first to last, or of
	// sparse when it is not nil.
	data := func(dir string, first, last uint64, stream string, created time.Time, sparse []progress.Range, consumer ...string) {
		md := map[string]string{objstore.MetaStream: stream, objstore.MetaStreamCreated: created.Format(time.RFC3339Nano),
			objstore.MetaIntent: "I", objstore.MetaFirstSeq: itoa(first), objstore.MetaLastSeq: itoa(last)}
		if len(consumer) > 0 {
			md[objstore.MetaConsumer] = consumer[0]
		}
		if sparse != nil {
			s := progress.SeqsOf(sparse)
			enc, _ := s.MarshalJSON()
			objstore.SetSeqs(md, enc)
			md[objstore.MetaCount] = itoa(uint64(s.Len()))
		} else {
			md[objstore.MetaCount] = itoa(last - first + 1)
		}
		st.put(string(pathtemplate.AppendKey(nil, prefix, []byte(dir), first, last, ".jsonl")), []byte("{}"), md)
	}
	marker := func(first, last uint64, consumer string, detected time.Time) {
		m := &lossmarker.Marker{Stream: stream, Consumer: consumer, FirstSeq: first, LastSeq: last, Count: last - first + 1,
			Reason: lossmarker.Gap, Error: "x", DetectedAt: detected}
		body, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		st.put(m.Key(prefix), body, map[string]string{objstore.MetaStream: stream, objstore.MetaConsumer: consumer})
	}
	data("S/a", 1, 10, stream, created, nil, consumer)
	data("S/b", 11, 20, stream, created, nil)          // written before objects named their consumer
	data("S/d", 70, 80, stream, created, nil, "other") // another connector's, sharing the prefix
	data("S/c", 30, 40, stream, created, []progress.Range{{First: 30, Last: 32}, {First: 38, Last: 40}})
	data("T/a", 21, 29, "T", created, nil)             // another stream
	data("S/old", 41, 50, stream, earlier, nil)        // an earlier stream of the same name
	marker(21, 25, consumer, created.Add(time.Minute)) // this consumer's
	marker(26, 27, "other", created.Add(time.Minute))  // another consumer's
	marker(28, 28, consumer, earlier)                  // of the earlier stream
	rej := pathtemplate.AppendRejectedDir(nil, stream, created)
	data(string(rej), 60, 60, stream, created, nil)
	st.put(prefix+"/S/a/notes.txt", []byte("x"), nil) // not jetlake's

	x, err := ReadExported(context.Background(), &config.Connector{S3: config.S3{Prefix: prefix}}, stream, created, []string{consumer}, nil, &st)
	if err != nil {
		t.Fatal(err)
	}
	want := []progress.Range{{First: 1, Last: 25}, {First: 30, Last: 32}, {First: 38, Last: 40}, {First: 60, Last: 60}}
	if got := x.Seqs.Runs(); !slices.Equal(got, want) {
		t.Errorf("sequences %v, want %v", got, want)
	}
	if x.Objects != 3 || x.Rejected != 1 || x.Markers != 1 || x.Unknown != 0 || x.Last() != 60 {
		t.Errorf("objects %d, rejected %d, markers %d, unknown %d, last %d; want 3, 1, 1, 0, 60", x.Objects, x.Rejected, x.Markers, x.Unknown, x.Last())
	}
}

func itoa(q uint64) string { return strconv.FormatUint(q, 10) }
