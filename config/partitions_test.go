package config

import (
	"slices"
	"testing"
)

func TestPartitionFiltersPutTheTokenFirstAndPartitionZeroReadsWhatCameBefore(t *testing.T) {
	for _, tc := range []struct {
		k        int
		subjects []string
		want     []string
	}{
		{0, nil, []string{"0.>", "orders.>", "refunds.*"}},
		{3, nil, []string{"3.>"}},
		{0, []string{"orders.eu.*"}, []string{"0.orders.eu.*", "orders.eu.*"}},
		{7, []string{"orders.eu.*", "refunds.>"}, []string{"7.orders.eu.*", "7.refunds.>"}},
	} {
		got := PartitionFilters(tc.k, tc.subjects, []string{"orders.>", "refunds.*"})
		if !slices.Equal(got, tc.want) {
			t.Errorf("PartitionFilters(%d, %q) = %q, want %q", tc.k, tc.subjects, got, tc.want)
		}
		for i, a := range got {
			for _, b := range got[i+1:] {
				if SubjectsOverlap(a, b) {
					t.Errorf("filters %q and %q overlap", a, b)
				}
			}
		}
	}
}

func TestStripPartitionRemovesOnlyANumericFirstToken(t *testing.T) {
	for in, want := range map[string]string{
		"5.orders.eu.42": "orders.eu.42",
		"1023.a":         "a",
		"orders.eu.42":   "orders.eu.42",
		"5":              "5",
		".x":             ".x",
		"5a.orders":      "5a.orders",
	} {
		if got := StripPartition(in); got != want {
			t.Errorf("StripPartition(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckPartitionSubjectsRefusesWhatATokenCouldMatch(t *testing.T) {
	for _, tc := range []struct {
		subjects []string
		ok       bool
	}{
		{[]string{"orders.>", "refunds.*"}, true},
		{[]string{"*.orders"}, false},
		{[]string{">"}, false},
		{[]string{"orders.>", "42.x"}, false},
		{nil, false},
	} {
		if why := CheckPartitionSubjects(tc.subjects); (why == "") != tc.ok {
			t.Errorf("CheckPartitionSubjects(%q) = %q, want ok %v", tc.subjects, why, tc.ok)
		}
	}
}

func FuzzStripPartition(f *testing.F) {
	f.Add("5.orders")
	f.Add("orders.5")
	f.Fuzz(func(t *testing.T, s string) {
		got := StripPartition(s)
		if got != s && !(len(s) > len(got) && s[len(s)-len(got)-1] == '.' && s[len(s)-len(got):] == got) {
			t.Fatalf("StripPartition(%q) = %q: not a suffix after a token", s, got)
		}
	})
}

func TestTransformPartitionsReadsOnlyThePartitionTransform(t *testing.T) {
	for _, tc := range []struct {
		src, dst string
		want     int
		ok       bool
	}{
		{"", "{{partition(4)}}.>", 4, true},
		{"", "{{partition(1024)}}.>", 1024, true},
		{"orders.>", "{{partition(4)}}.>", 0, false},
		{"", "{{partition(04)}}.>", 0, false},
		{"", "{{partition(1)}}.>", 0, false},
		{"", "{{partition(1025)}}.>", 0, false},
		{"", "{{partition(4,1)}}.>", 0, false},
		{"", "x.>", 0, false},
	} {
		got, ok := TransformPartitions(tc.src, tc.dst)
		if got != tc.want || ok != tc.ok {
			t.Errorf("TransformPartitions(%q, %q) = %d, %v; want %d, %v", tc.src, tc.dst, got, ok, tc.want, tc.ok)
		}
	}
}
