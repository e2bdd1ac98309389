package main

import (
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name string
		stat string
		want time.Duration
		ok   bool
	}{
		{"plain", "4242 (nats-server) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 100 0 0", 3250 * time.Millisecond, true},
		{"spaces and parentheses in the name", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 0 0", 30 * time.Millisecond, true},
		{"truncated", "7 (x) R 1 7 7", 0, false},
		{"no name", "7 x R", 0, false},
		{"not numbers", "7 (x) R 1 7 7 0 -1 0 0 0 0 0 a b 0", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseProcStat([]byte(tt.stat))
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseProcStat(%q) = %v, %v; want %v, %v", tt.stat, got, ok, tt.want, tt.ok)
			}
		})
	}
}
