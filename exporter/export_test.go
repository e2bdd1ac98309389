package exporter

// PeakBuffered returns the most bytes e held in buffers and uploads at once.
func PeakBuffered(e *Exporter) int64 { return e.peak.Load() }
