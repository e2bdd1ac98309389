package statekey

import (
	"strings"
	"testing"
)

// The keys as the state buckets of earlier releases hold them: a change
// here strands every intent, record, plan and lease written before.
func TestKeysKeepTheirForm(t *testing.T) {
	commits := Commits("events", "lake", "t")
	for _, tt := range []struct{ got, want string }{
		{StreamIntents("events", "EVENTS", "c") + "id", "intent.ZXZlbnRz.RVZFTlRT.Yw.id"},
		{Intents("events"), "intent.ZXZlbnRz."},
		{Record("events", "EVENTS", "c"), "export.ZXZlbnRz.RVZFTlRT.Yw"},
		{TableID("events", "lake", "t"), "table.ZXZlbnRz.lake.t"},
		{Plan(commits, "p1"), "iceberg.ZXZlbnRz.lake.t.plan.p1"},
		{Done(commits, "p1"), "iceberg.ZXZlbnRz.lake.t.done.p1"},
		{Claim(commits, "intent.a.b.c.d"), "iceberg.ZXZlbnRz.lake.t.claim.intent_a_b_c_d"},
		{Lease("events", "EVENTS", "c", 3), "lease.ZXZlbnRz.RVZFTlRT.Yw.3"},
		{Members("events") + "i1", "member.ZXZlbnRz.i1"},
		{Writes("events"), "*.ZXZlbnRz.>"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s, want %s", tt.got, tt.want)
		}
	}
}

// Every key a connector writes has its name as the second token, so that
// the permission Writes names covers them all, and another connector's
// none.
func TestEveryKeyOfAConnectorIsUnderWrites(t *testing.T) {
	commits := Commits("a.b", "lake", "t")
	keys := []string{
		StreamIntents("a.b", "S", "c") + "id", Record("a.b", "S", "c"), TableID("a.b", "lake", "t"),
		Plan(commits, "p"), Done(commits, "p"), Claim(commits, "intent.x.y"),
		Lease("a.b", "S", "c", 0), Members("a.b") + "i",
	}
	families := map[string]bool{}
	for _, k := range keys {
		tokens := strings.Split(k, ".")
		if tokens[1] != Token("a.b") {
			t.Errorf("%s: second token %q, want the connector's %q", k, tokens[1], Token("a.b"))
		}
		families[tokens[0]] = true
	}
	for _, f := range []string{FamilyIntent, FamilyExport, FamilyTable, FamilyCommit, FamilyLease, FamilyMember} {
		if !families[f] {
			t.Errorf("family %s has no key in the test", f)
		}
	}
}

func TestLeasePartitionReadsOnlyTheKeysJetlakeWrites(t *testing.T) {
	leases := Leases("events", "S", "c")
	for _, tt := range []struct {
		key  string
		want int
		ok   bool
	}{
		{LeaseAt(leases, 0), 0, true},
		{LeaseAt(leases, 7), 7, true},
		{leases + "8", 0, false}, // beyond the partitions
		{leases + "01", 0, false},
		{leases + "+1", 0, false},
		{leases + "-1", 0, false},
		{Leases("events", "S", "d") + "1", 0, false},
	} {
		k, ok := LeasePartition(tt.key, leases, 8)
		if k != tt.want || ok != tt.ok {
			t.Errorf("LeasePartition(%s) = %d, %v; want %d, %v", tt.key, k, ok, tt.want, tt.ok)
		}
	}
}
