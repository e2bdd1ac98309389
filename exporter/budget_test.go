package exporter_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/jetlake/jetlake/internal/metrics"
)

func TestBudgetSmallerThanBacklogLosesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_file_size = "16KiB"
max_messages_per_file = 0
max_file_age = "20s"
max_buffered_bytes = "64KiB"`)
	// About 800 KiB of records, over 12× the budget. Batches grow in
	// chunks that double, here up to 16 KiB, the file size.
	e.exportWithinBudget(6000, 10, 64<<10, 16<<10+1024, 5*time.Minute)
}

// exportWithinBudget publishes n messages over the given number of
// subjects, exports them and requires each in exactly one object, all
// acked, and buffers, uploads and the delivered messages held for their
// acks together never over budget by more than slack: the message that
// crossed it and the chunk of memory it opened. The timeout only guards
// against a hang: a small budget makes thousands of small objects, which
// take minutes when the integration tests run side by side on 2 cores.
func (e *env) exportWithinBudget(n, subjects int, budget, slack int64, timeout time.Duration) {
	e.t.Helper()
	reg := prometheus.NewRegistry()
	e.metrics = metrics.New(reg)
	last := e.publish(n, subjects)
	e.runUntilIdle(e.connector(), timeout)
	e.wantExactlyOnce(e.read(), last)
	e.wantAllAcked()
	if peak := int64(gauge(e.t, reg, "jetlake_buffered_bytes_peak")); peak > budget+slack {
		e.t.Fatalf("peak %d bytes held, over the budget of %d by more than %d", peak, budget, slack)
	}
}

// gauge returns the value of the gauge name, of a single series, in reg.
func gauge(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	return single(t, reg, name).GetGauge().GetValue()
}

// counter returns the value of the counter name, of a single series, in
// reg.
func counter(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	return single(t, reg, name).GetCounter().GetValue()
}

// single returns the single series of the metric name in reg.
func single(t *testing.T, reg prometheus.Gatherer, name string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0]
		}
	}
	t.Fatalf("no single series of %s", name)
	return nil
}

func TestMemoryBoundHoldsAtTwoThousandSubjects(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_file_size = "64KiB"
max_messages_per_file = 0
max_file_age = "20s"
max_buffered_bytes = "1MiB"`)
	// Batches grow in chunks that double up to 1 MiB, here at most
	// 64 KiB, the file size.
	e.exportWithinBudget(20000, 2000, 1<<20, 64<<10+2048, 6*time.Minute)
}
