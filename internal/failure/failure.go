// Package failure names the kinds of failure jetlake tells apart when it
// decides what to do about an error: stop the connector, or try again.
//
// Each adapter puts the errors it meets into these kinds: objstore the S3
// store's refusals, jsclient NATS's, state the state bucket's, and the
// exporter its own findings (an intent it can not read, a plan it did not
// write). The exporter decides with errors.As on these types.
//
// Every kind wraps the error it classifies and has its message: wrapping
// an error in a kind changes what is decided about it, never what it says.
// The package imports nothing of jetlake.
package failure

import "errors"

// Permanent is a failure that trying again does not mend: a setting that
// is wrong, a refusal of the store or server, something in the store or
// state bucket jetlake did not write. It stops the connector.
type Permanent struct {
	// Code names what failed: the S3 error code of the store's refusal
	// (AccessDenied, NoSuchBucket), or a name of jetlake's for other
	// refusals (NATSPermission, IcebergPlan); "" when there is none.
	Code string
	Err  error
}

// Error returns the message of the wrapped error.
func (e *Permanent) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *Permanent) Unwrap() error { return e.Err }

// IsPermanent reports whether err, or an error it wraps, is a *Permanent.
func IsPermanent(err error) bool {
	var p *Permanent
	return errors.As(err, &p)
}
