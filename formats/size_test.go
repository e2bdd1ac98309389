package formats

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	realisticOnce sync.Once
	realisticPool []*Record
)

// realisticRecords returns a fixed pool of records whose payloads look like
// production events: several event types, nested objects, arrays of varying
// length, free text, ids that do not repeat, some headers.
func realisticRecords() []*Record {
	realisticOnce.Do(func() {
		r := rand.New(rand.NewPCG(1, 2))
		words := strings.Fields(`the quick brown fox jumps over lazy dog order payment shipped delivered
			warehouse customer priority express standard refund partial invoice gift wrap fragile
			morning evening weekend holiday discount coupon loyalty member premium basic`)
		names := []string{"Alice Martin", "Bob Nguyen", "Chloé Durand", "Dmitri Ivanov", "Eva Müller", "Farid Haddad", "Grace Kim", "Hiro Tanaka"}
		currencies := []string{"EUR", "USD", "GBP", "JPY", "CHF"}
		sentence := func(n int) string {
			var b strings.Builder
			for i := range n {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(words[r.IntN(len(words))])
			}
			return b.String()
		}
		start := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
		const n = 30_000
		realisticPool = make([]*Record, n)
		for i := range realisticPool {
			at := start.Add(time.Duration(i)*37*time.Millisecond + time.Duration(r.IntN(1000))*time.Microsecond)
			var data string
			subject := "events.order"
			switch k := r.IntN(10); {
			case k < 5:
				var items []string
				total := 0.0
				for range 1 + r.IntN(5) {
					price := float64(r.IntN(20000)) / 100
					qty := 1 + r.IntN(4)
					total += price * float64(qty)
					items = append(items, fmt.Sprintf(`{"sku": "SKU-%05d", "qty": %d, "price": %.2f, "name": %q}`, r.IntN(50000), qty, price, sentence(2+r.IntN(3))))
				}
				data = fmt.Sprintf(`{"id": "%016x", "type": "order.created", "at": %q, "customer": {"id": "c-%07d", "name": %q, "email": "user%d@example.com", "tier": %q},
  "items": [%s], "total": %.2f, "currency": %q, "paid": %v, "note": %q}`,
					r.Uint64(), at.Format(time.RFC3339Nano), r.IntN(2_000_000), names[r.IntN(len(names))], r.IntN(1_000_000),
					words[r.IntN(len(words))], strings.Join(items, ", "), total, currencies[r.IntN(len(currencies))], r.IntN(2) == 0, sentence(r.IntN(12)))
			case k < 8:
				subject = "events.click"
				data = fmt.Sprintf(`{"session":"%032x","user":{"id":%d,"anonymous":%v},"page":"/products/%d","ref":"https://example.com/search?q=%s","ts":%d,"viewport":[%d,%d],"ab":{"exp":"e%d","arm":%d}}`,
					r.Uint64(), r.IntN(1e9), r.IntN(5) == 0, r.IntN(100000), words[r.IntN(len(words))], at.UnixMilli(), 320+r.IntN(1600), 480+r.IntN(900), r.IntN(30), r.IntN(3))
			case k < 9:
				subject = "events.log"
				data = fmt.Sprintf("%s level=%s host=web-%02d msg=%q latency_ms=%d", at.Format(time.RFC3339Nano),
					[]string{"info", "warn", "error"}[r.IntN(3)], r.IntN(40), sentence(4+r.IntN(10)), r.IntN(5000))
			default:
				subject = "events.sensor"
				var readings []string
				for range 3 + r.IntN(10) {
					readings = append(readings, fmt.Sprintf("%.4f", r.NormFloat64()*10+20))
				}
				data = fmt.Sprintf(`{"device":"dev-%04d","readings":[%s],"battery":%.2f,"fw":"1.%d.%d"}`,
					r.IntN(5000), strings.Join(readings, ","), r.Float64(), r.IntN(10), r.IntN(100))
			}
			rec := &Record{Stream: "EVENTS", Subject: subject, Sequence: uint64(i + 1), Time: at, Data: []byte(data)}
			if r.IntN(3) == 0 {
				rec.Headers = map[string][]string{"Nats-Msg-Id": {fmt.Sprintf("m-%d", r.Uint64())}}
			}
			realisticPool[i] = rec
		}
	})
	return realisticPool
}

