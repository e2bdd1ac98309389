package main

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
)

func TestMetricsBeyondLoopbackAreWarnedAbout(t *testing.T) {
	tests := []struct {
		ip   net.IP
		warn bool
	}{
		{net.IPv4(127, 0, 0, 1), false},
		{net.IPv6loopback, false},
		{net.IPv4zero, true}, // ":9464" binds every interface
		{net.IPv6unspecified, true},
		{net.IPv4(10, 0, 0, 7), true},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		logServing(slog.New(slog.NewTextHandler(&out, nil)), &net.TCPAddr{IP: tt.ip, Port: 9464})
		if got := strings.Contains(out.String(), "level=WARN"); got != tt.warn {
			t.Errorf("serving on %s logged %q; warning: %v, want %v", tt.ip, out.String(), got, tt.warn)
		}
	}
}
