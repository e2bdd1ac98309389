//go:build !jetlakefault

package exporter

import "time"

// FaultEnv names the variable that fault injection reads in binaries built
// with -tags jetlakefault (see fault.go). This build has no fault injection:
// the variable is ignored and the points below do nothing.
const FaultEnv = "JETLAKE_FAULT"

// faultAt reports whether fault injection names point: never in this build.
func faultAt(string) bool { return false }

func crashPoint(string) {}

func crashSoon(string, time.Duration) {}
