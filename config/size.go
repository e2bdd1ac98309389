package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

const (
	kib int64 = 1 << 10
	mib int64 = 1 << 20
	gib int64 = 1 << 30
)

// sizeUnits are the units ParseSize accepts. FormatSize picks the first unit,
// in this order, that divides a size exactly, so binary units win.
var sizeUnits = []struct {
	name string
	mult int64
}{
	{"TiB", 1 << 40},
	{"GiB", 1 << 30},
	{"MiB", 1 << 20},
	{"KiB", 1 << 10},
	{"TB", 1e12},
	{"GB", 1e9},
	{"MB", 1e6},
	{"KB", 1e3},
	{"kB", 1e3},
	{"B", 1},
}

var (
	errSizeSyntax = errors.New("want a whole number of bytes, optionally followed by a unit: B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000)")
	errSizeRange  = errors.New("too large")
)

// ParseSize parses a byte size: a whole number, optionally followed by spaces
// and a unit. Binary units B, KiB, MiB, GiB and TiB are powers of 1024;
// decimal units KB (or kB), MB, GB and TB are powers of 1000. A bare number is
// bytes. Units are case-sensitive, so "8MiB" is 8388608 and "8mib" is an
// error.
func ParseSize(s string) (int64, error) {
	n, err := parseSize(s)
	if err != nil {
		return 0, fmt.Errorf("config: invalid size %q: %w", s, err)
	}
	return n, nil
}

func parseSize(s string) (int64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, errSizeSyntax
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil {
		return 0, errSizeRange
	}
	if i == len(s) {
		return n, nil
	}
	unit := strings.TrimLeft(s[i:], " ")
	for _, u := range sizeUnits {
		if u.name == unit {
			if n > math.MaxInt64/u.mult {
				return 0, errSizeRange
			}
			return n * u.mult, nil
		}
	}
	return 0, errSizeSyntax
}

// FormatSize formats n with the largest unit that represents it exactly, so
// that ParseSize(FormatSize(n)) == n for every n >= 0: 8388608 is "8MiB",
// 1000 is "1KB" and 1500 is "1500B".
func FormatSize(n int64) string {
	if n > 0 {
		for _, u := range sizeUnits {
			if n%u.mult == 0 {
				return strconv.FormatInt(n/u.mult, 10) + u.name
			}
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
