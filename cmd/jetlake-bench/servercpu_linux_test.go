package main

import (
	"os"
	"testing"
	"time"
)

// procCPU reads this very process, on Linux, where there is a /proc (the
// file name builds it there only).
func TestProcCPUOfThisProcess(t *testing.T) {
	// Burn some CPU so that the reading cannot be zero.
	start := time.Now()
	for x := 0; time.Since(start) < 50*time.Millisecond; x++ {
		_ = x * x
	}
	got, ok := procCPU(os.Getpid())
	if !ok || got <= 0 {
		t.Errorf("procCPU(self) = %v, %v; want a positive time", got, ok)
	}
	if _, ok := procCPU(0); ok {
		t.Error("procCPU(0) is ok")
	}
}
