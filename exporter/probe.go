package exporter

import (
	"context"

	"github.com/jetlake/jetlake/internal/objstore"
)

// probe records whether the store honours conditional writes, retrying
// each write of the probe until it gets an answer.
func (e *session) probe(ctx context.Context) error {
	key := objstore.ProbeKey(e.cfg, "")
	conditional, err := objstore.Probe(ctx, e.store, key, func(ctx context.Context, write func(context.Context) error) error {
		return retry(ctx, e.log, "object store", write)
	})
	if err != nil {
		return err
	}
	e.conditional = conditional
	if e.conditional {
		e.log.Info("object store honours conditional writes: exactly-once objects", "probe", key)
	} else {
		e.log.Warn("object store ignores If-None-Match: exactly-once holds only while this connector is the only writer under its prefix",
			"probe", key)
	}
	return nil
}
