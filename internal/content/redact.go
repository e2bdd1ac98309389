package content

import (
	"errors"

	"github.com/jetlake/jetlake/formats"
)

// Redacted says why err rejected a message without quoting a byte of the
// message: for a *formats.TypeError, the column, its source and what is
// wrong with the value; for a *NoEventTimeError, the time source. Their
// Error texts quote the value (up to 64 bytes of a payload field, or a
// header), which may be personal data and is the publisher's to choose:
// logs and plan's output show this instead, unless asked for the values.
// The rejected object keeps the whole error, beside the message itself.
// Other errors are not described, as their text may quote anything.
func Redacted(err error) string {
	var te *formats.TypeError
	var ne *NoEventTimeError
	switch {
	case errors.As(err, &te):
		return "column " + te.Column + " (source " + te.Source + "): " + te.Reason
	case errors.As(err, &ne):
		return "no event time: time_source " + ne.Source
	}
	return "rejected: the reason is in the rejected object"
}
