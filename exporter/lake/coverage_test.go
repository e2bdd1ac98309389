package lake

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/jetlake/jetlake/internal/progress"
	"github.com/jetlake/jetlake/lossmarker"
)

// objs returns objects named a, b, c... holding the given ranges.
func objs(runs ...[]progress.Range) []objectRuns {
	out := make([]objectRuns, len(runs))
	for i, rs := range runs {
		out[i] = objectRuns{key: string(rune('a' + i)), runs: rs}
	}
	return out
}

// marker returns a marker of the sequences from first to last.
func marker(first, last uint64) *lossmarker.Marker {
	return &lossmarker.Marker{FirstSeq: first, LastSeq: last, Count: last - first + 1}
}

func TestCheckCoverage(t *testing.T) {
	tests := []struct {
		name string
		in   coverageInput
		want coverage
	}{
		{
			name: "empty scope",
			in: coverageInput{
				scope:   progress.Range{First: 5, Last: 4},
				data:    objs([]progress.Range{{First: 1, Last: 10}}, []progress.Range{{First: 3, Last: 4}}),
				markers: []*lossmarker.Marker{marker(1, 20)},
			},
		},
		{
			name: "nothing in scope is in an object",
			in:   coverageInput{scope: progress.Range{First: 1, Last: 30}},
			want: coverage{missing: []progress.Range{{First: 1, Last: 30}}},
		},
		{
			name: "objects tile the scope exactly",
			in: coverageInput{
				scope: progress.Range{First: 1, Last: 30},
				data:  objs([]progress.Range{{First: 11, Last: 20}}, []progress.Range{{First: 1, Last: 10}}, []progress.Range{{First: 21, Last: 30}}),
			},
			want: coverage{messages: 30},
		},
		{
			name: "missing at the start",
			in: coverageInput{
				scope: progress.Range{First: 1, Last: 10},
				data:  objs([]progress.Range{{First: 4, Last: 10}}),
			},
			want: coverage{missing: []progress.Range{{First: 1, Last: 3}}, messages: 7},
		},
		{
			name: "missing in the middle, between and within objects",
			in: coverageInput{
				scope: progress.Range{First: 1, Last: 20},
				data:  objs([]progress.Range{{First: 1, Last: 4}, {First: 6, Last: 6}}, []progress.Range{{First: 9, Last: 20}}),
			},
			want: coverage{missing: []progress.Range{{First: 5, Last: 5}, {First: 7, Last: 8}}, messages: 17},
		},
		{
			name: "missing at the end",
			in: coverageInput{
				scope: progress.Range{First: 1, Last: 10},
				data:  objs([]progress.Range{{First: 1, Last: 7}}),
			},
			want: coverage{missing: []progress.Range{{First: 8, Last: 10}}, messages: 7},
		},
		{
			name: "overlap between two objects, named in listing order",
			in: coverageInput{
				scope: progress.Range{First: 1, Last: 12},
				data:  objs([]progress.Range{{First: 5, Last: 12}}, []progress.Range{{First: 1, Last: 6}}),
			},
			want: coverage{overlaps: []string{"sequence 5 is in a and b"}, messages: 12},
		},
		{
			name: "overlap inside one object",
			in: coverageInput{
				scope: progress.Range{First: 1, Last: 3},
				data:  objs(progress.FromSorted([]uint64{1, 2, 2, 3})),
			},
			want: coverage{overlaps: []string{"sequence 2 is in a and a"}, messages: 3},
		},
		{
			name: "an object overlapping two runs of another",
			in: coverageInput{
				scope: progress.Range{First: 1, Last: 10},
				data:  objs([]progress.Range{{First: 1, Last: 3}, {First: 6, Last: 8}}, []progress.Range{{First: 2, Last: 10}}),
			},
			want: coverage{overlaps: []string{"sequence 2 is in a and b", "sequence 6 is in a and b"}, messages: 10},
		},
		{
			name: "overlap outside the scope",
			in: coverageInput{
				scope: progress.Range{First: 1, Last: 9},
				data:  objs([]progress.Range{{First: 1, Last: 10}}, []progress.Range{{First: 10, Last: 12}}),
			},
			want: coverage{messages: 9},
		},
		{
			name: "rejected messages cover, and count once",
			in: coverageInput{
				scope:    progress.Range{First: 1, Last: 10},
				data:     objs([]progress.Range{{First: 1, Last: 5}}),
				rejected: []objectRuns{{key: "r", runs: []progress.Range{{First: 5, Last: 7}, {First: 9, Last: 10}}}},
			},
			want: coverage{
				missing:          []progress.Range{{First: 8, Last: 8}},
				overlaps:         []string{"sequence 5 is in a and r"},
				messages:         5,
				rejectedMessages: 4,
			},
		},
		{
			name: "a marker's ranges leave a hole between them",
			in: coverageInput{
				scope: progress.Range{First: 1, Last: 30},
				data:  objs([]progress.Range{{First: 1, Last: 10}}, []progress.Range{{First: 21, Last: 30}}),
				markers: []*lossmarker.Marker{{
					FirstSeq: 11, LastSeq: 20, Count: 8,
					Ranges: []lossmarker.Range{{First: 11, Last: 12}, {First: 15, Last: 20}},
				}},
			},
			want: coverage{missing: []progress.Range{{First: 13, Last: 14}}, messages: 20},
		},
		{
			name: "a marker of 300,000,000 sequences",
			in: coverageInput{
				scope:   progress.Range{First: 1, Last: 300_000_020},
				data:    objs([]progress.Range{{First: 1, Last: 10}}, []progress.Range{{First: 300_000_011, Last: 300_000_020}}),
				markers: []*lossmarker.Marker{marker(11, 300_000_010)},
			},
			want: coverage{messages: 20},
		},
		{
			name: "markers overlapping objects and each other",
			in: coverageInput{
				scope:   progress.Range{First: 1, Last: 40},
				data:    objs([]progress.Range{{First: 1, Last: 10}}),
				markers: []*lossmarker.Marker{marker(25, 35), marker(5, 20), marker(30, 38)},
			},
			want: coverage{missing: []progress.Range{{First: 21, Last: 24}, {First: 39, Last: 40}}, messages: 10},
		},
		{
			name: "filtered: only the stream's sequences must be covered",
			in: coverageInput{
				scope:    progress.Range{First: 2, Last: 100},
				data:     objs([]progress.Range{{First: 2, Last: 3}}),
				markers:  []*lossmarker.Marker{marker(50, 50)},
				filtered: true,
				stream:   []uint64{1, 2, 3, 4, 10, 11, 50, 99, 101},
			},
			want: coverage{missing: []progress.Range{{First: 4, Last: 4}, {First: 10, Last: 11}, {First: 99, Last: 99}}, messages: 2},
		},
		{
			name: "filtered: nothing in the stream",
			in: coverageInput{
				scope:    progress.Range{First: 1, Last: 100},
				data:     objs([]progress.Range{{First: 2, Last: 3}}),
				filtered: true,
			},
			want: coverage{messages: 2},
		},
		{
			name: "objects and markers clipped to the scope",
			in: coverageInput{
				scope:    progress.Range{First: 40, Last: 60},
				data:     objs([]progress.Range{{First: 1, Last: 45}}, []progress.Range{{First: 58, Last: 100}}),
				rejected: []objectRuns{{key: "r", runs: []progress.Range{{First: 30, Last: 41}, {First: 59, Last: 70}}}},
				markers:  []*lossmarker.Marker{marker(46, 50), marker(55, 1000)},
			},
			want: coverage{
				missing:          []progress.Range{{First: 51, Last: 54}},
				overlaps:         []string{"sequence 40 is in a and r", "sequence 59 is in b and r"},
				messages:         9,
				rejectedMessages: 0,
			},
		},
		{
			name: "scope up to the highest sequence",
			in: coverageInput{
				scope: progress.Range{First: math.MaxUint64 - 3, Last: math.MaxUint64},
				data:  objs([]progress.Range{{First: math.MaxUint64 - 2, Last: math.MaxUint64}}, []progress.Range{{First: math.MaxUint64, Last: math.MaxUint64}}),
			},
			want: coverage{
				missing:  []progress.Range{{First: math.MaxUint64 - 3, Last: math.MaxUint64 - 3}},
				overlaps: []string{fmt.Sprintf("sequence %d is in a and b", uint64(math.MaxUint64))},
				messages: 3,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkCoverage(tt.in)
			if !slices.Equal(got.missing, tt.want.missing) {
				t.Errorf("missing = %v, want %v", got.missing, tt.want.missing)
			}
			if !slices.Equal(got.overlaps, tt.want.overlaps) {
				t.Errorf("overlaps = %q, want %q", got.overlaps, tt.want.overlaps)
			}
			if got.messages != tt.want.messages || got.rejectedMessages != tt.want.rejectedMessages {
				t.Errorf("messages, rejected messages = %d, %d, want %d, %d",
					got.messages, got.rejectedMessages, tt.want.messages, tt.want.rejectedMessages)
			}
		})
	}
}

