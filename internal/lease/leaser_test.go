package lease

import (
	"fmt"
	"strings"
	"testing"
	"time"
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

// holderValue is the value jetlake writes for instance id.
func holderValue(id string) []byte {
	return leaseValue(Holder{Instance: id, Host: "h", PID: 7, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
}

// Membership entries that are not values jetlake writes, or that nobody
// renewed for twice the TTL, count as no instance: they neither take a
// share nor push a live instance's share to 0, and each is reported.
func TestForgedAndStaleMembersTakeNoShare(t *testing.T) {
	const ttl = 10 * time.Second
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	const prefix = "member.Yw."
	live := func(id string) Entry {
		return Entry{Key: prefix + id, Value: holderValue(id), Revision: 9, Created: now.Add(-ttl / 3)}
	}
	forged := []Entry{
		{Key: prefix + "0", Value: holderValue("0"), Revision: 1, Created: now.Add(-2*ttl - time.Second)}, // no TTL, left behind
		{Key: prefix + "00", Value: []byte("hello"), Revision: 2, Created: now},
		{Key: prefix + "01", Value: holderValue("ZZZ"), Revision: 3, Created: now},                  // names another
		{Key: prefix + "02", Value: []byte(`{"instance":""}`), Revision: 4, Created: now},           // names none
		{Key: prefix + "03", Value: []byte(`{"instance":"03","pid":0}`), Revision: 5, Created: now}, // no process
		{Key: prefix + "04", Value: []byte(`null`), Revision: 6, Created: now},                      // nothing
		{Key: prefix + "a b", Value: holderValue("a b"), Revision: 7, Created: now},                 // no id
		{Key: prefix + "05", Value: []byte(`{"instance":"05","pid":1,"started":"` + strings.Repeat("x", 5000) + `"`), Revision: 8, Created: now},
	}
	for _, tc := range []struct {
		name       string
		partitions int
		live       []string
		self       string // also an instance, not among the entries: its own write failed
	}{
		{"one live instance", 2, []string{"A"}, ""},
		{"as many partitions as instances", 3, []string{"A", "B", "C"}, ""},
		{"more partitions than instances", 5, []string{"A", "B"}, ""},
		{"self not listed", 2, []string{"A"}, "B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries := append([]Entry(nil), forged...)
			for _, id := range tc.live {
				entries = append(entries, live(id))
			}
			selves := tc.live
			if tc.self != "" {
				selves = append(selves, tc.self)
			}
			total := 0
			for _, self := range selves {
				ids, ignored := liveMembers(entries, prefix, self, now, ttl)
				want := len(tc.live)
				if self == tc.self {
					want++ // its own write failed, but it counts itself
				}
				if len(ids) != want {
					t.Errorf("%s counts the members %v, want %d", self, ids, want)
				}
				if len(ignored) != len(forged) {
					t.Errorf("%s ignored %d entries, want %d: %+v", self, len(ignored), len(forged), ignored)
				}
				share := Share(tc.partitions, ids, self)
				if share < 1 {
					t.Errorf("%s: share %d of %d partitions among %v", self, share, tc.partitions, ids)
				}
				total += share
			}
			if tc.self == "" && total != tc.partitions {
				t.Errorf("the shares add up to %d, want %d", total, tc.partitions)
			}
		})
	}
}

// Values jetlake writes are holders; anything else is not.
func TestParseHolderRefusesWhatJetlakeNeverWrites(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
	}{
		{string(holderValue("Fb3xUqh0TLKQsU8IVJ5Wq7")), true},
		{string(leaseValue(NewHolder("Fb3xUqh0TLKQsU8IVJ5Wq7"))), true},
		{`{"instance":"Fb3xUqh0TLKQsU8IVJ5Wq7","host":"","pid":1,"started":"2026-01-02T03:04:05Z"}`, true},
		{``, false},
		{`hello`, false},
		{`null`, false},
		{`{}`, false},
		{`"Fb3xUqh0TLKQsU8IVJ5Wq7"`, false},
		{`{"instance":"","pid":1,"started":"2026-01-02T03:04:05Z"}`, false},
		{`{"instance":"a.b","pid":1,"started":"2026-01-02T03:04:05Z"}`, false},
		{`{"instance":"a>","pid":1,"started":"2026-01-02T03:04:05Z"}`, false},
		{`{"instance":"` + strings.Repeat("a", 65) + `","pid":1,"started":"2026-01-02T03:04:05Z"}`, false},
		{`{"instance":"x","pid":0,"started":"2026-01-02T03:04:05Z"}`, false},
		{`{"instance":"x","pid":-4,"started":"2026-01-02T03:04:05Z"}`, false},
		{`{"instance":"x","pid":1}`, false},
		{`{"instance":"x","pid":1,"started":"2026-01-02T03:04:05Z","host":"` + strings.Repeat("h", 5000) + `"}`, false},
	} {
		_, err := ParseHolder([]byte(tc.value))
		if (err == nil) != tc.ok {
			t.Errorf("ParseHolder(%.60q): %v, want ok %v", tc.value, err, tc.ok)
		}
	}
}
