package exporter

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/jetlake/jetlake/internal/metrics"
)

// ProcessMetrics are the Prometheus metrics of a process that runs
// exporters, in one registry of their own: the Go runtime's and the
// process's collectors, and the metrics every exporter of the process adds
// to.
type ProcessMetrics struct {
	reg       *prometheus.Registry
	exporters *metrics.Metrics
}

// NewProcessMetrics returns the metrics of a process, registered afresh.
// A process makes them once: the exporters' metrics carry the connector's
// name, so one set serves every connector.
func NewProcessMetrics() *ProcessMetrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	return &ProcessMetrics{reg: reg, exporters: metrics.New(reg)}
}

// Exporters returns the metrics the process's exporters add to, to be
// given to each of them as Options.Metrics.
func (p *ProcessMetrics) Exporters() *metrics.Metrics { return p.exporters }

// Handler serves the metrics in Prometheus's exposition format, for a
// /metrics endpoint.
func (p *ProcessMetrics) Handler() http.Handler {
	return promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{Registry: p.reg})
}
