package exporter

import (
	"fmt"
	"testing"
)

// Shares differ by at most one, add up to the partitions, and go to the
// first instances in id order.
func TestShareSplitsPartitionsWithinOne(t *testing.T) {
	for _, tc := range []struct{ n, instances int }{{8, 1}, {8, 3}, {8, 4}, {8, 5}, {2, 3}, {1024, 7}} {
		var ids []string
		for i := range tc.instances {
			ids = append(ids, fmt.Sprintf("i%02d", i))
		}
		total, lo, hi := 0, tc.n, 0
		for _, id := range ids {
			s := Share(tc.n, ids, id)
			total += s
			lo, hi = min(lo, s), max(hi, s)
		}
		if total != tc.n || hi-lo > 1 {
			t.Errorf("%d partitions on %d instances: total %d, shares %d-%d", tc.n, tc.instances, total, lo, hi)
		}
		if Share(tc.n, ids, ids[0]) != hi {
			t.Errorf("%d partitions on %d instances: the first instance gets %d, not the larger share %d", tc.n, tc.instances, Share(tc.n, ids, ids[0]), hi)
		}
	}
}
