package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/pathtemplate"
)

// storedMsg is a message as the stream stored it.
type storedMsg struct {
	subject string
	header  nats.Header
	data    []byte
}

// Messages the server writes itself are exported as what they are: a
// subject delete marker (a per-message TTL expired, with
// subject_delete_marker_ttl set), the message a schedule publishes when
// it fires, and the values a counter stream stores for increments. Each
// record holds the subject, headers and payload the stream stored, nothing
// stops, no message is rejected, and verify passes although the messages
// the markers and the schedule replaced are gone from the stream. A
// message that expires before jetlake reads it is a gap: a loss marker
// names it.
func TestServerWrittenMessagesAreExportedAsStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns, ms := shared.NATS(t), shared.MinIO(t)
	nc, err := nats.Connect(ns.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	// One message a subject, so that a short TTL is not raised to the
	// marker's TTL (nats-server raises a shorter one otherwise).
	swm, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SWM", Subjects: []string{"swm.>"},
		AllowMsgTTL: true, SubjectDeleteMarkerTTL: time.Hour, AllowMsgSchedules: true, MaxMsgsPerSubject: 1})
	if err != nil {
		t.Fatal(err)
	}
	swc, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SWC", Subjects: []string{"swc.>"}, AllowMsgCounter: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := ms.CreateBucket(ctx, "serverwritten"); err != nil {
		t.Fatal(err)
	}
	publish := func(subject string, data string, header ...string) uint64 {
		t.Helper()
		m := nats.NewMsg(subject)
		m.Data = []byte(data)
		for i := 0; i+1 < len(header); i += 2 {
			m.Header[header[i]] = []string{header[i+1]}
		}
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatalf("publish to %s: %v", subject, err)
		}
		return ack.Sequence
	}
	// Read before it expires, and the schedule before it fires: 10 s
	// leave a loaded machine time to start jetlake (with 1 s for the TTL
	// and 3 s for the schedule, the first run started after they were
	// gone, and a connector that starts after a message is gone does not
	// count it).
	publish("swm.ttl", `{"gone":"soon"}`, "Nats-TTL", "10s")
	publish("swm.sched", `{"hello":1}`, "Nats-Schedule", "@at "+time.Now().Add(10*time.Second).UTC().Format(time.RFC3339),
		"Nats-Schedule-Target", "swm.fired", "X-Mine", "kept")
	publish("swc.c", "", "Nats-Incr", "5")
	publish("swc.c", "", "Nats-Incr", "3")

	file := writeFile(t, "serverwritten.toml", fmt.Sprintf(`name = "serverwritten"
[nats]
url = %q
[[streams]]
stream = "SWM"
ack_wait = "30s"
[[streams]]
stream = "SWC"
ack_wait = "30s"
[s3]
bucket = "serverwritten"
endpoint = %q
prefix = "lake"
[output]
include_headers = true
[rotation]
max_file_age = "2s"
`, ns.URL, ms.Endpoint))
	stored := map[string]storedMsg{} // by "<stream>/<sequence>"
	snapshot := func() {
		t.Helper()
		for _, s := range []jetstream.Stream{swm, swc} {
			info, err := s.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for q := info.State.FirstSeq; q <= info.State.LastSeq; q++ {
				if m, err := s.GetMsg(ctx, q); err == nil {
					stored[fmt.Sprintf("%s/%d", info.Config.Name, q)] = storedMsg{m.Subject, m.Header, m.Data}
				}
			}
		}
	}
	untilIdle := func() {
		t.Helper()
		cmd := exec.Command(binary, "run", "-until-idle", "-config", file)
		cmd.Env = ms.ClientEnv()
		if out, err := runWithTimeout(cmd, time.Minute); err != nil {
			t.Fatalf("run -until-idle: %v\n%s", err, logTail(string(out), 20))
		}
	}
	// The messages the server will delete are exported first, then the
	// ones it writes in their place.
	snapshot()
	untilIdle()
	// This one expires before jetlake reads it: a gap, which a loss marker
	// names.
	expired := publish("swm.expired", `{"never":"read"}`, "Nats-TTL", "1s")
	exportertest.WaitFor(t, 30*time.Second, "the delete markers and the fired schedule", func() bool {
		marked := 0
		for _, subject := range []string{"swm.ttl", "swm.expired"} {
			if m, err := swm.GetLastMsgForSubject(ctx, subject); err == nil && m.Header.Get("Nats-Marker-Reason") != "" {
				marked++
			}
		}
		_, err := swm.GetLastMsgForSubject(ctx, "swm.fired")
		return marked == 2 && err == nil
	})
	snapshot()
	untilIdle()

	mc, err := ms.Client()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]map[string]json.RawMessage{}
	var markers []string
	for obj := range mc.ListObjects(ctx, "serverwritten", minio.ListObjectsOptions{Prefix: "lake/", Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		if strings.HasPrefix(obj.Key, pathtemplate.OwnPrefix("lake")) {
			switch {
			case strings.HasPrefix(obj.Key, pathtemplate.KindPrefix("lake", pathtemplate.Lost)):
				markers = append(markers, obj.Key)
			case !strings.HasPrefix(obj.Key, pathtemplate.KindPrefix("lake", pathtemplate.Probe)):
				t.Errorf("%s: a message was rejected", obj.Key)
			}
			continue
		}
		r, err := mc.GetObject(ctx, "serverwritten", obj.Key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			var rec map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Fatalf("%s: %v", obj.Key, err)
			}
			var stream string
			var seq uint64
			json.Unmarshal(rec["stream"], &stream)
			json.Unmarshal(rec["sequence"], &seq)
			exported[fmt.Sprintf("%s/%d", stream, seq)] = rec
		}
	}
	kinds := map[string]bool{}
	for _, at := range slices.Sorted(maps.Keys(stored)) {
		m := stored[at]
		rec, ok := exported[at]
		if !ok {
			t.Errorf("%s (%s %v) was not exported", at, m.subject, m.header)
			continue
		}
		var subject string
		var header map[string][]string
		json.Unmarshal(rec["subject"], &subject)
		json.Unmarshal(rec["headers"], &header)
		wantPayload := "null"
		if len(m.data) > 0 {
			wantPayload = string(m.data)
		}
		if subject != m.subject || !maps.EqualFunc(header, m.header, slices.Equal) || string(rec["payload"]) != wantPayload {
			t.Errorf("%s: exported subject %q, headers %v, payload %s; the stream stored %q, %v, %s", at, subject, header, rec["payload"], m.subject, m.header, wantPayload)
		}
		switch {
		case m.header.Get("Nats-Marker-Reason") == "MaxAge" && len(m.data) == 0:
			kinds["delete marker"] = true
		case m.header.Get("Nats-Scheduler") == "swm.sched" && m.header.Get("Nats-Schedule-Next") == "purge":
			kinds["fired schedule"] = true
		case m.header.Get("Nats-Incr") == "3" && string(m.data) == `{"val":"8"}`:
			kinds["counter"] = true
		}
	}
	for _, k := range []string{"delete marker", "fired schedule", "counter"} {
		if !kinds[k] {
			t.Errorf("no %s among the stored messages: %d stored", k, len(stored))
		}
	}
	if want := fmt.Sprintf("lake/_jetlake/lost/SWM/%s/%s-%s.lost.json", time.Now().UTC().Format(time.DateOnly),
		pathtemplate.AppendSeq(nil, expired), pathtemplate.AppendSeq(nil, expired)); len(markers) != 1 || markers[0] != want {
		t.Errorf("loss markers %q, want one for the message that expired unread, %s", markers, want)
	}
	if len(exported) != len(stored) {
		t.Errorf("%d records exported, %d messages stored", len(exported), len(stored))
	}
	cmd := exec.Command(binary, "verify", "-deep", "-quiet", "-config", file)
	cmd.Env = ms.ClientEnv()
	if out, err := runWithTimeout(cmd, time.Minute); err != nil || strings.Count(string(out), "OK: every sequence") != 2 {
		t.Fatalf("verify -deep: %v\n%s", err, out)
	}
}
