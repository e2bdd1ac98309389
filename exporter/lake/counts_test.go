package lake

import "testing"

// The counts of a verify and a compaction, and nil ones that count nothing.
func TestProgressCounts(t *testing.T) {
	var nv *VerifyProgress
	nv.listedOne()
	nv.readOne(10)
	nv.found(1)
	nv.at("listing objects")
	if c := nv.Counts(); c != (VerifyCounts{}) {
		t.Fatalf("nil verify progress counted %+v", c)
	}
	v := &VerifyProgress{}
	v.at("listing objects")
	v.listedOne()
	v.listedOne()
	v.readOne(100)
	v.found(0)
	v.found(2)
	if c, want := v.Counts(), (VerifyCounts{Listed: 2, Read: 1, Bytes: 100, Problems: 2, Stage: "listing objects"}); c != want {
		t.Fatalf("verify counts %+v, want %+v", c, want)
	}
	var nc *CompactProgress
	nc.plan(3)
	nc.doneOne()
	if c := nc.Counts(); c != (CompactCounts{}) {
		t.Fatalf("nil compact progress counted %+v", c)
	}
	c := &CompactProgress{}
	c.plan(3)
	c.doneOne()
	if got, want := c.Counts(), (CompactCounts{Planned: 3, Done: 1}); got != want {
		t.Fatalf("compact counts %+v, want %+v", got, want)
	}
}
