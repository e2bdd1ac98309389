package exporter_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/metrics"
	"github.com/jetlake/jetlake/pathtemplate"
)

// backfillDays are the days the payloads of publishBackfill are from.
var backfillDays = []string{"2026-11-01", "2026-11-02", "2026-11-03"}

// publishBackfill publishes perDay messages for each of backfillDays,
// interleaved, each with created_at and a tenant of four, then noTime
// messages without created_at. It returns the last sequence.
func (e *env) publishBackfill(perDay, noTime int) uint64 {
	e.t.Helper()
	n := perDay * len(backfillDays)
	return e.publishEach(n+noTime, func(i int) (string, []byte) {
		subj := fmt.Sprintf("%s.s%d", e.stream, i%3)
		if i >= n {
			return subj, fmt.Appendf(nil, `{"i":%d,"tenant":"t%d"}`, i, i%4)
		}
		day := backfillDays[i%len(backfillDays)]
		return subj, fmt.Appendf(nil, `{"i":%d,"tenant":"t%d","created_at":"%sT%02d:%02d:00+00:00"}`, i, i%4, day, i%24, i%60)
	})
}

// eventTimeConnector partitions by created_at's day and by tenant.
func eventTimeConnector(c *config.Connector) {
	c.Output.PathTemplate = pathtemplate.MustParse("{stream}/dt={date}/tenant={column:tenant}")
	c.Output.GroupBy = config.GroupByPath
	c.Output.Columns = []config.Column{
		{Name: "created_at", Source: "created_at", Type: formats.TypeTimestamp},
		{Name: "tenant", Source: "tenant", Type: formats.TypeString},
	}
	c.Output.Time = config.EventTime{Column: "created_at"}
}

// eventRecord is a JSON Lines record of the backfill.
type eventRecord struct {
	Sequence uint64 `json:"sequence"`
	Payload  struct {
		Tenant    string `json:"tenant"`
		CreatedAt string `json:"created_at"`
	} `json:"payload"`
}

// recordsByDir decodes the JSON Lines data objects under prefix by
// directory (the key without prefix and object name).
func (e *env) recordsByDir(prefix string) map[string][]eventRecord {
	e.t.Helper()
	out := map[string][]eventRecord{}
	for key, body := range e.objects(prefix) {
		if strings.HasPrefix(key, prefix+"_jetlake/") {
			continue
		}
		dir := strings.TrimPrefix(path.Dir(key), prefix)
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			var r eventRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				e.t.Fatalf("%s: %v", key, err)
			}
			out[dir] = append(out[dir], r)
		}
	}
	return out
}

func TestEventTimePartitionsABackfillByDay(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_file_size = "1MiB"
max_file_age = "20s"`)
	e.metrics = metrics.New(nil)
	const perDay, noTime = 1000, 7
	last := e.publishBackfill(perDay, noTime)
	start := time.Now().UTC()
	c := e.runVariant("ev", eventTimeConnector)

	dirs := e.recordsByDir("ev/")
	perDir := map[string]int{}
	seen := map[uint64]bool{}
	for dir, recs := range dirs {
		for _, r := range recs {
			if seen[r.Sequence] {
				t.Fatalf("sequence %d twice", r.Sequence)
			}
			seen[r.Sequence] = true
			// Every record lies in the directory of its own day and tenant.
			want := fmt.Sprintf("%s/dt=%s/tenant=%s", e.stream, strings.Split(r.Payload.CreatedAt, "T")[0], r.Payload.Tenant)
			if r.Payload.CreatedAt == "" {
				want = fmt.Sprintf("%s/dt=%s/tenant=%s", e.stream, start.Format(time.DateOnly), r.Payload.Tenant)
			}
			if dir != want && !(r.Payload.CreatedAt == "" && strings.HasPrefix(dir, e.stream+"/dt=") && strings.HasSuffix(dir, "/tenant="+r.Payload.Tenant)) {
				t.Fatalf("sequence %d (created_at %q, tenant %s) is in %s, want %s", r.Sequence, r.Payload.CreatedAt, r.Payload.Tenant, dir, want)
			}
			perDir[strings.Split(dir, "/")[1]]++
		}
	}
	if uint64(len(seen)) != last {
		t.Fatalf("%d sequences exported, want %d", len(seen), last)
	}
	for _, day := range backfillDays {
		if perDir["dt="+day] != perDay {
			t.Errorf("dt=%s holds %d records, want %d (by day: %v)", day, perDir["dt="+day], perDay, perDir)
		}
	}
	// The messages without created_at took their ingest day, and were
	// counted.
	fallback := testutil.ToFloat64(e.metrics.EventTimeFallback.WithLabelValues(c.Name, e.stream))
	if fallback != noTime {
		t.Errorf("event_time_fallback_total = %v, want %d", fallback, noTime)
	}
	if got := len(seen) - 3*perDay; got != noTime {
		t.Errorf("%d records outside the backfill's days, want %d", got, noTime)
	}
	// Interleaved directories each fill a buffer of their own: one object
	// each here, not one per change of directory.
	objects := 0
	for key := range e.objects("ev/") {
		if !strings.HasPrefix(key, "ev/_jetlake/") {
			objects++
		}
	}
	if objects != len(dirs) {
		t.Errorf("%d data objects in %d directories, want one each", objects, len(dirs))
	}
	e.verify(c)
}

func TestEventTimeFallbackRejectSetsMessagesAside(t *testing.T) {
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_file_size = "1MiB"
max_file_age = "20s"`)
	e.metrics = metrics.New(nil)
	const perDay, noTime = 100, 5
	last := e.publishBackfill(perDay, noTime)
	c := e.runVariant("rej", func(c *config.Connector) {
		eventTimeConnector(c)
		c.Output.Time.Reject = true
	})
	data := 0
	for _, recs := range e.recordsByDir("rej/") {
		data += len(recs)
	}
	if data != 3*perDay {
		t.Errorf("%d records in data objects, want %d", data, 3*perDay)
	}
	rejected := 0
	for key, body := range e.objects("rej/_jetlake/rejected/") {
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			var r struct {
				Headers map[string][]string `json:"headers"`
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			reason := r.Headers[exporter.RejectReasonHeader]
			if len(reason) != 1 || !strings.Contains(reason[0], "no event time") || !strings.Contains(reason[0], "created_at") {
				t.Errorf("%s: reason %q does not say the event time is missing", key, reason)
			}
			rejected++
		}
	}
	if rejected != noTime {
		t.Errorf("%d messages rejected, want %d", rejected, noTime)
	}
	if got := testutil.ToFloat64(e.metrics.Rejected.WithLabelValues(c.Name, e.stream, "event_time")); got != noTime {
		t.Errorf("messages_rejected_total{reason=event_time} = %v, want %d", got, noTime)
	}
	if got := testutil.ToFloat64(e.metrics.EventTimeFallback.WithLabelValues(c.Name, e.stream)); got != 0 {
		t.Errorf("event_time_fallback_total = %v with time_fallback reject", got)
	}
	if r := e.verify(c)[0]; r.Scope.Last != last || r.RejectedMessages != noTime || r.Messages != 3*perDay {
		t.Errorf("verify: scope %v, %d messages, %d rejected; want up to %d, %d and %d", r.Scope, r.Messages, r.RejectedMessages, last, 3*perDay, noTime)
	}
}
