package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/exporter/restore"
)

// A restore into a stream another publisher writes to all along: batches
// are committed one after the other while the next one is already sent,
// and whenever the other publisher moved the stream's last sequence the
// batch sent to follow the one before is sent again; a batch that lost
// the race twice goes with message ids. Every message is restored once,
// in order, and every batch whole: no message of the other publisher lands
// inside one.
func TestARestoreBesideAnotherPublisherLandsEveryBatchWhole(t *testing.T) {
	t.Parallel()
	const n, batch = 4000, 100
	e := newRestoreEnv(t, "rbeside", n, "format = \"json_lines\"")
	e.recreate(jetstream.StreamConfig{Subjects: []string{"rbeside.>", "other.>"}, AllowAtomicPublish: true, AllowDirect: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := e.js.Publish(ctx, "other.0", []byte("before")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var others int
	wg.Go(func() {
		for i := 1; ctx.Err() == nil; i++ {
			// Back to back: a batch that expects the stream's last
			// sequence as it read it loses every race to this one.
			if _, err := e.js.Publish(ctx, "other."+strconv.Itoa(i), []byte("beside")); err == nil {
				others++
			}
		}
	})
	code, stdout, stderr := jetlakeEnv(t, e.creds, "restore", "-quiet", "-config", e.file, "-target", e.stream, "-batch", strconv.Itoa(batch))
	cancel()
	wg.Wait()
	if code != exitOK || !strings.Contains(stdout, fmt.Sprintf("%d messages published in atomic batches", n)) {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("%d messages of the other publisher; %d batches tried again", others+1, strings.Count(stderr, "trying again"))
	var ours []*jetstream.RawStreamMsg
	for _, m := range e.restored() {
		if m.Header.Get(restore.HeaderSourceStream) == "" {
			if len(ours)%batch != 0 {
				t.Fatalf("a message of the other publisher at sequence %d, after %d restored ones: inside a batch of %d", m.Sequence, len(ours), batch)
			}
			continue
		}
		ours = append(ours, m)
	}
	e.wantRestored(ours, "", false)
}

// A chain of fast batches into a stream another publisher writes to all
// along: each message of the other publisher ends the batch under way at
// the next restored message, which expected the stream's last sequence to
// be its predecessor's; the chain is taken up again after the newest
// restored message. Every message is restored once, in order.
func TestARestoreChainBesideAnotherPublisherRestoresEveryMessageOnce(t *testing.T) {
	t.Parallel()
	const n = 4000
	e := newRestoreEnv(t, "rchainbeside", n, "format = \"json_lines\"")
	e.recreate(jetstream.StreamConfig{Subjects: []string{"rchainbeside.>", "chainother.>"}, AllowBatchPublish: true, AllowDirect: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; ctx.Err() == nil; i++ {
			// Back to back: a take-up of the chain that waits for its
			// first message's answer loses every race to this one.
			_, _ = e.js.Publish(ctx, "chainother."+strconv.Itoa(i), []byte("beside"))
		}
	})
	code, stdout, stderr := jetlakeEnv(t, e.creds, "restore", "-config", e.file, "-target", e.stream)
	cancel()
	wg.Wait()
	if code != exitOK || !strings.Contains(stdout, fmt.Sprintf("%d messages published in fast batches", n)) {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	restarts := strings.Count(stderr, "the chain is taken up again")
	t.Logf("the chain was taken up again %d times", restarts)
	if restarts == 0 {
		t.Errorf("the other publisher never came between two restored messages:\n%s", stderr)
	}
	var ours []*jetstream.RawStreamMsg
	for _, m := range e.restored() {
		if m.Header.Get(restore.HeaderSourceStream) != "" {
			ours = append(ours, m)
		}
	}
	e.wantRestored(ours, "", false)
}
