package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/plan"
)

// natsPermissions lists the subjects jetlake run, plan and verify publish
// to and subscribe on, as the nats.go jetstream package uses them:
// consumers are created and updated on
// CONSUMER.CREATE.<stream>.<consumer>[.<filter>] (never DURABLE.CREATE,
// and there is no CONSUMER.UPDATE subject); a partitioned entry reads
// through one pinned consumer per partition, <consumer>-<k>, and jetlake
// checks that no consumer of the entry's own name exists; pinned consumers
// are unpinned on a handover; every consumer jetlake owns may be deleted to
// be created again from its export record. Walks look messages up with
// STREAM.MSG.GET on the stream's leader. A consumer that sees part of its
// stream (subjects that do not cover it, or a partition) has its walks and
// verify read the matching sequences with ordered consumers, which have
// random names. The state bucket is read with direct gets (STREAM.MSG.GET
// when the bucket does not allow them) and listed with an ordered
// consumer, which is created with a name and a filter and deleted
// afterwards, and answers flow control on $JS.FC. What only the first
// start does (create the state bucket; for partitions, set the stream's
// partition transform and let the bucket take per-key TTLs) is listed
// apart. TestThePrintedNATSPermissionsServeEveryKindOfConnector runs each
// kind of connector with exactly this list.
func natsPermissions(c *config.Connector) string {
	g := grantsOf(c)
	api := plan.NATSAPIPrefix(c)
	inbox := c.NATS.InboxPrefix
	if inbox == "" {
		inbox = "_INBOX"
	}
	var b strings.Builder
	b.WriteString("permissions: {\n  publish: {\n    allow: [\n")
	for _, s := range g.pub {
		fmt.Fprintf(&b, "      %s\n", strconv.Quote(s))
	}
	if len(g.readers) > 0 {
		b.WriteString("      # when subjects do not cover the whole stream, or with partitions: walks and verify\n")
		b.WriteString("      # read the matching sequences with ordered consumers of random names:\n")
		for _, st := range g.readers {
			for _, s := range []string{"CONSUMER.CREATE." + st + ".*", "CONSUMER.CREATE." + st + ".*.>", "CONSUMER.MSG.NEXT." + st + ".*", "CONSUMER.DELETE." + st + ".*"} {
				fmt.Fprintf(&b, "      %s\n", strconv.Quote(api+s))
			}
		}
	}
	if len(g.once) > 0 {
		b.WriteString("      # only on the first start, to create the state bucket, and for partitions to give\n")
		b.WriteString("      # the stream its partition transform and let the bucket take per-key TTLs:\n")
	} else {
		b.WriteString("      # only on the first start, to create the state bucket:\n")
	}
	for _, s := range append([]string{api + "INFO", api + "STREAM.CREATE.KV_" + c.State.Bucket}, g.once...) {
		fmt.Fprintf(&b, "      %s\n", strconv.Quote(s))
	}
	b.WriteString("    ]\n  }\n  subscribe: {\n    allow: [\n")
	fmt.Fprintf(&b, "      %s\n", strconv.Quote(inbox+".>"))
	b.WriteString("    ]\n  }\n}")
	return b.String()
}

// natsGrants are the publish grants natsPermissions prints.
type natsGrants struct {
	pub     []string // always
	readers []string // streams read with ordered consumers of random names
	once    []string // only on the first start, beyond the state bucket's creation
}

// grantsOf gathers the publish grants of connector c.
func grantsOf(c *config.Connector) natsGrants {
	api := plan.NATSAPIPrefix(c)
	var pub, once []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			pub = append(pub, s)
		}
	}
	consumer := func(stream, name string, pinned bool) {
		sc := stream + "." + name
		add(api + "CONSUMER.INFO." + sc)
		add(api + "CONSUMER.CREATE." + sc)
		add(api + "CONSUMER.CREATE." + sc + ".>")
		add(api + "CONSUMER.MSG.NEXT." + sc)
		add(api + "CONSUMER.RESET." + sc)
		if pinned {
			add(api + "CONSUMER.UNPIN." + sc)
		}
		add(api + "CONSUMER.DELETE." + sc)
		add("$JS.ACK." + sc + ".>")
		if c.NATS.JetStreamDomain != "" {
			add("$JS.ACK." + c.NATS.JetStreamDomain + ".*." + sc + ".>")
		}
	}
	var readers []string // streams read with ordered consumers
	for _, s := range c.Streams {
		add(api + "STREAM.INFO." + s.Stream)
		add(api + "STREAM.MSG.GET." + s.Stream)
		if !s.Partitioned() {
			consumer(s.Stream, s.Consumer, s.Failover == config.FailoverPinned)
		} else {
			add(api + "CONSUMER.INFO." + s.Stream + "." + s.Consumer)
			for k := range s.Partitions {
				consumer(s.Stream, config.PartitionConsumer(s.Consumer, k), true)
			}
			once = append(once, api+"STREAM.UPDATE."+s.Stream)
		}
		add(api + "CONSUMER.LIST." + s.Stream) // plan only: compares filters with other jetlake consumers
		if (len(s.Subjects) > 0 || s.Partitioned()) && !slices.Contains(readers, s.Stream) {
			readers = append(readers, s.Stream)
		}
	}
	kv := "KV_" + c.State.Bucket
	// Every key jetlake writes has the connector's name (base64url) as
	// its second token (intent, export, iceberg, lease, member): a
	// connector's credentials can not write another's state, even in a
	// bucket they share.
	kvPut := plan.StateWriteSubject(c)
	if api != jetstream.DefaultAPIPrefix {
		kvPut = api + kvPut
	}
	add(api + "STREAM.INFO." + kv)
	add(api + "STREAM.MSG.GET." + kv)
	add(api + "DIRECT.GET." + kv + ".>")
	add(api + "CONSUMER.CREATE." + kv + ".>")
	add(api + "CONSUMER.DELETE." + kv + ".>")
	add("$JS.FC." + kv + ".>")
	add(kvPut)
	if slices.ContainsFunc(c.Streams, config.Stream.Partitioned) {
		once = append(once, api+"STREAM.UPDATE."+kv)
	}
	return natsGrants{pub: pub, readers: readers, once: once}
}
