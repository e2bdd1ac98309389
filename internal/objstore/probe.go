package objstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nuid"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

// ProbeKey is a new key for a probe object of connector c: under
// <prefix>/_jetlake/probe/, outside the table folders, named after the
// connector, who writes it ("plan"; "" for run) and a unique id.
func ProbeKey(c *config.Connector, who string) string {
	name := c.Name
	if who != "" {
		name += "-" + who
	}
	return pathtemplate.ProbeKey(c.S3.Prefix, name, nuid.Next())
}

// ProbeError is a write of Probe that failed.
type ProbeError struct {
	Key string
	// Second is set when the object was written once and the second write
	// failed otherwise than refused with ErrExists.
	Second bool
	Err    error
}

func (e *ProbeError) Error() string {
	if e.Second {
		return fmt.Sprintf("probe %s: second write: %v", e.Key, e.Err)
	}
	return fmt.Sprintf("probe %s: %v", e.Key, e.Err)
}

func (e *ProbeError) Unwrap() error { return e.Err }

// Probe reports whether store honours conditional writes: it writes a new
// object at key twice with If-None-Match: *, and the second write must be
// refused with ErrExists. Without conditional writes exactly-once still
// holds for a single writer, but a second writer on the same prefix can
// overwrite objects unnoticed. do runs each write: run retries it, plan
// bounds it with a timeout. A write that fails is a *ProbeError.
func Probe(ctx context.Context, store ObjectStore, key string, do func(context.Context, func(context.Context) error) error) (bool, error) {
	opts := PutOptions{ContentType: "text/plain", IfNoneMatch: true}
	body := formats.NewBody([]byte("jetlake conditional-write probe\n"))
	if err := do(ctx, func(ctx context.Context) error {
		return store.Put(ctx, key, body, opts)
	}); err != nil {
		return false, &ProbeError{Key: key, Err: err}
	}
	var second error
	if err := do(ctx, func(ctx context.Context) error {
		second = store.Put(ctx, key, body, opts)
		if second == nil || errors.Is(second, ErrExists) {
			return nil
		}
		return second
	}); err != nil {
		return false, &ProbeError{Key: key, Second: true, Err: err}
	}
	return errors.Is(second, ErrExists), nil
}
