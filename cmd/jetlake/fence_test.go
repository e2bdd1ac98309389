package main

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
)

// An instance's link to NATS freezes for longer than ack_wait while the
// server sends it messages: the pin moves (with partitions, the lease and
// the partition's pin), the instance pinned now stores the messages once
// they are redelivered, and when the link thaws the old instance receives
// the messages sent into the link before, with an AckWait that starts for
// it only then. It must not store them again, nor stop on the object the
// other stored under the same key, nor leave the intents of the batches it
// gave up: every sequence lands in exactly one object, both instances run
// until they are stopped, and no intent is left.
func TestALinkFrozenLongerThanAckWaitWritesNothingTwice(t *testing.T) {
	for _, tt := range []struct {
		name      string
		setup     func(c *crashEnv)
		consumers func(c *crashEnv) []string
	}{
		{"pinned", (*crashEnv).pinned, func(c *crashEnv) []string { return []string{c.name} }},
		{"partitions", func(c *crashEnv) { c.partitioned(2) }, func(c *crashEnv) []string {
			return []string{config.PartitionConsumer(c.name, 0), config.PartitionConsumer(c.name, 1)}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCrashEnv(t, "fence"+tt.name, shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
			tt.setup(c)
			linked, link := c.viaLink()
			c.publish(100, 10)
			f, fLog := c.startFile(linked)
			exportertest.WaitFor(t, 30*time.Second, "the first instance to pull", func() bool {
				return strings.Contains(fLog.String(), "this instance is active")
			})
			b, bLog := c.start()
			logs := []*bytes.Buffer{fLog, bLog}
			time.Sleep(3 * time.Second)
			link.Freeze()
			const n = 3100
			c.publish(n-100, 10)
			// Longer than ack_wait (15s) and priority_timeout (5s): the
			// messages sent into the frozen link are redelivered to the
			// other instance, which stores them.
			time.Sleep(22 * time.Second)
			link.Thaw()
			for _, name := range tt.consumers(c) {
				c.consumerDone(name, 0, 2*time.Minute, logs...)
			}
			// Room for what the old instance does with what it received
			// when the link thawed.
			time.Sleep(3 * time.Second)
			for _, cmd := range []*exec.Cmd{f, b} {
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			c.exactlyOnce(n)
			for i, cmd := range []*exec.Cmd{f, b} {
				if err := cmd.Wait(); err != nil {
					t.Fatalf("instance %d exit: %v\n%s", i, err, logs[i])
				}
			}
			// A fenced batch's intent, written after the takeover that
			// would have recovered it, is deleted by its writer.
			exportertest.WaitFor(t, 20*time.Second, "no intent left", func() bool { return len(c.stateKeyList("intent.>")) == 0 })
			if !strings.Contains(fLog.String(), "no longer pinned") {
				t.Log(fLog)
				t.Logf("the frozen instance received nothing after the thaw that the fence had to stop")
			}
		})
	}
}
