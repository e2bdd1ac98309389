// Package failure names the kinds of failure jetlake tells apart when it
// decides what to do about an error: stop the connector, or try again, and
// which kind the upload_errors_total metric counts.
//
// Each adapter puts the errors it meets into these kinds: objstore the S3
// store's answers (minio-go's errors), jsclient NATS's refused connections
// and permissions violations, state a table that is not the one the state
// bucket recorded, and the exporter its own findings (an intent it can not
// read, a plan it did not write). The exporter decides with errors.As on
// these types and never reads a client library's errors itself.
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

// Throttled is a service asking for fewer requests, such as S3's SlowDown
// or an HTTP 503: the request may succeed later, after a backoff.
type Throttled struct {
	Err error
}

// Error returns the message of the wrapped error.
func (e *Throttled) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *Throttled) Unwrap() error { return e.Err }

// ServerFault is a failure on the service's side, such as an HTTP 500
// answer: the request may succeed when tried again.
type ServerFault struct {
	Err error
}

// Error returns the message of the wrapped error.
func (e *ServerFault) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *ServerFault) Unwrap() error { return e.Err }
