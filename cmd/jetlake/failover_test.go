package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// consumerDone waits until the consumer has everything up to last acked
// (read ack-less: recorded exported).
func (c *crashEnv) consumerDone(consumer string, last uint64, timeout time.Duration, logs ...*bytes.Buffer) {
	c.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for {
		cons, err := c.js.Consumer(ctx, strings.ToUpper(c.name), consumer)
		if err == nil {
			info, err := cons.Info(ctx)
			if err == nil && info.NumPending == 0 && info.NumAckPending == 0 && exportedFloor(c.t, c.js, info) >= max(last, heldBy(info)) {
				return
			}
		}
		if time.Now().After(deadline) {
			var all strings.Builder
			for _, l := range logs {
				all.WriteString(l.String())
			}
			c.t.Fatalf("consumer %s did not finish within %s\n%s", consumer, timeout, all.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// pinned makes the connector's consumer a pinned one, with AckWait 15 s and
// a pinned TTL of 5 s.
func (c *crashEnv) pinned() {
	c.t.Helper()
	body, err := os.ReadFile(c.file)
	if err != nil {
		c.t.Fatal(err)
	}
	body = bytes.Replace(body, []byte(`ack_wait = "30s"`), []byte("ack_wait = \"15s\"\nfailover = \"pinned\"\npriority_timeout = \"5s\""), 1)
	if err := os.WriteFile(c.file, body, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func TestPinnedStandbyTakesOverWhenTheActiveIsKilled(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "failover", shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
	c.pinned()
	const n = 20000
	published := c.publishInBackground(n, 10)
	a, aLog := c.start()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(aLog.String(), "this instance is active") {
		if time.Now().After(deadline) {
			t.Fatalf("the first instance never became active\n%s", aLog.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, bLog := c.start()
	time.Sleep(1500 * time.Millisecond)
	if strings.Contains(bLog.String(), "this instance is active") {
		t.Fatalf("the standby became active while the first instance was pinned\n%s", bLog.String())
	}
	if strings.Contains(bLog.String(), "recovery:") {
		t.Fatalf("the standby ran recovery while another instance was pinned\n%s", bLog.String())
	}
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.Wait()
	if err := <-published; err != nil {
		t.Fatal(err)
	}
	c.consumerDone("failover", n, 2*time.Minute, bLog)
	if !strings.Contains(bLog.String(), "this instance is active") {
		t.Fatalf("the standby never took over\n%s", bLog.String())
	}
	if err := b.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("standby exit: %v\n%s", err, bLog.String())
	}
	out := c.verify()
	if !strings.Contains(out, "OK: every sequence") {
		t.Fatalf("verify:\n%s", out)
	}
	c.exactlyOnce(n)
}

// What the stream removes while the active instance is gone and the
// standby takes over gets loss markers from the standby: it compares the
// export record the active one kept with the stream.
func TestAStandbyTakingOverNamesWhatTheStreamRemoved(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "takeover", shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
	c.pinned()
	c.publish(400, 4)
	a, aLog := c.start()
	c.consumerDone("takeover", 400, time.Minute, aLog)
	b, bLog := c.start()
	time.Sleep(1500 * time.Millisecond)
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.Wait()
	// Before the standby is pinned: 600 more, of which the stream keeps
	// 801-1000 but 900.
	c.publish(600, 4)
	ctx := context.Background()
	st, err := c.js.Stream(ctx, strings.ToUpper(c.name))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSequence(801)); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(ctx, 900); err != nil {
		t.Fatal(err)
	}
	c.consumerDone("takeover", 1000, 2*time.Minute, bLog)
	if !strings.Contains(bLog.String(), "this instance is active") {
		t.Fatalf("the standby never took over\n%s", bLog.String())
	}
	if err := b.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(); err != nil {
		t.Fatalf("standby exit: %v\n%s", err, bLog.String())
	}
	if marked := c.eachOnce(1000); marked != 401 {
		t.Fatalf("markers name %d sequences, want the 401 removed (401-800 and 900)", marked)
	}
	if out := c.verify(); !strings.Contains(out, "OK: every sequence") {
		t.Fatalf("verify:\n%s", out)
	}
}

func TestTwoInstancesWithDisjointFiltersCoverTheStream(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "split", shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
	const n = 6000
	c.publish(n, 10)
	files := c.splitFiles()
	var logs []*bytes.Buffer
	for _, f := range files {
		cmd, log := c.startFile(f)
		logs = append(logs, log)
		defer cmd.Process.Kill()
	}
	for i := range files {
		c.consumerDone(fmt.Sprintf("split-%d", i+1), 0, time.Minute, logs[i])
	}
	c.verifySplit(files)
	c.exactlyOnce(n)
}

// A connector that shares its lake with another, and starts when the
// other has exported its subjects, rebuilds its export record from its own
// objects only: the other's are not its, and the sequences of its own
// subjects below them are exported, not skipped.
func TestAConnectorSharingItsLakeRebuildsItsRecordFromItsOwnObjects(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "share", shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
	const n = 2000
	c.publish(n, 10)
	files := c.splitFiles()
	second, log2 := c.startFile(files[1])
	defer second.Process.Kill()
	c.consumerDone("share-2", 0, time.Minute, log2)
	first, log1 := c.startFile(files[0])
	defer first.Process.Kill()
	c.consumerDone("share-1", 0, time.Minute, log1)
	if strings.Contains(log1.String(), "rebuilt from the lake") {
		t.Errorf("the second connector took the first's objects for its own:\n%s", log1)
	}
	c.verifySplit(files)
	c.exactlyOnce(n)
}

// splitFiles writes two connector files of c's stream, each with a
// consumer of its own: one takes subjects s00-s04, the other s05-s09.
func (c *crashEnv) splitFiles() []string {
	c.t.Helper()
	base, err := os.ReadFile(c.file)
	if err != nil {
		c.t.Fatal(err)
	}
	var files []string
	for i, part := range [][]string{{"00", "01", "02", "03", "04"}, {"05", "06", "07", "08", "09"}} {
		var subjects []string
		for _, p := range part {
			subjects = append(subjects, fmt.Sprintf("%q", c.name+".s"+p))
		}
		body := strings.Replace(string(base), `ack_wait = "30s"`,
			fmt.Sprintf("ack_wait = \"30s\"\nconsumer = \"%s-%d\"\nsubjects = [%s]", c.name, i+1, strings.Join(subjects, ", ")), 1)
		body = strings.Replace(body, fmt.Sprintf(`name = %q`, c.name), fmt.Sprintf(`name = "%s-%d"`, c.name, i+1), 1)
		files = append(files, writeFile(c.t, fmt.Sprintf("%s-%d.toml", c.name, i+1), body))
	}
	return files
}

// verifySplit runs verify -deep on each of files, which must pass as
// filtered consumers.
func (c *crashEnv) verifySplit(files []string) {
	c.t.Helper()
	for _, f := range files {
		c.file = f
		if out := c.verify(); !strings.Contains(out, "OK: every sequence") || !strings.Contains(out, "filtered consumer") {
			c.t.Fatalf("verify %s:\n%s", f, out)
		}
	}
}