var (
	noisyOnce sync.Once
	noisyPool []*Record
)

// noisyRecords returns records that compress much worse than the
// realistic ones: JSON around long random hex strings.
func noisyRecords() []*Record {
	noisyOnce.Do(func() {
		r := rand.New(rand.NewPCG(3, 4))
		start := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
		noisyPool = make([]*Record, 10_000)
		for i := range noisyPool {
			var hex strings.Builder
			for range 4 + r.IntN(12) {
				fmt.Fprintf(&hex, "%016x", r.Uint64())
			}
			data := fmt.Sprintf(`{"id":"%016x","blob":"%s","n":%d}`, r.Uint64(), hex.String(), r.IntN(1e9))
			noisyPool[i] = &Record{Stream: "EVENTS", Subject: "events.blob", Sequence: uint64(i + 1),
				Time: start.Add(time.Duration(i) * time.Millisecond), Data: []byte(data)}
		}
	})
	return noisyPool
}

// recordSource cycles through the realistic records with rising sequences
// and times.
type recordSource struct {
	pool []*Record
	i    int
	r    Record
}

func (s *recordSource) next() *Record {
	p := s.pool[s.i%len(s.pool)]
	round := s.i / len(s.pool)
	s.r = *p
	s.r.Sequence = uint64(s.i + 1)
	s.r.Time = p.Time.Add(time.Duration(round) * time.Hour)
	s.i++
	return &s.r
}

// fill appends records from src to b as buffer.Set.Add does for a size
// limit, until b must be sealed. It returns the record that did not fit,
// if one did not.
func fill(t testing.TB, b Batch, src *recordSource, limit int) *Record {
	for {
		r := src.next()
		if err := b.Append(r); err != nil {
			t.Fatal(err)
		}
		if b.Len() > 1 && b.Size() > limit {
			b.DropLast()
			return r
		}
		if b.Size() >= limit {
			return nil
		}
	}
}

// sizeEncodings are the encodings whose size is an estimate.
func sizeEncodings() []Options {
	cols := []Column{
		{Name: "order_id", Source: "id", Type: TypeString},
		{Name: "total", Source: "total", Type: TypeDouble},
		{Name: "user_id", Source: "user.id", Type: TypeInt64},
		{Name: "at", Source: "at", Type: TypeTimestamp},
	}
	var all []Options
	for _, f := range []Format{JSONLines, JSONArray, Raw} {
		for _, c := range []Compression{Gzip, Zstd} {
			all = append(all, Options{Format: f, Compression: c, Metadata: true, Headers: true, RawDelimiter: []byte("\n")})
		}
	}
	for _, c := range []Compression{Snappy, Zstd, Gzip, None} {
		all = append(all, Options{Format: Parquet, Compression: c, Headers: true, Columns: cols, OnTypeError: NullTypeErrors})
	}
	return all
}

// TestSizeEstimatesLandNearTheLimit fills batches to 1 MiB and 8 MiB the
// way the buffer does, from the very first batch of a new encoder, and
// checks that every object is within 10% of the limit.
func TestSizeEstimatesLandNearTheLimit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("encodes about 1 GB")
	}
	limits := []struct {
		limit, batches int
	}{
		{1 << 20, 4},
		{8 << 20, 2},
	}
	if raceEnabled {
		limits = limits[:1] // the race detector makes 8 MiB batches take minutes
	}
	pool, noisy := realisticRecords(), noisyRecords()
	for _, opts := range sizeEncodings() {
		for _, l := range limits {
			t.Run(fmt.Sprintf("%s/%dMiB", encodingName(opts), l.limit>>20), func(t *testing.T) {
				t.Parallel()
				e, err := New(opts)
				if err != nil {
					t.Fatal(err)
				}
				src := &recordSource{pool: pool}
				b := e.NewBatch()
				var report []string
				for i := range l.batches + 2 {
					if i >= l.batches {
						// The data changes: it compresses worse, then
						// better again.
						src.pool = noisy
						if i == l.batches+1 {
							src.pool = pool
						}
					}
					left := fill(t, b, src, l.limit)
					est, mem := b.Size(), b.MemSize()
					body, err := bytesOf(b.Finish())
					if err != nil {
						t.Fatal(err)
					}
					off := float64(len(body))/float64(l.limit) - 1
					report = append(report, fmt.Sprintf("%+.1f%% (estimate %+.1f%%, %d records, memory %.1fx)",
						100*off, 100*(float64(est)/float64(len(body))-1), b.Len(), float64(mem)/float64(len(body))))
					if off < -0.10 || off > 0.10 {
						t.Errorf("batch %d: %d bytes, %+.1f%% off the %d limit", i, len(body), 100*off, l.limit)
					}
					b.Reset()
					if left != nil {
						if err := b.Append(left); err != nil {
							t.Fatal(err)
						}
					}
				}
				t.Logf("objects vs limit: %s", strings.Join(report, "; "))
			})
		}
	}
}

