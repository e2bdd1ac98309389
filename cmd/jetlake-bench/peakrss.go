package main

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// The peak RSS of a child process is read from its /proc/<pid>/status
// (VmHWM, the high-water mark of the address space its exec made), polled
// while it runs: the ru_maxrss the kernel reports when it exits counts the
// address space it replaced at the exec, the bench's own (forked from it),
// so any child would seem to peak at least at the bench's RSS (about
// 80 MiB).

// peakRSSPoll is how often a child's VmHWM is read.
const peakRSSPoll = 50 * time.Millisecond

// watchPeakRSS reads the VmHWM of process pid until done is closed, and
// then sends the highest it read, in bytes: 0 when it read none (outside
// Linux, or a process gone before the first read).
func watchPeakRSS(pid int, done <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var peak int64
		t := time.NewTicker(peakRSSPoll)
		defer t.Stop()
		for {
			if hwm, ok := vmHWM(pid); ok {
				peak = max(peak, hwm)
			}
			select {
			case <-done:
				out <- peak
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// vmHWM returns the VmHWM of process pid in bytes.
func vmHWM(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	return parseVmHWM(b)
}

// parseVmHWM returns the VmHWM line of a /proc/<pid>/status file in
// bytes ("VmHWM:	   88084 kB").
func parseVmHWM(status []byte) (int64, bool) {
	_, rest, ok := bytes.Cut(status, []byte("\nVmHWM:"))
	if !ok {
		return 0, false
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) != 2 || string(f[1]) != "kB" {
		return 0, false
	}
	kb, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0, false
	}
	return kb << 10, true
}
