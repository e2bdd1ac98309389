package exporter

import (
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/state"
)

// session is one Run of an Exporter: what Run sets up and its runner works
// with. The Exporter stays as New made it; the connection, the state
// bucket, the Iceberg table, the partitioned entries with their leases and
// the encoder the table's schema chose are the session's, made afresh by
// every Run. Its methods name their receiver e: a session is the exporter
// at work.
type session struct {
	*Exporter

	nc   *nats.Conn
	acks jsclient.Acker      // the connection messages arrive on
	js   jetstream.JetStream // on that connection

	intents state.Store
	// stateReplicas are the state bucket's replicas: fewer than a
	// stream's, and the record is lost in an outage the stream survives.
	stateReplicas int
	conditional   bool // the store honours If-None-Match: *

	enc formats.Encoder
	// encOptions are enc's options: their Fields are an Iceberg table's
	// schema.
	encOptions formats.Options
	// sink is where the data batches land: objects, or the Iceberg
	// table of a connector with [iceberg].
	sink sink

	// Partitioned entries and the leases of their partitions; nil when
	// the connector has none.
	groups []*partGroup
	leases *leasing
}

// newSession starts a session of e on the connection nc. The session
// holds nc also when it returns an error.
func newSession(e *Exporter, nc *nats.Conn) (*session, error) {
	sn := &session{Exporter: e, nc: nc, acks: nc, encOptions: e.formatOptions}
	enc, err := formats.New(e.formatOptions)
	if err != nil {
		return sn, err
	}
	sn.enc = enc
	js, err := jsclient.NewJetStream(nc, e.cfg.NATS)
	if err != nil {
		return sn, err
	}
	sn.js = js
	return sn, nil
}
