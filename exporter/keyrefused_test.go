package exporter_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/internal/metrics"
	"github.com/jetlake/jetlake/pathtemplate"
)

// A key the store refuses is poison for its batch, not for the stream:
// subjects that render a segment longer than the 255 bytes MinIO takes
// fill max_ack_pending, yet the good messages after them are exported and
// the refused ones rejected, with the refusal as the reason, and acked.
// Before, the batch was retried for ever and nothing after it moved.
func TestAKeyTheStoreRefusesRejectsItsMessagesAndTheStreamGoesOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 5
max_file_age = "1s"`)
	e.metrics = metrics.New(nil)
	const bad, good = 20, 10
	long := strings.Repeat("x", 2*pathtemplate.MaxValueLen)
	var refused []uint64
	last := e.publishEach(bad+good, func(i int) (string, []byte) {
		if i < bad {
			return fmt.Sprintf("%s.%s%d", e.stream, long, i), fmt.Appendf(nil, `{"i":%d}`, i)
		}
		return fmt.Sprintf("%s.ok", e.stream), fmt.Appendf(nil, `{"i":%d}`, i)
	})
	for s := last - bad - good + 1; s <= last-good; s++ {
		refused = append(refused, s)
	}
	c := e.runVariant("key", func(c *config.Connector) {
		// A subject escapes to at most 128 bytes: twice, and a "-", is a
		// segment of 257 bytes.
		c.Output.PathTemplate = pathtemplate.MustParse("{stream}/{subject}-{subject}/{date}")
		c.Streams[0].MaxAckPending = bad
	})
	var rejected []uint64
	data := 0
	for key, body := range e.objects("key/") {
		switch {
		case strings.HasPrefix(key, "key/_jetlake/rejected/"+e.stream+"/"):
			sc := bufio.NewScanner(bytes.NewReader(body))
			for sc.Scan() {
				var r struct {
					Sequence uint64              `json:"sequence"`
					Headers  map[string][]string `json:"headers"`
				}
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					t.Fatal(err)
				}
				if reason := r.Headers[exporter.RejectReasonHeader]; len(reason) != 1 || !strings.Contains(reason[0], "refuses the object key") {
					t.Errorf("%s: sequence %d's reason %q does not say the store refused its key", key, r.Sequence, reason)
				}
				rejected = append(rejected, r.Sequence)
			}
		case strings.HasPrefix(key, "key/_jetlake/"):
		default:
			data += bytes.Count(body, []byte("\n"))
		}
	}
	sort.Slice(rejected, func(i, j int) bool { return rejected[i] < rejected[j] })
	if fmt.Sprint(rejected) != fmt.Sprint(refused) || data != good {
		t.Errorf("rejected %v and %d records in data objects; want %v and %d", rejected, data, refused, good)
	}
	if got := testutil.ToFloat64(e.metrics.Rejected.WithLabelValues(c.Name, e.stream, "key")); got != bad {
		t.Errorf("messages_rejected_total{reason=key} = %v, want %d", got, bad)
	}
	info, err := e.js.Consumer(context.Background(), e.stream, "key")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := info.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.ackView(ci, c.Name)
	if ci.NumAckPending != 0 || ci.AckFloor.Stream != last {
		t.Errorf("consumer: %+v; want every message acked (read ack-less: recorded)", ci)
	}
	if r := e.verify(c)[0]; r.Messages != good || r.RejectedMessages != bad || len(r.Missing) != 0 {
		t.Errorf("verify: %d messages, %d rejected, missing %v; want %d, %d, none", r.Messages, r.RejectedMessages, r.Missing, good, bad)
	}
}
