package pathtemplate_test

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/pathtemplate"
)

// compactionID is a compaction id as iceberg.CompactGroup.ID makes them:
// 12 bytes of a SHA-256, in hex.
const compactionID = "9f86d081884c7d659a2feaa0"

// TestKeyFormsAreThoseOfEarlierReleases renders one key of every kind and
// compares it with a key of that kind as earlier releases wrote it (copied
// from the tests of the code that wrote it: verify and recovery read these
// keys back), then parses its name back.
func TestKeyFormsAreThoseOfEarlierReleases(t *testing.T) {
	day := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	tests := []struct {
		kind string
		key  string // rendered
		want string // as earlier releases wrote it
		name pathtemplate.Name
	}{
		{"data object (pathtemplate/render_test.go)",
			mustKey(t, "raw", "ORDERS/2026-01-01", 1, 500, "jsonl"),
			"raw/ORDERS/2026-01-01/00000000000000000001-00000000000000000500.jsonl",
			pathtemplate.Name{First: 1, Last: 500, Ext: "jsonl"}},
		{"compressed data object",
			mustKey(t, "raw", "ORDERS/2026-01-01", 1, 500, "jsonl.gz"),
			"raw/ORDERS/2026-01-01/00000000000000000001-00000000000000000500.jsonl.gz",
			pathtemplate.Name{First: 1, Last: 500, Ext: "jsonl.gz"}},
		{"Iceberg data file (internal/iceberg/location_test.go)",
			mustKey(t, "raw/lake/events/data", "timestamp_hour=2026-12-01-07/subject=s.a", 1, 10, "parquet"),
			"raw/lake/events/data/timestamp_hour=2026-12-01-07/subject=s.a/00000000000000000001-00000000000000000010.parquet",
			pathtemplate.Name{First: 1, Last: 10, Ext: "parquet"}},
		{"compacted data file (internal/iceberg/compact.go's format)",
			pathtemplate.CompactedKey("s3://lake/raw/lake/events/data", "timestamp_hour=2026-12-01-07/subject=x", 1, 60, compactionID),
			"s3://lake/raw/lake/events/data/timestamp_hour=2026-12-01-07/subject=x/00000000000000000001-00000000000000000060-c9f86d081884c7d659a2feaa0.parquet",
			pathtemplate.Name{First: 1, Last: 60, Compaction: compactionID, Ext: "parquet"}},
		{"loss marker (lossmarker/lossmarker_test.go)",
			pathtemplate.LostKey("raw", "ORDERS", day, 1001, 1500),
			"raw/_jetlake/lost/ORDERS/2026-11-29/00000000000000001001-00000000000000001500.lost.json",
			pathtemplate.Name{First: 1001, Last: 1500, Ext: "lost.json"}},
		{"loss marker of an escaped stream, with the largest sequence",
			pathtemplate.LostKey("raw", "a/b c", day, 1, math.MaxUint64),
			"raw/_jetlake/lost/a%2Fb%20c/2026-11-29/00000000000000000001-18446744073709551615.lost.json",
			pathtemplate.Name{First: 1, Last: math.MaxUint64, Ext: "lost.json"}},
		{"rejected messages (exporter/table_test.go)",
			mustKey(t, "raw", string(pathtemplate.AppendRejectedDir(nil, "S", time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC))), 3, 3, "jsonl"),
			"raw/_jetlake/rejected/S/2026-12-01/00000000000000000003-00000000000000000003.jsonl",
			pathtemplate.Name{First: 3, Last: 3, Ext: "jsonl"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			if tt.key != tt.want {
				t.Errorf("rendered %q\nwant     %q", tt.key, tt.want)
			}
			got, ok := pathtemplate.ParseName(path.Base(tt.want))
			if !ok || got != tt.name {
				t.Errorf("ParseName(%q) = %+v, %v; want %+v", path.Base(tt.want), got, ok, tt.name)
			}
		})
	}
}

