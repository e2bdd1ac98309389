//go:build jetlakefault

package fault

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Fault injection for crash tests. JETLAKE_FAULT="POINT" or "POINT:N" makes
// the process kill itself with SIGKILL the N-th time (default 1) it reaches
// POINT, as a crash would at that moment. The points:
//
//	before-upload   the intent is recorded, the object not yet written
//	during-upload   the object's PUT is on its way
//	after-upload    the object is stored, no message acked
//	after-acks      the acks are sent, the last one not confirmed
//	after-confirm   the acks are confirmed, the intent not yet deleted
//	during-recovery intents are listed, none handled yet
//
// Only binaries built with -tags jetlakefault have it (the crash tests build
// jetlake so); other builds compile the points to nothing (nofault.go).
// Unset, it costs one comparison per point.
const Env = "JETLAKE_FAULT"

var state struct {
	point string
	n     int64
	hits  atomic.Int64
}

func init() {
	v := os.Getenv(Env)
	if v == "" {
		return
	}
	point, count, _ := strings.Cut(v, ":")
	state.point, state.n = point, 1
	if n, err := strconv.ParseInt(count, 10, 64); err == nil && n > 0 {
		state.n = n
	}
}

// At reports whether fault injection names point, for a point that
// prepares its crash.
func At(point string) bool { return state.point == point }

// Point kills the process when fault injection names point.
func Point(point string) {
	if state.point != point || state.hits.Add(1) != state.n {
		return
	}
	crash()
}

// Soon kills the process after d when fault injection names point; for
// points inside a call that can not be interrupted.
func Soon(point string, d time.Duration) {
	if state.point != point || state.hits.Add(1) != state.n {
		return
	}
	time.AfterFunc(d, crash)
}

func crash() {
	os.Stderr.WriteString("jetlake: fault injection: crashing at " + state.point + "\n")
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
