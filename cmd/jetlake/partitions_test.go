package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/lease"
)

// partitioned splits the connector's stream into p partitions with a 3 s
// lease TTL, a 5 s priority timeout and AckWait 15 s.
func (c *crashEnv) partitioned(p int) {
	c.t.Helper()
	body, err := os.ReadFile(c.file)
	if err != nil {
		c.t.Fatal(err)
	}
	body = bytes.Replace(body, []byte(`ack_wait = "30s"`),
		fmt.Appendf(nil, "ack_wait = \"15s\"\npartitions = %d\nlease_ttl = \"3s\"\npriority_timeout = \"5s\"", p), 1)
	if err := os.WriteFile(c.file, body, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// leasesByPID returns how many partition leases each process holds.
func (c *crashEnv) leasesByPID() map[int]int {
	c.t.Helper()
	ctx := context.Background()
	kv, err := c.js.KeyValue(ctx, config.DefaultStateBucket)
	if err != nil {
		return nil
	}
	conns, err := config.Load(c.file)
	if err != nil {
		c.t.Fatal(err)
	}
	// The connector's own stream entry: a lease key counts for a
	// partition only among the stream's partitions.
	leases, err := lease.PartitionHolders(ctx, kv, c.name, conns[0].Streams[0])
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[int]int{}
	for _, h := range leases {
		out[h.PID]++
	}
	return out
}

// waitShares waits until exactly the given processes hold the p leases,
// each within [p/n, ceil(p/n)], and returns how long that took.
func (c *crashEnv) waitShares(p int, procs []*exec.Cmd, timeout time.Duration, logs ...*bytes.Buffer) time.Duration {
	c.t.Helper()
	start := time.Now()
	n := len(procs)
	lo, hi := p/n, (p+n-1)/n
	var got map[int]int
	for {
		got = c.leasesByPID()
		ok := len(got) == n
		total := 0
		for _, cmd := range procs {
			k := got[cmd.Process.Pid]
			total += k
			ok = ok && k >= lo && k <= hi
		}
		if ok && total == p {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			var all strings.Builder
			for _, l := range logs {
				all.WriteString(l.String())
			}
			c.t.Fatalf("leases by pid %v after %s; want %d processes with %d-%d each\n%s", got, timeout, n, lo, hi, all.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Three instances share eight partitions, a fourth joins and gets its
// share, one is killed with SIGKILL, another's link to NATS freezes and a
// third is paused: their partitions move to the others, and the frozen and
// the paused one rejoin when they can talk again. Every sequence lands in exactly one object, as jetlake
// verify -deep and an independent reading of the bucket find.
func TestPartitionsMoveWhenInstancesJoinDieOrFreeze(t *testing.T) {
	t.Parallel()
	c := newCrashEnv(t, "parts", shared.NATS(t), shared.MinIO(t), jetstream.StreamConfig{})
	c.partitioned(8)
	linked, link := c.viaLink()
	const n = 40000
	published := c.publishInBackground(n, 40)
	a, aLog := c.start()
	b, bLog := c.start()
	f, fLog := c.startFile(linked)
	logs := []*bytes.Buffer{aLog, bLog, fLog}
	took := c.waitShares(8, []*exec.Cmd{a, b, f}, 30*time.Second, logs...)
	t.Logf("three instances hold 2-3 partitions each after %s", took)

	d, dLog := c.start()
	logs = append(logs, dLog)
	took = c.waitShares(8, []*exec.Cmd{a, b, f, d}, 20*time.Second, logs...)
	t.Logf("a fourth instance joined: two partitions each after %s", took)
	code, out, errOut := jetlakeEnv(t, c.minio.ClientEnv(), "plan", "-config", c.file)
	if code != 0 || !strings.Contains(out, "8 of 8 partitions held by 4 instances, 0 free") ||
		!strings.Contains(out, `has the partition transform "" → "{{partition(8)}}.>"`) {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}

	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.Wait()
	took = c.waitShares(8, []*exec.Cmd{b, f, d}, 20*time.Second, logs...)
	t.Logf("an instance killed: its partitions moved within %s (lease_ttl 3s)", took)

	link.Freeze()
	took = c.waitShares(8, []*exec.Cmd{b, d}, 30*time.Second, logs...)
	t.Logf("an instance's link frozen: its partitions moved within %s", took)
	link.Thaw()
	took = c.waitShares(8, []*exec.Cmd{b, f, d}, 30*time.Second, logs...)
	t.Logf("the link thawed: the instance rejoined within %s", took)
	if !strings.Contains(fLog.String(), "the lease expired and another instance holds it") &&
		!strings.Contains(fLog.String(), "the lease could not be renewed within lease_ttl") {
		t.Fatalf("the frozen instance never gave its partitions up\n%s", fLog.String())
	}

	// A paused instance (a zombie) loses its partitions; when it wakes up
	// it learns that from the revisions, writes nothing twice, and rejoins.
	if err := b.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	took = c.waitShares(8, []*exec.Cmd{f, d}, 30*time.Second, logs...)
	t.Logf("an instance paused: its partitions moved within %s", took)
	if err := b.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	took = c.waitShares(8, []*exec.Cmd{b, f, d}, 30*time.Second, logs...)
	t.Logf("the paused instance woke up and rejoined within %s", took)

	if err := <-published; err != nil {
		t.Fatal(err)
	}
	for k := range 8 {
		c.consumerDone(config.PartitionConsumer(c.name, k), 0, 2*time.Minute, logs...)
	}
	for _, cmd := range []*exec.Cmd{b, f, d} {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("exit: %v", err)
		}
	}
	if out := c.verify(); !strings.Contains(out, "OK: every sequence") {
		t.Fatalf("verify:\n%s", out)
	}
	c.exactlyOnce(n)
	keys := c.stateKeyList("lease.>")
	if len(keys) != 0 {
		t.Fatalf("leases left after every instance stopped: %v", keys)
	}
	for _, obj := range c.objectKeys("lake/PARTS/") {
		if !strings.HasPrefix(obj, "lake/PARTS/parts.s") {
			t.Fatalf("object %s: the key shows more than the published subject", obj)
		}
	}
}

// objectKeys returns the keys of the bucket under prefix.
func (c *crashEnv) objectKeys(prefix string) []string {
	c.t.Helper()
	var keys []string
	for obj := range c.mc.ListObjects(context.Background(), c.name, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			c.t.Fatal(obj.Err)
		}
		keys = append(keys, obj.Key)
	}
	if len(keys) == 0 {
		c.t.Fatalf("no objects under %s", prefix)
	}
	return keys
}