func TestCheckCoverageReportsAtMostAHundredOverlaps(t *testing.T) {
	var data []objectRuns
	for i := range 150 {
		data = append(data, objectRuns{key: fmt.Sprint(i), runs: []progress.Range{{First: 1, Last: 1}}})
	}
	got := checkCoverage(coverageInput{scope: progress.Range{First: 1, Last: 1}, data: data})
	if len(got.overlaps) != maxOverlaps {
		t.Errorf("%d overlap lines, want %d", len(got.overlaps), maxOverlaps)
	}
	if want := "sequence 1 is in 0 and 1"; got.overlaps[0] != want {
		t.Errorf("first overlap %q, want %q", got.overlaps[0], want)
	}
	if got.messages != 1 || len(got.missing) != 0 {
		t.Errorf("messages %d, missing %v, want 1 and none", got.messages, got.missing)
	}
}

// bigCoverage returns the input of a check of 10,000,000 sequences in
// 10,000 objects of 1,000 sequences each, with a one-sequence gap after
// each covered by its own marker, and a last marker covering the
// 300,000,000 sequences a purge removed.
func bigCoverage() coverageInput {
	const objects, perObject = 10_000, 1_000
	in := coverageInput{}
	var next uint64 = 1
	for i := range objects {
		in.data = append(in.data, objectRuns{
			key:  fmt.Sprintf("%020d-%020d.jsonl", next, next+perObject-1),
			runs: []progress.Range{{First: next, Last: next + perObject - 1}},
		})
		next += perObject
		if i < objects-1 {
			in.markers = append(in.markers, marker(next, next))
			next++
		}
	}
	in.markers = append(in.markers, marker(next, next+300_000_000-1))
	in.scope = progress.Range{First: 1, Last: next + 300_000_000 - 1}
	return in
}

