package exporter_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/jsclient"
)

// A consumer whose metadata names another connector is refused, naming
// that connector, and left as it was: on its own name and as a partition
// consumer. One without that metadata is adopted, as before.
//
// Before, Ensure adopted it silently and wrote its own name over the
// other connector's.
func TestAConsumerOfAnotherConnectorIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		partitions int
	}{
		{"plain", 1},
		{"partition", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, shared.NATS(t), shared.MinIO(t), "max_messages_per_file = 100\nmax_file_age = \"1s\"")
			c := e.connector()
			if tc.partitions > 1 {
				c = e.partitioned(tc.partitions, "3s")
			}
			last := e.publish(20, 2)
			ctx := context.Background()
			st, err := e.js.Stream(ctx, e.stream)
			if err != nil {
				t.Fatal(err)
			}
			sc := c.Streams[0]
			name := sc.Consumer
			if tc.partitions > 1 {
				// The transform first, as run sets it, so that the
				// consumer's filter is the partition's.
				if err := jsclient.EnsurePartitionTransform(ctx, e.js, c, sc, st.CachedInfo().Config); err != nil {
					t.Fatal(err)
				}
				if st, err = e.js.Stream(ctx, e.stream); err != nil {
					t.Fatal(err)
				}
				name = config.PartitionConsumer(sc.Consumer, 1)
				sc.Consumer = name
				sc.Subjects = config.PartitionFilters(1, c.Streams[0].Subjects, st.CachedInfo().Config.Subjects)
			}
			cfg := jsclient.Settings("billing", sc, jsclient.ModeFor(st.CachedInfo().Config.Retention))
			if _, err := st.CreateConsumer(ctx, cfg); err != nil {
				t.Fatal(err)
			}

			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			done, _ := e.run(rctx, c, true)
			err = <-done
			var ce *jsclient.ConfigError
			if !errors.As(err, &ce) || ce.Consumer != name || !strings.Contains(err.Error(), `belongs to connector "billing"`) {
				t.Fatalf("run: %v; want a ConfigError on consumer %s naming connector billing", err, name)
			}
			cons, err := st.Consumer(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if owner := cons.CachedInfo().Config.Metadata[jsclient.MetaConsumerConnector]; owner != "billing" {
				t.Fatalf("the consumer's owner is %q now, want billing", owner)
			}
			if got := e.read(); len(got.bySeq) != 0 {
				t.Fatalf("%d sequences exported through another connector's consumer", len(got.bySeq))
			}

			// Without the metadata (made by hand, or by a release that
			// did not write it), the consumer is adopted.
			delete(cfg.Metadata, jsclient.MetaConsumerConnector)
			if _, err := st.UpdateConsumer(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			if tc.partitions > 1 {
				waitFor(t, 10*time.Second, "the metadata removed", func() bool {
					cons, err := st.Consumer(ctx, name)
					return err == nil && cons.CachedInfo().Config.Metadata[jsclient.MetaConsumerConnector] == ""
				})
			}
			e.runUntilIdle(c, time.Minute)
			e.wantExactlyOnce(e.read(), last)
			cons, err = st.Consumer(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if owner := cons.CachedInfo().Config.Metadata[jsclient.MetaConsumerConnector]; owner != c.Name {
				t.Fatalf("the adopted consumer's owner is %q, want %s", owner, c.Name)
			}
		})
	}
}
