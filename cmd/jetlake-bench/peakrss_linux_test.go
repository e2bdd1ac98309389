package main

import (
	"os/exec"
	"syscall"
	"testing"
)

var ballast []byte

// A child's peak RSS is its own: not the RSS of the bench that started
// it, which the kernel's ru_maxrss counts.
func TestPeakRSSOfAChildIsNotItsParents(t *testing.T) {
	ballast = make([]byte, 256<<20)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	cmd := exec.Command("sleep", "0.3")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep here:", err)
	}
	done := make(chan struct{})
	peak := watchPeakRSS(cmd.Process.Pid, done)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	close(done)
	got := <-peak
	maxrss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss * 1024
	ballast = nil
	if got <= 0 || got > 64<<20 {
		t.Fatalf("peak RSS of sleep: %d bytes, want more than 0 and under 64 MiB (the kernel's ru_maxrss: %d)", got, maxrss)
	}
	t.Logf("sleep: peak RSS %d KiB polled, ru_maxrss %d KiB", got>>10, maxrss>>10)
}

func TestParseVmHWM(t *testing.T) {
	status := []byte("Name:\tjetlake\nVmPeak:\t 2001976 kB\nVmHWM:\t   88084 kB\nVmRSS:\t   78756 kB\n")
	if got, ok := parseVmHWM(status); !ok || got != 88084<<10 {
		t.Fatalf("parseVmHWM = %d, %v; want %d", got, ok, 88084<<10)
	}
	if _, ok := parseVmHWM([]byte("Name:\tzombie\nState:\tZ (zombie)\n")); ok {
		t.Fatal("a status without VmHWM gave one")
	}
}
