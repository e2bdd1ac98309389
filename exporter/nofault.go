//go:build !jetlakefault

package exporter

import "time"

// FaultEnv names the variable that fault injection reads in binaries built
// with -tags jetlakefault (see fault.go). This build has no fault injection:
// the variable is ignored and the points below do nothing.
const FaultEnv = "JETLAKE_FAULT"

// fault is never set in this build; the upload path reads its point to
// prepare a crash that cannot come.
var fault struct{ point string }

func crashPoint(string) {}

func crashSoon(string, time.Duration) {}
