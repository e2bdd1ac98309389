package lake

import "sync/atomic"

// VerifyProgress counts what a Verify has done so far. Verify updates it
// as it goes (VerifyOptions.Progress); another goroutine reads it with
// Counts at any time. A nil *VerifyProgress counts nothing.
type VerifyProgress struct {
	listed, read, bytes, problems atomic.Int64
	stage                         atomic.Pointer[string]
}

// VerifyCounts are the figures of a VerifyProgress at one moment.
type VerifyCounts struct {
	// Listed counts the objects listed so far: data objects, loss markers
	// and rejected objects. The listing is read as it comes, so Listed
	// grows with Read.
	Listed int64
	// Read counts those whose sequences were read, from their records or
	// their metadata.
	Read int64
	// Bytes counts the bytes of the objects read whole: every object of a
	// deep check, those without sequences in their metadata, loss markers
	// and rejected objects.
	Bytes int64
	// Problems counts what the reports will show as problems, missing
	// ranges and overlaps, as they are found.
	Problems int64
	// Stage says what Verify is doing: listing objects, or checking a
	// stream.
	Stage string
}

// Counts returns the figures so far.
func (p *VerifyProgress) Counts() VerifyCounts {
	if p == nil {
		return VerifyCounts{}
	}
	c := VerifyCounts{Listed: p.listed.Load(), Read: p.read.Load(), Bytes: p.bytes.Load(), Problems: p.problems.Load()}
	if s := p.stage.Load(); s != nil {
		c.Stage = *s
	}
	return c
}

func (p *VerifyProgress) listedOne() {
	if p != nil {
		p.listed.Add(1)
	}
}

func (p *VerifyProgress) readOne(bytes int) {
	if p != nil {
		p.read.Add(1)
		p.bytes.Add(int64(bytes))
	}
}

func (p *VerifyProgress) found(problems int) {
	if p != nil && problems > 0 {
		p.problems.Add(int64(problems))
	}
}

func (p *VerifyProgress) at(stage string) {
	if p != nil {
		p.stage.Store(&stage)
	}
}

// CompactProgress counts the groups of small files a Compact planned and
// those it is done with (CompactOptions.Progress); another goroutine reads
// it with Counts at any time. A nil *CompactProgress counts nothing.
type CompactProgress struct {
	planned, done atomic.Int64
}

// CompactCounts are the figures of a CompactProgress at one moment: groups
// planned, and of those done (merged, left alone, or on a dry run listed).
type CompactCounts struct {
	Planned, Done int64
}

// Counts returns the figures so far.
func (p *CompactProgress) Counts() CompactCounts {
	if p == nil {
		return CompactCounts{}
	}
	return CompactCounts{Planned: p.planned.Load(), Done: p.done.Load()}
}

func (p *CompactProgress) plan(groups int) {
	if p != nil {
		p.planned.Add(int64(groups))
	}
}

func (p *CompactProgress) doneOne() { p.doneN(1) }

func (p *CompactProgress) doneN(groups int) {
	if p != nil {
		p.done.Add(int64(groups))
	}
}
