//go:build !jetlakefault

// Package fault is fault injection for crash tests: named points where a
// binary built with -tags jetlakefault kills itself when JETLAKE_FAULT
// names them (see fault.go). Other builds compile the points to nothing.
package fault

import "time"

// Env names the variable that fault injection reads in binaries built
// with -tags jetlakefault (see fault.go). This build has no fault injection:
// the variable is ignored and the points below do nothing.
const Env = "JETLAKE_FAULT"

// At reports whether fault injection names point: never in this build.
func At(string) bool { return false }

// Point does nothing in this build.
func Point(string) {}

// Soon does nothing in this build.
func Soon(string, time.Duration) {}
