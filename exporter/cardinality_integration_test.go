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

// TestAFloodOfDistinctValuesBeyondTheCapEndsInRejectedObjects: a
// connector partitioned by a payload field, capped at 100 directories,
// reads four tenants' messages among a flood of 3,000 distinct values. The
// tenants' messages are all exported in their directories; the flood
// fills the places left, and the rest of it is in a few rejected objects
// with the reason cardinality, counted; verify finds every sequence once.
func TestAFloodOfDistinctValuesBeyondTheCapEndsInRejectedObjects(t *testing.T) {
	t.Parallel()
	const window = 30 * time.Second
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_file_size = "1MiB"
max_file_age = "30s"`)
	e.metrics = metrics.New(nil)
	const limit, tenants, good, flood = 100, 4, 2000, 3000
	// Two messages in five are the tenants', in turn; the rest are the
	// flood's, a value each. The tenants' directories are open before the
	// flood fills the cap.
	last := e.publishEach(good+flood, func(i int) (string, []byte) {
		subj := fmt.Sprintf("%s.s%d", e.stream, i%3)
		if i%5 < 2 {
			return subj, fmt.Appendf(nil, `{"i":%d,"tenant":"t%d"}`, i, (i/5*2+i%5)%tenants)
		}
		return subj, fmt.Appendf(nil, `{"i":%d,"tenant":"flood-%d"}`, i, i)
	})
	start := time.Now()
	c := e.runVariant("card", func(c *config.Connector) {
		c.Output.PathTemplate = pathtemplate.MustParse("{stream}/tenant={column:tenant}")
		c.Output.GroupBy = config.GroupByPath
		c.Output.Columns = []config.Column{{Name: "tenant", Source: "tenant", Type: formats.TypeString}}
		c.Output.MaxOpenDirectories = limit
	})
	took := time.Since(start)

	goodIn, floodDirs, objects := 0, 0, 0
	for key, body := range e.objects("card/") {
		if strings.HasPrefix(key, "card/_jetlake/") {
			continue
		}
		objects++
		dir := path.Base(path.Dir(key))
		n := bytes.Count(body, []byte("\n"))
		if strings.HasPrefix(dir, "tenant=flood-") {
			floodDirs++
			if n != 1 {
				t.Errorf("%s holds %d records, want the one message of its value", key, n)
			}
			continue
		}
		goodIn += n
	}
	if goodIn != good {
		t.Errorf("%d messages of the tenants exported, want all %d", goodIn, good)
	}
	// The flood fills the places the tenants leave; more only if the run
	// outlasted max_file_age, when the flood's first directories close.
	if room := limit - tenants; floodDirs < room || took < window && floodDirs != room || floodDirs > room*(1+int(took/window)) {
		t.Errorf("%d directories of the flood written in %s, want %d (the cap, %d, less the tenants')", floodDirs, took, room, limit)
	}
	if objects > floodDirs+2*tenants {
		t.Errorf("%d data objects: more than one per directory of the flood (%d) and two per tenant", objects, floodDirs)
	}
	rejected, rejectedObjects := 0, 0
	for key, body := range e.objects("card/_jetlake/rejected/") {
		rejectedObjects++
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			var r struct {
				Headers map[string][]string `json:"headers"`
				Payload struct {
					Tenant string `json:"tenant"`
				} `json:"payload"`
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			want := fmt.Sprintf(`cardinality: directory "%s/tenant=%s" would be one more than the %d written at once (max_open_directories)`, e.stream, r.Payload.Tenant, limit)
			if reason := r.Headers[exporter.RejectReasonHeader]; len(reason) != 1 || reason[0] != want {
				t.Fatalf("%s: reason %q, want %q", key, reason, want)
			}
			if !strings.HasPrefix(r.Payload.Tenant, "flood-") {
				t.Fatalf("%s: tenant %s's message rejected", key, r.Payload.Tenant)
			}
			rejected++
		}
	}
	if rejected != flood-floodDirs {
		t.Errorf("%d messages rejected, want the flood less those written: %d", rejected, flood-floodDirs)
	}
	// A few objects of many messages each, not one per value.
	if rejectedObjects > 3 {
		t.Errorf("%d rejected objects for %d messages", rejectedObjects, rejected)
	}
	if got := testutil.ToFloat64(e.metrics.Rejected.WithLabelValues(c.Name, e.stream, "cardinality")); got != float64(rejected) {
		t.Errorf("messages_rejected_total{reason=cardinality} = %v, want %d", got, rejected)
	}
	if r := e.verify(c)[0]; r.Scope.Last != last || r.RejectedMessages != rejected || r.Messages != int(last)-rejected {
		t.Errorf("verify: scope %v, %d messages, %d rejected; want up to %d, %d and %d", r.Scope, r.Messages, r.RejectedMessages, last, int(last)-rejected, rejected)
	}
}
