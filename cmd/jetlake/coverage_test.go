package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/jsclient"
)

func TestPlanWarnsAboutOverlappingAndUncoveredFilters(t *testing.T) {
	ctx := context.Background()
	js := streamAndBucket(t, shared.NATS(t), shared.MinIO(t), "cover", jetstream.StreamConfig{})
	for i := range 10 {
		if _, err := js.Publish(ctx, fmt.Sprintf("cover.s%d", i), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	// Another instance's consumer, as jetlake creates it, takes s0-s4.
	if _, err := js.CreateConsumer(ctx, "COVER", jetstream.ConsumerConfig{
		Durable: "cover-a", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: -1,
		FilterSubjects: []string{"cover.s0", "cover.s1", "cover.s2", "cover.s3", "cover.s4"},
		Metadata:       map[string]string{jsclient.MetaConsumerConnector: "cover-a"},
	}); err != nil {
		t.Fatal(err)
	}
	write := func(subjects string) string {
		return writeFile(t, "cover.toml", fmt.Sprintf(`name = "cover-b"
[nats]
url = %q
[[streams]]
stream = "COVER"
consumer = "cover-b"
subjects = [%s]
[s3]
bucket = "cover"
endpoint = %q
`, shared.NATS(t).URL, subjects, shared.MinIO(t).Endpoint))
	}
	env := shared.MinIO(t).ClientEnv()
	code, out, errOut := jetlakeEnv(t, env, "plan", "-config", write(`"cover.s4", "cover.s5", "cover.s6"`))
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"filter cover.s4 of consumer cover-b overlaps filter cover.s4 of consumer cover-a (connector cover-a)",
		"3 subjects with messages match no jetlake consumer's filter (cover.s7, cover.s8, cover.s9)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = jetlakeEnv(t, env, "plan", "-config", write(`"cover.s5", "cover.s6", "cover.s7", "cover.s8", "cover.s9"`))
	if code != 0 || !strings.Contains(out, "2 jetlake consumers; their filters are disjoint and cover every subject with messages") {
		t.Fatalf("plan with disjoint, covering filters: exit %d\n%s%s", code, out, errOut)
	}
}
