package iceberg

import (
	"slices"
	"testing"
)

// Recovery hands the table the data files of the intents it finds, never
// the objects of rejected messages, which are JSON under _jetlake/.
func TestRecoveredIntentsOfOtherObjectsStayOutOfTheTable(t *testing.T) {
	b := NewFileBook("b", "raw/lake/events/data")
	b.Found("intent.a", "raw/lake/events/data/subject=s/00000000000000000001-00000000000000000002.parquet", 1, 2)
	b.Found("intent.b", "raw/_jetlake/rejected/S/2026-12-01/00000000000000000003-00000000000000000003.jsonl", 3, 3)
	b.Found("intent.c", "raw/lake/events/data2/x.parquet", 4, 4)
	if len(b.pending) != 1 || b.pending[0].Intent != "intent.a" || b.pending[0].First != 1 || b.pending[0].Last != 2 ||
		b.pending[0].Location != "s3://b/raw/lake/events/data/subject=s/00000000000000000001-00000000000000000002.parquet" {
		t.Fatalf("pending %+v, want the data file of intent.a alone", b.pending)
	}
}

// An intent is deleted only once its file's plan is in the table and the
// floor has passed it, in whichever order the two come; a plan goes once
// none of its intents is left.
func TestAnIntentGoesOnceItsPlanIsCommittedAndTheFloorPassedIt(t *testing.T) {
	b := NewFileBook("b", "d")
	b.Stored("i1", "d/1.parquet", 1, 1, &Tail{Size: 10, Bytes: make([]byte, 10)})
	b.Stored("i2", "d/2.parquet", 2, 2, nil)
	b.Stored("i3", "d/3.parquet", 3, 3, nil)
	files := b.Take(func(fs []File) int { return 2 })
	if len(files) != 2 || b.Pending() != 1 || b.tails != 10 {
		t.Fatalf("took %d, %d pending, %d tail bytes", len(files), b.Pending(), b.tails)
	}
	// The floor passes i1 before the commit: its deletion waits.
	if now := b.Forgettable([]string{"i1", "other"}); !slices.Equal(now, []string{"other"}) {
		t.Fatalf("forgettable before the commit: %v", now)
	}
	p := &Plan{Files: files}
	b.DropTails(files)
	if forget := b.Committed(p, files); !slices.Equal(forget, []string{"i1"}) || b.tails != 0 {
		t.Fatalf("committed: forget %v, %d tail bytes", forget, b.tails)
	}
	// The floor passes i2 after the commit: it goes at once.
	if now := b.Forgettable([]string{"i2"}); !slices.Equal(now, []string{"i2"}) {
		t.Fatalf("forgettable after the commit: %v", now)
	}
	if done := b.Forgotten([]string{"i1"}); len(done) != 0 {
		t.Fatalf("a plan with an intent left went: %v", done)
	}
	if done := b.Forgotten([]string{"i2"}); len(done) != 1 || done[0] != p {
		t.Fatalf("the plan of no intent left stays: %v", done)
	}
	// A failed commit's files go back first.
	rest := b.Take(func(fs []File) int { return len(fs) })
	b.Return(rest)
	if b.Pending() != 1 || b.pending[0].Intent != "i3" {
		t.Fatalf("after Return: %+v", b.pending)
	}
}

// Plans an earlier process left are claimed again by the intents recovery
// finds; those it finds none of can go.
func TestRecoveredPlansWithoutIntentsAreUnclaimed(t *testing.T) {
	b := NewFileBook("b", "d")
	kept := &Plan{Files: []File{{Intent: "i1"}}}
	gone := &Plan{Files: []File{{Intent: "i9"}}}
	b.Recovered([]*Plan{kept, gone})
	b.Found("i1", "d/1.parquet", 1, 1)
	if b.Pending() != 0 {
		t.Fatal("a file its plan claims was pending again")
	}
	if got := b.Unclaimed(); len(got) != 1 || got[0] != gone {
		t.Fatalf("unclaimed: %v", got)
	}
	b.DropPlan(gone)
	if len(b.Unclaimed()) != 0 {
		t.Fatal("a dropped plan is still unclaimed")
	}
}
