//go:build jetlakefault

package main

import (
	"os"
	"time"
)

// progressLogEveryEnv, in a binary built with -tags jetlakefault (the one
// the command's tests run), sets how often progress is logged when stderr
// is not a terminal, so that a test need not export for 10 s to see the
// cadence. Other builds always log every 10 s.
const progressLogEveryEnv = "JETLAKE_PROGRESS_LOG_EVERY"

func init() {
	if d, err := time.ParseDuration(os.Getenv(progressLogEveryEnv)); err == nil && d > 0 {
		progressLogEvery = d
	}
}
