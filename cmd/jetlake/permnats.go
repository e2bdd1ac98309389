package main

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/nats-io/nats.go/jetstream"
)

// natsPermissions lists the subjects jetlake run publishes to and
// subscribes on, as the nats.go jetstream package uses them: consumers are
// created and updated on CONSUMER.CREATE.<stream>.<consumer>[.<filter>]
// (never DURABLE.CREATE, and there is no CONSUMER.UPDATE subject); the
// state bucket is read with direct gets (STREAM.MSG.GET when the bucket
// does not allow them) and listed with an ordered consumer, which is
// created with a name and a filter and deleted afterwards, and answers flow
// control on $JS.FC. TestPlanPermissionsAreEnoughToRun runs the exporter
// with exactly this list.
func natsPermissions(c *config.Connector) string {
	api := exporter.APIPrefix(c.NATS)
	var pub []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			pub = append(pub, s)
		}
	}
	for _, s := range c.Streams {
		sc := s.Stream + "." + s.Consumer
		add(api + "STREAM.INFO." + s.Stream)
		add(api + "CONSUMER.INFO." + sc)
		add(api + "CONSUMER.CREATE." + sc)
		add(api + "CONSUMER.CREATE." + sc + ".>")
		add(api + "CONSUMER.MSG.NEXT." + sc)
		add(api + "CONSUMER.RESET." + sc)
		add(api + "CONSUMER.LIST." + s.Stream) // plan only: compares filters with other jetlake consumers
		add("$JS.ACK." + sc + ".>")
		if c.NATS.JetStreamDomain != "" {
			add("$JS.ACK." + c.NATS.JetStreamDomain + ".*." + sc + ".>")
		}
	}
	kv := "KV_" + c.State.Bucket
	// Every key jetlake writes has the connector's name (base64url) as
	// its second token (intent, export, iceberg, lease, member): a
	// connector's credentials can not write another's state, even in a
	// bucket they share.
	kvPut := "$KV." + c.State.Bucket + ".*." + base64.RawURLEncoding.EncodeToString([]byte(c.Name)) + ".>"
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
	inbox := c.NATS.InboxPrefix
	if inbox == "" {
		inbox = "_INBOX"
	}
	var b strings.Builder
	b.WriteString("permissions: {\n  publish: {\n    allow: [\n")
	for _, s := range pub {
		fmt.Fprintf(&b, "      %s\n", strconv.Quote(s))
	}
	b.WriteString("      # only on the first start, to create the state bucket:\n")
	fmt.Fprintf(&b, "      %s\n      %s\n", strconv.Quote(api+"INFO"), strconv.Quote(api+"STREAM.CREATE."+kv))
	b.WriteString("    ]\n  }\n  subscribe: {\n    allow: [\n")
	fmt.Fprintf(&b, "      %s\n", strconv.Quote(inbox+".>"))
	b.WriteString("    ]\n  }\n}")
	return b.String()
}
