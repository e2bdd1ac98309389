package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/exportertest"
)

// scrape returns the samples of /metrics whose name starts with prefix, as
// "name{labels}" → value; none while the server is not listening yet.
func scrape(t *testing.T, addr, prefix string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// sum adds the samples whose key starts with name.
func sum(samples map[string]float64, name string) float64 {
	total := 0.0
	for k, v := range samples {
		if k == name || strings.HasPrefix(k, name+"{") {
			total += v
		}
	}
	return total
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestMetricsCountWhatWasExportedAndReadinessFollowsTheStore(t *testing.T) {
	t.Parallel()
	ms := exportertest.MinIO(t, exportertest.MinIOOptions{})
	ctx := context.Background()
	js := streamAndBucket(t, shared.NATS(t), ms, "metrics", jetstream.StreamConfig{})
	const n = 1000
	for i := range n {
		if _, err := js.Publish(ctx, fmt.Sprintf("metrics.s%d", i%4), []byte(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	port, err := exportertest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	path := writeFile(t, "metrics.toml", fmt.Sprintf(`name = "metrics"
ready_upload_failure = "2s"
[nats]
url = %q
[[streams]]
stream = "METRICS"
[s3]
bucket = "metrics"
endpoint = %q
[rotation]
max_messages_per_file = 100
max_file_age = "1s"
`, shared.NATS(t).URL, ms.Endpoint))
	cmd := exec.Command(binary, "run", "-config", path, "-metrics-addr", addr)
	cmd.Env = ms.ClientEnv()
	var stderr lockedWriter
	var buf strings.Builder
	stderr.w = &buf
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitUntil := func(what string, d time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(d)
		for !cond() {
			if time.Now().After(deadline) {
				stderr.mu.Lock()
				defer stderr.mu.Unlock()
				t.Fatalf("timed out waiting for %s\n%s", what, buf.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitUntil("everything acked", 30*time.Second, func() bool {
		return sum(scrape(t, addr, "jetlake_messages_acked_total"), "jetlake_messages_acked_total") == n
	})
	if code := httpStatus(t, "http://"+addr+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	if code := httpStatus(t, "http://"+addr+"/readyz"); code != 200 {
		t.Fatalf("/readyz while healthy: %d", code)
	}
	s := scrape(t, addr, "jetlake_")
	mc, _ := ms.Client()
	objects, bytes := 0, int64(0)
	for obj := range mc.ListObjects(ctx, "metrics", minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		if strings.HasPrefix(obj.Key, "_jetlake/") {
			continue
		}
		objects++
		bytes += obj.Size
	}
	for name, want := range map[string]float64{
		"jetlake_messages_received_total": n,
		"jetlake_messages_acked_total":    n,
		"jetlake_objects_written_total":   float64(objects),
		"jetlake_bytes_written_total":     float64(bytes),
		"jetlake_messages_lost_total":     0,
	} {
		if got := sum(s, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// 250 messages a subject: two files of 100 by count, one of 50 by age.
	if got := sum(s, "jetlake_objects_written_total"); got != 12 {
		t.Errorf("%v objects, want 12", got)
	}
	if got := s[`jetlake_objects_written_total{connector="metrics",reason="age",stream="METRICS"}`]; got != 4 {
		t.Errorf("%v objects rotated by age, want 4", got)
	}
	if _, ok := s[`jetlake_objects_written_total{connector="metrics",reason="count",stream="METRICS"}`]; !ok {
		t.Errorf("no count-rotation series labelled by connector and stream: %v", s)
	}

	// The store goes away: uploads fail, and after ready_upload_failure
	// /readyz says so; it comes back when the store does.
	if err := ms.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "metrics.s0", []byte(`{"late":true}`)); err != nil {
		t.Fatal(err)
	}
	waitUntil("/readyz unready", 30*time.Second, func() bool { return httpStatus(t, "http://"+addr+"/readyz") == 503 })
	if got := sum(scrape(t, addr, "jetlake_upload_errors_total"), "jetlake_upload_errors_total"); got == 0 {
		t.Error("no upload errors counted while the store was down")
	}
	if err := ms.Restart(); err != nil {
		t.Fatal(err)
	}
	waitUntil("/readyz ready again", 60*time.Second, func() bool { return httpStatus(t, "http://"+addr+"/readyz") == 200 })
	waitUntil("the late message acked", 30*time.Second, func() bool {
		return sum(scrape(t, addr, "jetlake_messages_acked_total"), "jetlake_messages_acked_total") == n+1
	})
}