func TestCheckCoverageOfTenMillionSequencesAllocatesForRangesOnly(t *testing.T) {
	in := bigCoverage()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := checkCoverage(in)
	runtime.ReadMemStats(&after)

	if len(got.missing) != 0 || len(got.overlaps) != 0 || got.messages != 10_000_000 {
		t.Fatalf("missing %v, overlaps %v, %d messages; want none, none, 10000000", got.missing, got.overlaps, got.messages)
	}
	// One map entry per sequence would take more than 16 bytes each: over
	// 150 MiB for the messages alone, and gigabytes for the purge.
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB", alloc>>10)
	if alloc > 64<<20 {
		t.Errorf("allocated %d MiB, want under 64", alloc>>20)
	}
}

func BenchmarkCoverageTenMillionSequences(b *testing.B) {
	in := bigCoverage()
	b.ReportAllocs()
	for b.Loop() {
		checkCoverage(in)
	}
}

// TestCheckCoverageAgreesWithCheckingEachSequence compares checkCoverage
// with a check of one sequence at a time, on random objects, markers and
// scopes.
func TestCheckCoverageAgreesWithCheckingEachSequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randomRuns := func(n int) []progress.Range {
		var seqs []uint64
		for range n {
			seqs = append(seqs, 1+rng.Uint64N(60))
		}
		slices.Sort(seqs)
		return progress.FromSorted(seqs)
	}
	for i := range 2000 {
		var in coverageInput
		for range rng.IntN(5) {
			in.data = append(in.data, objectRuns{key: fmt.Sprint("d", len(in.data)), runs: randomRuns(rng.IntN(30))})
		}
		for range rng.IntN(3) {
			in.rejected = append(in.rejected, objectRuns{key: fmt.Sprint("r", len(in.rejected)), runs: randomRuns(rng.IntN(5))})
		}
		for range rng.IntN(4) {
			rs := randomRuns(rng.IntN(6) + 1)
			m := &lossmarker.Marker{FirstSeq: rs[0].First, LastSeq: rs[len(rs)-1].Last}
			for _, r := range rs {
				m.Ranges = append(m.Ranges, lossmarker.Range{First: r.First, Last: r.Last})
			}
			in.markers = append(in.markers, m)
		}
		in.scope = progress.Range{First: 1 + rng.Uint64N(20), Last: 20 + rng.Uint64N(45)}
		if in.filtered = rng.IntN(2) == 0; in.filtered {
			for q := uint64(1); q <= 70; q++ {
				if rng.IntN(3) == 0 {
					in.stream = append(in.stream, q)
				}
			}
		}

		// One sequence at a time, each object's sequences in turn.
		holder := map[uint64]bool{}
		held := map[string]int{} // times each object holds each sequence
		var want coverage
		dup := false
		for j, o := range slices.Concat(in.data, in.rejected) {
			for _, r := range o.runs {
				for q := max(r.First, in.scope.First); q <= min(r.Last, in.scope.Last); q++ {
					held[fmt.Sprint(o.key, " ", q)]++
					switch {
					case holder[q]:
						dup = true
					case j < len(in.data):
						want.messages++
					default:
						want.rejectedMessages++
					}
					holder[q] = true
				}
			}
		}
		var missing []uint64
		var marked progress.Set
		marked.AddAll(markedRanges(in.markers))
		check := func(q uint64) {
			if !holder[q] && !marked.Has(q) {
				missing = append(missing, q)
			}
		}
		if in.filtered {
			for _, q := range in.stream {
				if q >= in.scope.First && q <= in.scope.Last {
					check(q)
				}
			}
		} else {
			for q := in.scope.First; q <= in.scope.Last; q++ {
				check(q)
			}
		}
		want.missing = progress.FromSorted(missing)

		got := checkCoverage(in)
		if !slices.Equal(got.missing, want.missing) || got.messages != want.messages ||
			got.rejectedMessages != want.rejectedMessages || (len(got.overlaps) > 0) != dup {
			t.Fatalf("case %d: %+v\ngot  missing %v, %d and %d messages, overlaps %q\nwant missing %v, %d and %d messages, overlaps: %v",
				i, in, got.missing, got.messages, got.rejectedMessages, got.overlaps,
				want.missing, want.messages, want.rejectedMessages, dup)
		}
		for _, line := range got.overlaps {
			var q uint64
			var a, b string
			if _, err := fmt.Sscanf(line, "sequence %d is in %s and %s", &q, &a, &b); err != nil {
				t.Fatalf("case %d: overlap %q: %v", i, line, err)
			}
			if a == b && held[fmt.Sprint(a, " ", q)] < 2 || held[fmt.Sprint(a, " ", q)] == 0 || held[fmt.Sprint(b, " ", q)] == 0 {
				t.Fatalf("case %d: %+v\noverlap %q: the sequence is not in both", i, in, line)
			}
		}
	}
}