// A large record that does not compress is measured, not guessed from a
// ratio learned on other records: Size says right away that it holds about
// its own size, so a batch cut at the target puts it alone.
func TestALargeRecordIsMeasuredNotGuessed(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	big := make([]byte, 2<<20)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	for _, c := range []Compression{Gzip, Zstd} {
		enc, err := New(Options{Format: Raw, RawDelimiter: []byte("\n"), Compression: c, TargetSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		b := enc.NewBatch()
		small := &Record{Data: []byte(`{"a small": "and compressible record"}`)}
		for range 100 {
			if err := b.Append(small); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Append(&Record{Data: big}); err != nil {
			t.Fatal(err)
		}
		if got := b.Size(); got < len(big) {
			t.Errorf("%s: Size = %d with a record of %d random bytes: it is guessed, not measured", c, got, len(big))
		}
		b.DropLast()
		if got := b.Size(); got > 4096 {
			t.Errorf("%s: Size = %d after the large record was dropped", c, got)
		}
		body, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if body.Len() > 4096 {
			t.Errorf("%s: %d bytes for 100 small records", c, body.Len())
		}
	}
}

// largeAndSmallRecords returns n records drawn with rng: one in twenty a
// JSON document of 300 to 600 KB that compresses well, the others 1 KiB of
// random bytes, which json_lines writes as base64 and which compress
// badly.
func largeAndSmallRecords(rng *rand.Rand, n int) []*Record {
	recs := make([]*Record, n)
	for i := range recs {
		var data []byte
		if rng.IntN(20) == 0 {
			size := 300_000 + rng.IntN(300_000)
			data = append(make([]byte, 0, size+16), `{"words":"`...)
			for len(data) < size {
				data = fmt.Appendf(data, "word%d ", rng.IntN(100))
			}
			data = append(data, `"}`...)
		} else {
			data = make([]byte, 1024)
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
		}
		recs[i] = &Record{Stream: "EVENTS", Subject: "events.mixed", Sequence: uint64(i + 1), Data: data}
	}
	return recs
}

// Small records that compress badly, between large ones that compress
// well: the large ones are measured on their own, and the ratio that
// guesses the small ones must not be learned from them, or a batch cut at
// the limit is far larger than the limit. Batches are filled as
// buffer.Set.Add fills them, with the exporter's options (chunks taken and
// compressed after every append), and with every chunk left to Finish.
func TestBadlyCompressingRecordsBetweenLargeOnesStayNearTheLimit(t *testing.T) {
	t.Parallel()
	const limit = 256 << 10
	recs := largeAndSmallRecords(rand.New(rand.NewPCG(11, 12)), 1200)
	for _, c := range []Compression{Zstd, Gzip} {
		for _, tc := range []struct {
			name       string
			compressed bool // chunks are taken and compressed after every append
		}{
			{"compressed after each append", true},
			{"compressed by Finish", false},
		} {
			t.Run(fmt.Sprintf("%s/%s", c, tc.name), func(t *testing.T) {
				t.Parallel()
				e, err := New(Options{Compression: c, Metadata: true, DeferCompression: true, TargetSize: limit})
				if err != nil {
					t.Fatal(err)
				}
				src := e.(ChunkSource)
				var chunks []*Chunk
				b := e.NewBatch()
				worst, objects := 0.0, 0
				seal := func() {
					n := b.Len()
					body, err := b.Finish()
					if err != nil {
						t.Fatal(err)
					}
					objects++
					r := float64(body.Len()) / limit
					if n > 1 {
						worst = max(worst, r)
						if r > 1.1 {
							t.Errorf("object %d: %d records in %d bytes, %.2f × the %d limit", objects, n, body.Len(), r, limit)
						}
					}
					b.Reset()
				}
				for _, r := range recs {
					if err := b.Append(r); err != nil {
						t.Fatal(err)
					}
					if tc.compressed {
						chunks = src.TakeChunks(chunks[:0])
						for _, c := range chunks {
							c.Compress()
						}
					}
					if b.Len() > 1 && b.Size() > limit {
						b.DropLast()
						seal()
						if err := b.Append(r); err != nil {
							t.Fatal(err)
						}
					}
					if b.Size() >= limit {
						seal()
					}
				}
				t.Logf("%d objects; the largest of more than one record is %.3f × the limit", objects, worst)
			})
		}
	}
}

// randomBase64Records returns n payloads of random base64 text of about
// size bytes: JSON Lines writes them as strings that compress little.
func randomBase64Records(rng *rand.Rand, n, size int) []*Record {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	recs := make([]*Record, n)
	for i := range recs {
		data := make([]byte, size-50+rng.IntN(100))
		for j := range data {
			data[j] = alphabet[rng.IntN(len(alphabet))]
		}
		recs[i] = &Record{Stream: "EVENTS", Subject: "events.blob", Sequence: uint64(i + 1), Data: data}
	}
	return recs
}

// The first object of a new encoder holds records whose compression is
// not known yet: whether they compress well or hardly at all, it stays
// within 1.1 × the limit, as every object after it does. Batches are
// filled as buffer.Set.Add fills them, with the exporter's options, with
// chunks compressed after every append and with every chunk left to
// Finish, for limits smaller than, equal to and larger than a chunk.
func TestTheFirstObjectStaysWithinTheLimitWhateverTheRecordsCompressTo(t *testing.T) {
	t.Parallel()
	pools := []struct {
		name string
		recs []*Record
	}{
		{"random base64", randomBase64Records(rand.New(rand.NewPCG(21, 22)), 1200, 1400)},
		{"realistic JSON", realisticRecords()},
	}
	for _, pool := range pools {
		for _, c := range []Compression{Zstd, Gzip} {
			for _, limit := range []int{64 << 10, 256 << 10, 1 << 20} {
				for _, compressed := range []bool{true, false} {
					name := fmt.Sprintf("%s/%s/%dKiB/compressed-after-append=%v", pool.name, c, limit>>10, compressed)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						e, err := New(Options{Format: JSONLines, Compression: c, Metadata: true, DeferCompression: true, TargetSize: int64(limit)})
						if err != nil {
							t.Fatal(err)
						}
						src := e.(ChunkSource)
						var chunks []*Chunk
						b := e.NewBatch()
						var sizes []string
						objects := 0
						seal := func() {
							n := b.Len()
							body, err := b.Finish()
							if err != nil {
								t.Fatal(err)
							}
							objects++
							r := float64(body.Len()) / float64(limit)
							sizes = append(sizes, fmt.Sprintf("%.2f", r))
							if n > 1 && r > 1.1 {
								t.Errorf("object %d: %d records in %d bytes, %.2f × the %d limit", objects, n, body.Len(), r, limit)
							}
							b.Reset()
						}
						for _, r := range pool.recs {
							if objects == 3 {
								break
							}
							if err := b.Append(r); err != nil {
								t.Fatal(err)
							}
							if compressed {
								chunks = src.TakeChunks(chunks[:0])
								for _, c := range chunks {
									c.Compress()
								}
							}
							if b.Len() > 1 && b.Size() > limit {
								b.DropLast()
								seal()
								if err := b.Append(r); err != nil {
									t.Fatal(err)
								}
							}
							if b.Size() >= limit {
								seal()
							}
						}
						t.Logf("objects / limit: %s", strings.Join(sizes, " "))
					})
				}
			}
		}
	}
}
