package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
)

// Every run's connector file is valid, and carries the settings the bench
// was given.
func TestConnectorFilesAreValid(t *testing.T) {
	for _, pending := range []int{0, 250_000} {
		b := &bench{
			cfg: Config{MaxFileSize: 8 << 20, MaxFileAge: 30 * time.Second, MaxBufferedBytes: 256 << 20,
				UploadConcurrency: 4, MaxAckPending: pending},
			ns: &exportertest.NATSServer{URL: "nats://127.0.0.1:4222"},
			ms: &exportertest.MinIOServer{Endpoint: "http://127.0.0.1:9000"},
		}
		w := &WorkloadResult{Name: "w1", Stream: "BENCH_W1", GroupBy: "subject"}
		for _, spec := range runSpecs {
			t.Run(fmt.Sprintf("%s/max_ack_pending=%d", spec.Name, pending), func(t *testing.T) {
				src := b.connector(w, spec, "c-1", "w1/"+spec.Name, t.TempDir()+"/catalog.db")
				c, err := config.Parse("bench.toml", src)
				if err != nil {
					t.Fatalf("%v\n%s", err, src)
				}
				if len(c.Streams) != 1 || c.Rotation.MaxFileSize != 8<<20 || c.S3.UploadConcurrency != 4 {
					t.Fatalf("parsed %+v from\n%s", c, src)
				}
				want := pending
				if want == 0 {
					want = 250_000 // derived from 256MiB
				}
				if got := c.Streams[0].MaxAckPending; got != want {
					t.Errorf("max_ack_pending = %d, want %d", got, want)
				}
			})
		}
	}
}
