package exporter

import (
	"errors"
	"testing"
)

// A batch sealed under the last pin of a consumer this instance re-created
// is neither fenced nor stored while the server's new pin is unconfirmed:
// the attempt is tried again, and the confirmation decides.
func TestThePinLineJudgesABatchByWhatItHolds(t *testing.T) {
	var l pinLine
	l.start("A")
	check := func(step, sealed, now string, want error) {
		t.Helper()
		err := l.judge(sealed, now)
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Fatalf("%s: judge(%q, %q) = %v, want %v", step, sealed, now, err, want)
		}
	}
	check("same pin", "A", "A", nil)
	check("no pin when sealed", "", "A", errFenced)
	check("another pin", "A", "B", errFenced)

	l.await()
	check("re-created, B unconfirmed", "A", "B", errPinUnsettled)
	check("re-created, sealed under a pin not in the line", "X", "B", errFenced)
	l.extend("B")
	check("B follows on", "A", "B", nil)
	check("B follows on, sealed under B", "B", "B", nil)

	l.await()
	check("re-created again, C unconfirmed", "B", "C", errPinUnsettled)
	l.start("C")
	check("C started the line again", "B", "C", errFenced)
	check("C, sealed under C", "C", "C", nil)

	l.await()
	l.start("")
	check("released", "C", "D", errFenced)
}
