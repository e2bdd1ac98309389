package objstore_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/objstore"
)

// An S3Store keeps a connection for every upload the exporter may have in
// flight (four per upload_concurrency for small objects): rounds of that
// many PUTs at once open connections in the first round only. The client's
// default kept 16 per host, so that at upload_concurrency 10 every round
// opened and closed 24 more.
func TestS3StoreKeepsAConnectionPerUpload(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	t.Setenv("JETLAKE_TEST_ACCESS_KEY", "key")
	t.Setenv("JETLAKE_TEST_SECRET_KEY", "secret")
	const concurrency = 10
	st, err := objstore.NewS3Store(config.S3{
		Bucket: "lake", Endpoint: srv.URL, Region: "us-east-1", PathStyle: true, UploadConcurrency: concurrency,
		AccessKeyIDEnv: "JETLAKE_TEST_ACCESS_KEY", SecretAccessKeyEnv: "JETLAKE_TEST_SECRET_KEY",
	})
	if err != nil {
		t.Fatal(err)
	}
	const inFlight = 4 * concurrency
	body := formats.NewBody([]byte(`{"a":1}` + "\n"))
	for round := range 3 {
		// A barrier, so that every PUT of the round is in flight at once
		// and none can reuse another's connection.
		var ready, wg sync.WaitGroup
		ready.Add(inFlight)
		start := make(chan struct{})
		for i := range inFlight {
			wg.Go(func() {
				ready.Done()
				<-start
				key := fmt.Sprintf("r%d/%03d.jsonl", round, i)
				if err := st.Put(context.Background(), key, body, objstore.PutOptions{IfNoneMatch: true}); err != nil {
					t.Error(err)
				}
			})
		}
		ready.Wait()
		close(start)
		wg.Wait()
	}
	// A connection goes back to the pool just after its PUT returns, so
	// on a loaded machine a PUT of the next round may now and then open one
	// more; a pool that kept too few would open a whole round's excess
	// (24 more a round at the default of 16 a host).
	if n, most := conns.Load(), int64(inFlight+inFlight/8); n > most {
		t.Errorf("%d connections opened for 3 rounds of %d PUTs at once, want at most %d", n, inFlight, most)
	}
}
