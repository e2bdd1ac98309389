package main

import (
	"fmt"
	"strings"
)

// Compare renders how the results went from before to after as Markdown: a
// table with a row for each workload and run that both hold (limit /
// jetlake, msg/s, CPU seconds per million messages and peak RSS, before →
// after, with the change in per cent; the PUT-rate ratio and iceberg /
// parquet where either has them), then what the two do not share and the
// compaction measurement. beforeName and afterName name the two reports.
func Compare(before, after *Report, beforeName, afterName string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### Compared: %s → %s\n\n", beforeName, afterName)
	fmt.Fprintf(&b, "Before: %s. After: %s.\n\n", describe(before, beforeName), describe(after, afterName))

	var c comparison
	c.table.WriteString("| workload | run | limit / jetlake | msg/s | CPU s / 1M msg | peak RSS | PUT-rate ratio | iceberg / parquet |\n")
	c.table.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, wa := range after.Workloads {
		wb := before.workload(wa.Name)
		if wb == nil {
			c.onlyAfter = append(c.onlyAfter, wa.Name)
			continue
		}
		c.workload(wb, wa)
	}
	for _, wb := range before.Workloads {
		if after.workload(wb.Name) == nil {
			c.onlyBefore = append(c.onlyBefore, wb.Name)
		}
	}
	if c.rows > 0 {
		b.WriteString(c.table.String())
	} else {
		b.WriteString("No workload and run is in both.\n")
	}

	notes := append(c.notes, c.unshared()...)
	if cb, ca := before.Compaction, after.Compaction; cb != nil && ca != nil && (cb.Ratio > 0 || ca.Ratio > 0) {
		notes = append(notes, fmt.Sprintf("Iceberg compaction (%s → %s small files): limit / jetlake %s, wall time %s",
			fmtInt(int64(cb.SmallFiles)), fmtInt(int64(ca.SmallFiles)), change(cb.Ratio, ca.Ratio, fmtRatio, false),
			change(cb.Seconds, ca.Seconds, func(x float64) string { return fmtSeconds(x) }, true)))
	}
	notes = append(notes, compareRestore(before.Restore, after.Restore)...)
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", mdEscape(n))
		}
	}
	return b.String()
}

// comparison is what Compare gathers from the workloads of two reports.
type comparison struct {
	table                 strings.Builder // the rows of the runs both hold
	rows                  int
	notes                 []string // on workloads that differ
	onlyBefore, onlyAfter []string // workloads and runs one report holds
}

// workload adds a row for each run that both wb, the workload before, and
// wa, the same after, hold, and notes what they do not share.
func (c *comparison) workload(wb, wa *WorkloadResult) {
	if wb.Messages != wa.Messages || wb.Subjects != wa.Subjects {
		c.notes = append(c.notes, fmt.Sprintf("%s: %s messages over %s subjects before, %s over %s after; compare the ratios, not msg/s",
			wa.Name, fmtInt(int64(wb.Messages)), fmtInt(int64(wb.Subjects)), fmtInt(int64(wa.Messages)), fmtInt(int64(wa.Subjects))))
	}
	for _, ra := range wa.Runs {
		rb := wb.run(ra.Name)
		if rb == nil {
			c.onlyAfter = append(c.onlyAfter, wa.Name+" "+ra.Name)
			continue
		}
		c.rows++
		c.row(wb, wa, rb, ra)
	}
	for _, rb := range wb.Runs {
		if wa.run(rb.Name) == nil {
			c.onlyBefore = append(c.onlyBefore, wa.Name+" "+rb.Name)
		}
	}
}

// row writes the row of run rb of workload wb before and ra of wa after.
func (c *comparison) row(wb, wa *WorkloadResult, rb, ra *RunResult) {
	// A run that failed or was skipped has no figures to compare.
	name := ra.Name
	if !succeeded(rb) {
		rb = &RunResult{}
	}
	if !succeeded(ra) {
		ra = &RunResult{}
	}
	fmt.Fprintf(&c.table, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", wa.Name, name,
		change(rb.Ratio, ra.Ratio, fmtRatio, false),
		change(rb.MessagesPerSecond, ra.MessagesPerSecond, func(x float64) string { return fmtInt(int64(x)) }, true),
		change(cpuPerMillion(rb, wb.Messages), cpuPerMillion(ra, wa.Messages), fmtCPU, true),
		change(float64(rb.PeakRSSBytes), float64(ra.PeakRSSBytes), func(x float64) string { return fmtMiB(int64(x)) }, true),
		change(rb.PutRateRatio, ra.PutRateRatio, fmtRatio, false),
		change(rb.IcebergToParquet, ra.IcebergToParquet, fmtRatio, false))
}

// unshared notes the workloads and runs only one of the reports holds.
func (c *comparison) unshared() []string {
	var notes []string
	if len(c.onlyBefore) > 0 {
		notes = append(notes, "only before: "+strings.Join(c.onlyBefore, ", "))
	}
	if len(c.onlyAfter) > 0 {
		notes = append(notes, "only after: "+strings.Join(c.onlyAfter, ", "))
	}
	return notes
}

// describe names a report for Compare: what ran, when, how many rounds.
func describe(r *Report, name string) string {
	return fmt.Sprintf("%s (jetlake %s, %s, %s, %d CPUs)", name, r.Machine.Jetlake,
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), count(r.Rounds, "round", "rounds"), r.Machine.CPUs)
}

// change formats a figure before → after, with the change in per cent when
// pct is set; a figure that is 0 (not measured) is "–", and an empty cell
// when both are.
func change(before, after float64, format func(float64) string, pct bool) string {
	if before == 0 && after == 0 {
		return ""
	}
	f := func(x float64) string {
		if x == 0 {
			return "–"
		}
		return format(x)
	}
	s := f(before) + " → " + f(after)
	if pct && before != 0 && after != 0 {
		s += fmt.Sprintf(" (%+.1f%%)", (after-before)/before*100)
	}
	return s
}

// compareRestore notes how each restore of both reports went, against
// the plain publisher of its own report.
func compareRestore(rb, ra *RestoreResult) []string {
	if rb == nil || ra == nil {
		return nil
	}
	var notes []string
	for _, a := range ra.Runs {
		for _, b := range rb.Runs {
			if a.Format == b.Format {
				notes = append(notes, fmt.Sprintf("restore from %s (%s → %s messages): × the plain publisher %s, msg/s %s, CPU %s",
					a.Format, fmtInt(int64(rb.Messages)), fmtInt(int64(ra.Messages)), change(b.Ratio, a.Ratio, fmtRatio, false),
					change(b.MessagesPerSecond, a.MessagesPerSecond, func(x float64) string { return fmtInt(int64(x)) }, true),
					change(b.CPUSeconds, a.CPUSeconds, func(x float64) string { return fmtSeconds(x) }, true)))
			}
		}
	}
	return notes
}

// workload returns the workload named name, or nil.
func (r *Report) workload(name string) *WorkloadResult {
	for _, w := range r.Workloads {
		if w.Name == name {
			return w
		}
	}
	return nil
}

// run returns the run named name, or nil.
func (w *WorkloadResult) run(name string) *RunResult {
	for _, r := range w.Runs {
		if r.Name == name {
			return r
		}
	}
	return nil
}
