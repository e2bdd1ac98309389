package exporter_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/internal/formatstest"
	"github.com/jetlake/jetlake/internal/iceberg/icebergtest"
	"github.com/jetlake/jetlake/internal/metrics"
	"github.com/jetlake/jetlake/pathtemplate"
)

// tenantTable turns the test's connector into one that writes an Iceberg
// table partitioned by the identity of a typed string column, named
// column, read from the payload's "tenant", and returns the catalog file.
func (e *env) tenantTable(column string) string {
	e.t.Helper()
	catalog := e.icebergConnector("1h")
	body, err := os.ReadFile(e.file)
	if err != nil {
		e.t.Fatal(err)
	}
	s := strings.Replace(string(body), "\n[iceberg]\n", fmt.Sprintf(`
[[output.columns]]
name = %q
source = "tenant"
type = "string"

[iceberg]
`, column), 1)
	s += fmt.Sprintf("partitioning = [%q]\n", column)
	if err := os.WriteFile(e.file, []byte(s), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return catalog
}

// tenantRows reads the table back: the file of each sequence, and the
// tenant (the value of column) of each sequence's row. A sequence in two
// files fails the test.
func (e *env) tenantRows(c *config.Connector, catalog, column string) (files map[uint64]string, tenants map[uint64]string, tr *icebergtest.Table) {
	e.t.Helper()
	tr = e.readTable(c, catalog)
	get := icebergtest.MinIOGet(e.mc, e.bucket)
	files, tenants = map[uint64]string{}, map[uint64]string{}
	for _, f := range tr.Files {
		if int64(len(f.Seqs)) != f.Records {
			e.t.Errorf("%s: %d rows, its manifest entry says %d", f.Path, len(f.Seqs), f.Records)
		}
		body, err := get(f.Path)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, row := range formatstest.ReadParquet(e.t, body).Rows {
			q := uint64(row["sequence"].(int64))
			if prev, dup := files[q]; dup {
				e.t.Fatalf("sequence %d is in %s and %s", q, prev, f.Path)
			}
			files[q] = f.Path
			tenant, _ := row[column].(string)
			tenants[q] = tenant
		}
	}
	return files, tenants, tr
}

// A publisher's tenant of 300 bytes, or of 1,200 (alone more than S3's
// 1,024-byte key), partitioning an Iceberg table by identity(tenant),
// can not make a data file key the store refuses: the partition folder
// names a value of more than pathtemplate.MaxValueLen bytes cut, with a
// hash of the whole value, and the table is opened only when its longest
// data file key fits S3's limit. So no message of such a tenant is
// rejected: each goes into a committed data file of its own partition,
// whose folder segment is at most "tenant=" and 128 bytes, whose key is
// at most 1,024 bytes, and whose manifest entry holds the whole tenant;
// two long tenants that share their first 128 bytes keep two folders. The
// run goes idle, every message is acked and verify passes.
func TestALongTenantOfAnIcebergIdentityPartitionLandsUnderABoundedKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	catalog := e.tenantTable("tenant")
	c := e.connector()
	e.metrics = metrics.New(nil)
	const n = 60
	long := map[int]string{
		10: strings.Repeat("a", 300),
		20: strings.Repeat("a", 300) + "b", // the same first 128 bytes as 10's
		30: strings.Repeat("é/", 400),      // 1,200 bytes, 3,600 escaped
		40: strings.Repeat("z", 1200),
	}
	last := e.publishEach(n, func(i int) (string, []byte) {
		tenant := fmt.Sprintf("t%d", i%3)
		if v, ok := long[i]; ok {
			tenant = v
		}
		body, _ := json.Marshal(map[string]any{"i": i, "tenant": tenant})
		return e.stream + ".s", body
	})
	start := time.Now()
	e.runUntilIdle(c, time.Minute)
	t.Logf("idle after %s", time.Since(start).Round(time.Millisecond))

	files, tenants, tr := e.tenantRows(c, catalog, "tenant")
	first := last - n + 1
	for q := first; q <= last; q++ {
		if _, ok := files[q]; !ok {
			t.Errorf("sequence %d is in no committed data file", q)
		}
	}
	if len(files) != n {
		t.Fatalf("%d sequences in the table, want %d", len(files), n)
	}
	folders := map[string]string{}
	for i, v := range long {
		q := first + uint64(i)
		if tenants[q] != v {
			t.Errorf("sequence %d: tenant of %d bytes in the table, want %d", q, len(tenants[q]), len(v))
		}
		key := strings.TrimPrefix(files[q], "s3://"+e.bucket+"/")
		seg := key[strings.Index(key, "/tenant=")+1:]
		seg = seg[:strings.IndexByte(seg, '/')]
		if len(seg) > len("tenant=")+pathtemplate.MaxValueLen || len(key) > pathtemplate.MaxKeyLen {
			t.Errorf("the file of a tenant of %d bytes has a folder segment of %d bytes, a key of %d: %s", len(v), len(seg), len(key), key)
		}
		if prev, ok := folders[seg]; ok {
			t.Errorf("tenants %.20q... and %.20q... share folder %s", prev, v, seg)
		}
		folders[seg] = v
		t.Logf("a tenant of %d bytes: folder segment of %d bytes, key of %d", len(v), len(seg), len(key))
	}
	// The manifest, not the folder, holds each long tenant whole.
	whole := map[string]bool{}
	for _, f := range tr.Files {
		if v, ok := f.Partition["tenant"].(map[string]any); ok {
			for _, x := range v {
				if s, ok := x.(string); ok {
					whole[s] = true
				}
			}
		} else if s, ok := f.Partition["tenant"].(string); ok {
			whole[s] = true
		}
	}
	for _, v := range long {
		if !whole[v] {
			t.Errorf("no manifest entry's partition holds the tenant of %d bytes whole", len(v))
		}
	}
	for _, kind := range []string{"key", "type"} {
		if got := testutil.ToFloat64(e.metrics.Rejected.WithLabelValues(c.Name, e.stream, kind)); got != 0 {
			t.Errorf("messages_rejected_total{reason=%s} = %v, want 0", kind, got)
		}
	}
	e.wantAllAcked()
	if r := e.verify(c)[0]; r.Messages != n || r.RejectedMessages != 0 {
		t.Errorf("verify: %d messages, %d rejected; want %d, 0", r.Messages, r.RejectedMessages, n)
	}
}

