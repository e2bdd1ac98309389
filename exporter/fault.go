//go:build jetlakefault

package exporter

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
const FaultEnv = "JETLAKE_FAULT"

var fault struct {
	point string
	n     int64
	hits  atomic.Int64
}

func init() {
	v := os.Getenv(FaultEnv)
	if v == "" {
		return
	}
	point, count, _ := strings.Cut(v, ":")
	fault.point, fault.n = point, 1
	if n, err := strconv.ParseInt(count, 10, 64); err == nil && n > 0 {
		fault.n = n
	}
}

// faultAt reports whether fault injection names point, for a point that
// prepares its crash.
func faultAt(point string) bool { return fault.point == point }

// crashPoint kills the process when fault injection names point.
func crashPoint(point string) {
	if fault.point != point || fault.hits.Add(1) != fault.n {
		return
	}
	crash()
}

// crashSoon kills the process after d when fault injection names point; for
// points inside a call that can not be interrupted.
func crashSoon(point string, d time.Duration) {
	if fault.point != point || fault.hits.Add(1) != fault.n {
		return
	}
	time.AfterFunc(d, crash)
}

func crash() {
	os.Stderr.WriteString("jetlake: fault injection: crashing at " + fault.point + "\n")
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
