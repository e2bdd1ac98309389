package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// spread formats the range of several rounds' times: " (5.1–6.0)".
func spread(xs []float64) string {
	if len(xs) < 2 {
		return ""
	}
	return fmt.Sprintf(" (%.2f–%.2f)", slices.Min(xs), slices.Max(xs))
}

// count writes n with the singular or plural noun: "1 object", "2 objects".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmtInt(int64(n)) + " " + many
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func fmtRatio(r float64) string {
	if r == 0 {
		return "–"
	}
	return strconv.FormatFloat(r, 'f', 2, 64)
}

// fmtCPU formats CPU seconds per million messages.
func fmtCPU(s float64) string {
	if s == 0 {
		return "–"
	}
	return strconv.FormatFloat(s, 'f', 1, 64)
}

func fmtSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return strconv.FormatFloat(s, 'f', 2, 64) + " s"
}

func fmtDur(d time.Duration) string { return fmtSeconds(d.Seconds()) }

// fmtInt writes n with thousands separators: 1,000,000.
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func fmtMB(n int64) string {
	return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + " MB"
}

func fmtMiB(n int64) string {
	v := float64(n) / (1 << 20)
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10) + " MiB"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " MiB"
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// fmtServerCPU formats a server's CPU seconds for the table: a dash when
// they were not measured.
func fmtServerCPU(s float64) string {
	if s == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", s)
}
