package main

import (
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"

	"github.com/jetlake/jetlake/config"
)

func TestMemoryLimitComesFromTheBudgets(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	conns := []*config.Connector{
		{Rotation: config.Rotation{MaxBufferedBytes: 256 << 20}},
		{Rotation: config.Rotation{MaxBufferedBytes: 64 << 20}},
	}
	setMemoryLimit(conns, slog.New(slog.NewTextHandler(io.Discard, nil)))
	// 1.5 × 320 MiB + 8 MiB: with what the process holds beyond the Go
	// heap, within the 1.5 × budget + 64 MiB that docs/performance.md
	// (Sizing) promises.
	if got, want := debug.SetMemoryLimit(-1), int64(488<<20); got != want {
		t.Fatalf("memory limit %d MiB, want %d MiB", got>>20, want>>20)
	}
}

func TestMemoryLimitLeavesGOMEMLIMITAlone(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "1GiB")
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	setMemoryLimit([]*config.Connector{{Rotation: config.Rotation{MaxBufferedBytes: 1 << 20}}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory limit changed to %d with GOMEMLIMIT set", got)
	}
}
