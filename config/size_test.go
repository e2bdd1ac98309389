package config

import (
	"fmt"
	"math"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1024", 1024},
		{"512B", 512},
		{"1KiB", 1024},
		{"8MiB", 8 << 20},
		{"8 MiB", 8 << 20},
		{"5GiB", 5 << 30},
		{"2TiB", 2 << 40},
		{"1KB", 1000},
		{"1kB", 1000},
		{"10MB", 10_000_000},
		{"1GB", 1_000_000_000},
		{"3TB", 3_000_000_000_000},
		{"0008MiB", 8 << 20},
		{"9223372036854775807", math.MaxInt64},
		{"8388607TiB", 8388607 << 40},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseSizeRejects(t *testing.T) {
	for _, in := range []string{
		"", "MiB", "-1", "+1", "1.5MiB", "8mib", "8Mb", "8M", "8 ", " 8", "8MiB ", "8XB",
		"9223372036854775808", "8388608TiB", "9999999999999999TB",
	} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0B"},
		{1, "1B"},
		{1023, "1023B"},
		{1024, "1KiB"},
		{1536, "1536B"},
		{8388608, "8MiB"},
		{5 << 30, "5GiB"},
		{1 << 40, "1TiB"},
		{1000, "1KB"},
		{1_000_000, "1MB"},
		{1_024_000, "1000KiB"},
		{256 << 20, "256MiB"},
		{-5, "-5B"},
	}
	for _, tt := range tests {
		if got := FormatSize(tt.in); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func ExampleParseSize() {
	n, err := ParseSize("8MiB")
	fmt.Println(n, err)
	_, err = ParseSize("8 megabytes")
	fmt.Println(err)
	// Output:
	// 8388608 <nil>
	// config: invalid size "8 megabytes": want a whole number of bytes, optionally followed by a unit: B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000)
}

func ExampleFormatSize() {
	fmt.Println(FormatSize(8388608), FormatSize(1000), FormatSize(1500))
	// Output: 8MiB 1KB 1500B
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"8MiB", "1 KB", "0", "9223372036854775807", "8388608TiB", "1.5GiB", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		back, err := ParseSize(FormatSize(n))
		if err != nil || back != n {
			t.Fatalf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, FormatSize(n), back, err)
		}
	})
}