// The one partition folder the store can refuse is one whose segment,
// the partition field's name and its value, is longer than the 255 bytes
// MinIO takes: a column name (which config does not bound) of 140 bytes
// and a tenant cut to 128. Such a data file's key is refused, and its
// messages are poison for that key, not for the table: the run goes idle
// within its bound, though the refused messages alone fill
// max_ack_pending; each short tenant's message is in a committed data
// file; each long tenant's message is in a rejected object with reason
// "key", counted by messages_rejected_total{reason="key"}; every message
// is acked, no intent is left, and verify counts both.
func TestAnIcebergDataFileKeyTheStoreRefusesRejectsItsMessagesAndTheTableGoesOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, shared.NATS(t), shared.MinIO(t), `
max_messages_per_file = 100
max_file_age = "1s"`)
	column := "tenant_" + strings.Repeat("x", 133)
	catalog := e.tenantTable(column)
	c := e.connector()
	const bad, good = 6, 60
	c.Streams[0].MaxAckPending = bad
	e.metrics = metrics.New(nil)
	// Long tenants, one in every 11 messages: 300 bytes, and 1,200.
	isBad := func(i int) bool { return i%11 == 5 }
	last := e.publishEach(bad+good, func(i int) (string, []byte) {
		tenant := fmt.Sprintf("t%d", i%3)
		if isBad(i) {
			size := 300
			if i%2 == 0 {
				size = 1200
			}
			tenant = fmt.Sprintf("%d-%s", i, strings.Repeat("x", size))[:size]
		}
		body, _ := json.Marshal(map[string]any{"i": i, "tenant": tenant})
		return e.stream + ".s", body
	})
	first := last - bad - good + 1
	var refused []uint64
	for i := range bad + good {
		if isBad(i) {
			refused = append(refused, first+uint64(i))
		}
	}
	if len(refused) != bad {
		t.Fatalf("%d long tenants published, want %d", len(refused), bad)
	}
	start := time.Now()
	e.runUntilIdle(c, time.Minute)
	t.Logf("idle after %s", time.Since(start).Round(time.Millisecond))

	files, tenants, _ := e.tenantRows(c, catalog, column)
	for i := range bad + good {
		q := first + uint64(i)
		_, in := files[q]
		switch {
		case isBad(i) && in:
			t.Errorf("sequence %d, of a refused key, is in the table: %s", q, files[q])
		case !isBad(i) && !in:
			t.Errorf("sequence %d is in no committed data file", q)
		case !isBad(i) && tenants[q] != fmt.Sprintf("t%d", i%3):
			t.Errorf("sequence %d: tenant %q in the table, want t%d", q, tenants[q], i%3)
		}
	}
	if len(files) != good {
		t.Errorf("%d sequences in the table, want %d", len(files), good)
	}

	var rejected []uint64
	for key, body := range e.objects("raw/_jetlake/rejected/" + e.stream + "/") {
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r struct {
				Sequence uint64              `json:"sequence"`
				Headers  map[string][]string `json:"headers"`
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if reason := r.Headers[exporter.RejectReasonHeader]; len(reason) != 1 || !strings.Contains(reason[0], "refuses the object key") {
				t.Errorf("%s: sequence %d's reason %q does not say the store refused its key", key, r.Sequence, reason)
			}
			rejected = append(rejected, r.Sequence)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(rejected, func(i, j int) bool { return rejected[i] < rejected[j] })
	if fmt.Sprint(rejected) != fmt.Sprint(refused) {
		t.Errorf("rejected %v, want %v", rejected, refused)
	}
	if got := testutil.ToFloat64(e.metrics.Rejected.WithLabelValues(c.Name, e.stream, "key")); got != bad {
		t.Errorf("messages_rejected_total{reason=key} = %v, want %d", got, bad)
	}
	e.wantAllAckedButRedelivered(last)
	if n := e.stateKeys(context.Background()); n != 0 {
		t.Errorf("%d intents, plans and claims left in the state bucket", n)
	}
	if r := e.verify(c)[0]; r.Messages != good || r.RejectedMessages != bad || len(r.Missing) != 0 {
		t.Errorf("verify: %d messages, %d rejected, missing %v; want %d, %d, none", r.Messages, r.RejectedMessages, r.Missing, good, bad)
	}
}

// wantAllAckedButRedelivered requires every message up to last acked and
// none pending; NAKed messages were redelivered, so redeliveries are not
// counted against it.
func (e *env) wantAllAckedButRedelivered(last uint64) {
	e.t.Helper()
	info := e.consumerInfo()
	if info.NumPending != 0 || info.NumAckPending != 0 || info.AckFloor.Stream != last {
		e.t.Errorf("consumer: %d pending, %d unacked, ack floor %d; want none, none, %d",
			info.NumPending, info.NumAckPending, info.AckFloor.Stream, last)
	}
}