func mustKey(t *testing.T, prefix, dir string, first, last uint64, ext string) string {
	t.Helper()
	key, err := pathtemplate.Key(prefix, dir, first, last, ext)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// TestCompactedKeyIsTheFormatOfEarlierReleases compares CompactedKey with
// the format internal/iceberg wrote compacted files with before, including
// the "." folder of an unpartitioned table.
func TestCompactedKeyIsTheFormatOfEarlierReleases(t *testing.T) {
	for _, tt := range []struct {
		location, partition string
		first, last         uint64
	}{
		{"s3://lake/raw/lake/events", "timestamp_hour=2026-12-01-07/subject=s.a", 1, 60},
		{"s3://lake/raw/lake/events/", "timestamp_day=2026-12-01", 7, 7},
		{"s3://lake/events", ".", 1, math.MaxUint64},
	} {
		earlier := fmt.Sprintf("%s/data/%s/%020d-%020d-c%s.parquet", strings.TrimSuffix(tt.location, "/"), tt.partition, tt.first, tt.last, compactionID)
		got := pathtemplate.CompactedKey(strings.TrimSuffix(tt.location, "/")+"/data", tt.partition, tt.first, tt.last, compactionID)
		if got != earlier {
			t.Errorf("CompactedKey = %q\nearlier      %q", got, earlier)
		}
	}
}

func TestAppendCompactedKeyAppends(t *testing.T) {
	got := pathtemplate.AppendCompactedKey([]byte("k:"), "", nil, 1, 2, "ab")
	if want := "k:00000000000000000001-00000000000000000002-cab.parquet"; string(got) != want {
		t.Errorf("AppendCompactedKey = %q, want %q", got, want)
	}
}

func TestOwnKeysAreUnderTheirPrefixes(t *testing.T) {
	day := time.Date(2026, 1, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600)) // 2025-12-31 in UTC
	tests := []struct {
		name, got, want string
	}{
		{"own objects", pathtemplate.OwnPrefix("raw"), "raw/_jetlake/"},
		{"own objects, no prefix", pathtemplate.OwnPrefix(""), "_jetlake/"},
		{"loss markers", pathtemplate.KindPrefix("raw", pathtemplate.Lost), "raw/_jetlake/lost/"},
		{"rejected messages", pathtemplate.KindPrefix("data/raw", pathtemplate.Rejected), "data/raw/_jetlake/rejected/"},
		{"probes, no prefix", pathtemplate.KindPrefix("", pathtemplate.Probe), "_jetlake/probe/"},
		{"a stream's loss markers", pathtemplate.StreamPrefix("raw", pathtemplate.Lost, "ORDERS"), "raw/_jetlake/lost/ORDERS/"},
		{"a stream's rejected messages, escaped", pathtemplate.StreamPrefix("raw", pathtemplate.Rejected, ".."), "raw/_jetlake/rejected/%2E%2E/"},
		{"loss marker, no prefix, date in UTC", pathtemplate.LostKey("", "ORDERS", day, 7, 7),
			"_jetlake/lost/ORDERS/2025-12-31/00000000000000000007-00000000000000000007.lost.json"},
		{"rejected directory, date in UTC", string(pathtemplate.AppendRejectedDir([]byte("x:"), "a b", day)),
			"x:_jetlake/rejected/a%20b/2025-12-31"},
		// cmd/jetlake/plan_test.go: the probe of connector plangood, by plan.
		{"probe", pathtemplate.ProbeKey("raw", "plangood-plan", "ID"), "raw/_jetlake/probe/plangood-plan-ID"},
		{"probe, no prefix, escaped name", pathtemplate.ProbeKey("", "a/b", "ID"), "_jetlake/probe/a%2Fb-ID"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	// Every own key is under its stream's prefix, its kind's and the
	// prefix of all own objects; a probe's name is no sequence range, so
	// no reader takes it for data.
	lost := pathtemplate.LostKey("raw", "S", day, 1, 2)
	rejected := mustKey(t, "raw", string(pathtemplate.AppendRejectedDir(nil, "S", day)), 1, 2, "jsonl")
	probe := pathtemplate.ProbeKey("raw", "c", "ID")
	for _, k := range []struct {
		key    string
		kind   pathtemplate.Kind
		stream bool
	}{{lost, pathtemplate.Lost, true}, {rejected, pathtemplate.Rejected, true}, {probe, pathtemplate.Probe, false}} {
		prefixes := []string{pathtemplate.OwnPrefix("raw"), pathtemplate.KindPrefix("raw", k.kind)}
		if k.stream {
			prefixes = append(prefixes, pathtemplate.StreamPrefix("raw", k.kind, "S"))
		}
		for _, p := range prefixes {
			if !strings.HasPrefix(k.key, p) {
				t.Errorf("%q is not under %q", k.key, p)
			}
		}
	}
	if n, ok := pathtemplate.ParseName(path.Base(probe)); ok {
		t.Errorf("ParseName(%q) = %+v, want no range", path.Base(probe), n)
	}
}

func TestParseName(t *testing.T) {
	const r = "00000000000000000001-00000000000000000002"
	tests := []struct {
		name string
		want pathtemplate.Name
		ok   bool
	}{
		{r + ".jsonl", pathtemplate.Name{First: 1, Last: 2, Ext: "jsonl"}, true},
		{r + ".jsonl.zst", pathtemplate.Name{First: 1, Last: 2, Ext: "jsonl.zst"}, true},
		{r + ".lost.json", pathtemplate.Name{First: 1, Last: 2, Ext: "lost.json"}, true},
		{r + "-cabc.parquet", pathtemplate.Name{First: 1, Last: 2, Compaction: "abc", Ext: "parquet"}, true},
		{"00000000000000000007-00000000000000000007.json", pathtemplate.Name{First: 7, Last: 7, Ext: "json"}, true},
		{"18446744073709551615-18446744073709551615.bin", pathtemplate.Name{First: math.MaxUint64, Last: math.MaxUint64, Ext: "bin"}, true},

		{"", pathtemplate.Name{}, false},
		{r, pathtemplate.Name{}, false},                                                 // no extension
		{r + ".", pathtemplate.Name{}, false},                                           // an empty one
		{r + "-c.parquet", pathtemplate.Name{}, false},                                  // no compaction id
		{r + "-cabc.jsonl", pathtemplate.Name{}, false},                                 // compaction writes parquet
		{r + "-cabc", pathtemplate.Name{}, false},                                       // nor no extension
		{r + "-cab.c.parquet", pathtemplate.Name{}, false},                              // an id holds no "."
		{r + "-xabc.parquet", pathtemplate.Name{}, false},                               // not a compaction
		{r + "_x.jsonl", pathtemplate.Name{}, false},                                    // neither "." nor "-"
		{"00000000000000000000-00000000000000000002.jsonl", pathtemplate.Name{}, false}, // sequences start at 1
		{"00000000000000000003-00000000000000000002.jsonl", pathtemplate.Name{}, false}, // last before first
		{"18446744073709551616-18446744073709551616.jsonl", pathtemplate.Name{}, false}, // past uint64
		{"+0000000000000000001-00000000000000000002.jsonl", pathtemplate.Name{}, false},
		{"0000000000000000001-000000000000000000002.jsonl", pathtemplate.Name{}, false}, // 19 and 21 digits
		{"00000000000000000001_00000000000000000002.jsonl", pathtemplate.Name{}, false},
		{"0000000000000000000a-00000000000000000002.jsonl", pathtemplate.Name{}, false},
		{"1-2.jsonl", pathtemplate.Name{}, false},
		{"plangood-plan-5Pg2Xl3kVqzM4iLpQ1ZmKd", pathtemplate.Name{}, false},
	}
	for _, tt := range tests {
		got, ok := pathtemplate.ParseName(tt.name)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

// earlierParse is how verify parsed object names before ParseName: it
// took any name with a range and a "." or "-" after it.
func earlierParse(name string) (first, last uint64, ok bool) {
	if len(name) < 42 || name[20] != '-' || name[41] != '.' && name[41] != '-' {
		return 0, 0, false
	}
	f, err1 := strconv.ParseUint(name[:20], 10, 64)
	l, err2 := strconv.ParseUint(name[21:41], 10, 64)
	if err1 != nil || err2 != nil || f == 0 || l < f {
		return 0, 0, false
	}
	return f, l, true
}

// FuzzParseName checks that ParseName never panics, that a name it accepts
// renders back to itself and is one the earlier parser took with the same
// range, and that every name AppendKey and AppendCompactedKey render for
// a range parses back to what they rendered.
func FuzzParseName(f *testing.F) {
	for _, name := range []string{
		"00000000000000000001-00000000000000000500.jsonl",
		"00000000000000000001-00000000000000000060-c9f86d081884c7d659a2feaa0.parquet",
		"00000000000000001001-00000000000000001500.lost.json",
		"00000000000000000001-18446744073709551615.jsonl.gz",
		"00000000000000000001-00000000000000000002-c.parquet",
		"00000000000000000001-00000000000000000002-x",
		"18446744073709551616-18446744073709551616.jsonl",
		"plangood-plan-5Pg2Xl3kVqzM4iLpQ1ZmKd",
		"",
	} {
		f.Add(name, uint64(1), uint64(500), "jsonl", compactionID)
	}
	f.Add("", uint64(0), uint64(0), "", "")
	f.Add("", uint64(math.MaxUint64), uint64(1), "a.b/c", "a.b")
	f.Fuzz(func(t *testing.T, name string, first, last uint64, ext, id string) {
		n, ok := pathtemplate.ParseName(name)
		if ok {
			var again []byte
			if n.Compaction != "" {
				again = pathtemplate.AppendCompactedKey(nil, "", nil, n.First, n.Last, n.Compaction)
			} else {
				again = pathtemplate.AppendKey(nil, "", nil, n.First, n.Last, n.Ext)
			}
			if string(again) != name {
				t.Errorf("ParseName(%q) = %+v, which renders %q", name, n, again)
			}
			if f, l, ok := earlierParse(name); !ok || f != n.First || l != n.Last {
				t.Errorf("ParseName(%q) = %+v; the earlier parser gave %d, %d, %v", name, n, f, l, ok)
			}
		} else if n != (pathtemplate.Name{}) {
			t.Errorf("ParseName(%q) refused it but returned %+v", name, n)
		}

		// A range of stream sequences renders to a name that parses back.
		if first == 0 || last < first {
			return
		}
		data := string(pathtemplate.AppendKey(nil, "", nil, first, last, ext))
		n, ok = pathtemplate.ParseName(data)
		if want := (pathtemplate.Name{First: first, Last: last, Ext: ext}); ext != "" && (!ok || n != want) {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v", data, n, ok, want)
		}
		if id == "" || strings.ContainsAny(id, "./") {
			return
		}
		compacted := string(pathtemplate.AppendCompactedKey(nil, "", nil, first, last, id))
		n, ok = pathtemplate.ParseName(compacted)
		if want := (pathtemplate.Name{First: first, Last: last, Compaction: id, Ext: pathtemplate.CompactedExt}); !ok || n != want {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v", compacted, n, ok, want)
		}
	})
}
