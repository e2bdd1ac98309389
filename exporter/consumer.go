package exporter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
)

// ConfigError is a setting on the server side (a stream or consumer) that
// does not fit the connector; the exporter will not start with it.
type ConfigError struct {
	Stream   string
	Consumer string
	Msg      string
}

func (e *ConfigError) Error() string {
	if e.Consumer == "" {
		return fmt.Sprintf("stream %s: %s", e.Stream, e.Msg)
	}
	return fmt.Sprintf("stream %s, consumer %s: %s", e.Stream, e.Consumer, e.Msg)
}

// natsOptions turns the [nats] settings into connection options. Secrets are
// read from the files and environment variables the settings name.
func natsOptions(c config.NATS, name string) ([]nats.Option, error) {
	opts := []nats.Option{
		nats.Name("jetlake " + name),
		nats.MaxReconnects(-1),
		nats.ReconnectJitter(100_000_000, 1_000_000_000),
	}
	switch {
	case c.CredsFile != "":
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	case c.NkeySeedFile != "":
		o, err := nats.NkeyOptionFromSeed(c.NkeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("nats nkey_seed_file: %w", err)
		}
		opts = append(opts, o)
	case c.TokenEnv != "":
		tok := os.Getenv(c.TokenEnv)
		if tok == "" {
			return nil, fmt.Errorf("nats token: environment variable %s is empty", c.TokenEnv)
		}
		opts = append(opts, nats.Token(tok))
	case c.User != "":
		pw := ""
		if c.PasswordEnv != "" {
			pw = os.Getenv(c.PasswordEnv)
			if pw == "" {
				return nil, fmt.Errorf("nats password: environment variable %s is empty", c.PasswordEnv)
			}
		}
		opts = append(opts, nats.UserInfo(c.User, pw))
	}
	if c.TLSCAFile != "" {
		opts = append(opts, nats.RootCAs(c.TLSCAFile))
	}
	if c.TLSCertFile != "" {
		opts = append(opts, nats.ClientCert(c.TLSCertFile, c.TLSKeyFile))
	}
	if c.TLSRequired {
		opts = append(opts, nats.Secure())
	}
	if c.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(c.InboxPrefix))
	}
	return opts, nil
}

// MetaConsumerConnector is the consumer metadata key naming the connector
// that owns it; plan uses it to tell jetlake's consumers on a stream apart.
const MetaConsumerConnector = "jetlake_connector"

// PriorityGroup is the priority group of consumers with failover = "pinned".
const PriorityGroup = "jetlake"

// consumerConfig is the configuration jetlake wants its consumer to have.
func consumerConfig(connector string, s config.Stream) jetstream.ConsumerConfig {
	cc := jetstream.ConsumerConfig{
		Metadata:      map[string]string{MetaConsumerConnector: connector},
		Durable:       s.Consumer,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.AckWait,
		MaxAckPending: s.MaxAckPending,
		MaxDeliver:    -1,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
	if s.DeliverPolicy == config.DeliverNew {
		cc.DeliverPolicy = jetstream.DeliverNewPolicy
	}
	if s.Failover == config.FailoverPinned {
		cc.PriorityPolicy = jetstream.PriorityPolicyPinned
		cc.PriorityGroups = []string{PriorityGroup}
		cc.PinnedTTL = s.PriorityTimeout
	}
	switch len(s.Subjects) {
	case 0:
	case 1:
		cc.FilterSubject = s.Subjects[0]
	default:
		cc.FilterSubjects = slices.Clone(s.Subjects)
	}
	return cc
}

// ensureConsumer returns the durable consumer of s, creating it when it is
// missing. An existing consumer must ack explicitly and redeliver without
// limit; its AckWait, MaxAckPending and filter subjects are updated to the
// configured values.
func ensureConsumer(ctx context.Context, js jetstream.JetStream, connector string, s config.Stream) (jetstream.Consumer, error) {
	want := consumerConfig(connector, s)
	stream, err := js.Stream(ctx, s.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, &ConfigError{Stream: s.Stream, Msg: "stream not found: create it, or fix streams.stream"}
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", s.Stream, err)
	}
	cons, err := stream.Consumer(ctx, s.Consumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cons, err = stream.CreateConsumer(ctx, want)
		if err != nil {
			return nil, fmt.Errorf("stream %s: create consumer %s: %w", s.Stream, s.Consumer, err)
		}
		return cons, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: consumer %s: %w", s.Stream, s.Consumer, err)
	}
	have := cons.CachedInfo().Config
	if have.AckPolicy != jetstream.AckExplicitPolicy {
		return nil, &ConfigError{Stream: s.Stream, Consumer: s.Consumer, Msg: fmt.Sprintf(
			"ack policy is %s; jetlake needs explicit acks: delete the consumer (jetlake re-creates it) or name another consumer", have.AckPolicy)}
	}
	if have.MaxDeliver > 0 {
		return nil, &ConfigError{Stream: s.Stream, Consumer: s.Consumer, Msg: fmt.Sprintf(
			"MaxDeliver is %d; jetlake needs -1 (unlimited) so an outage never drops messages: update the consumer's max_deliver to -1", have.MaxDeliver)}
	}
	if have.PriorityPolicy != want.PriorityPolicy || !slices.Equal(have.PriorityGroups, want.PriorityGroups) {
		return nil, &ConfigError{Stream: s.Stream, Consumer: s.Consumer, Msg: fmt.Sprintf(
			"priority policy is %s with groups %v, the connector wants %s with %v (failover = %q); "+
				"a consumer's priority policy can not be changed: delete the consumer (jetlake re-creates it) or name another consumer",
			policyName(have.PriorityPolicy), have.PriorityGroups, policyName(want.PriorityPolicy), want.PriorityGroups, s.Failover)}
	}
	if have.AckWait == want.AckWait && have.MaxAckPending == want.MaxAckPending && have.PinnedTTL == want.PinnedTTL &&
		have.FilterSubject == want.FilterSubject && slices.Equal(have.FilterSubjects, want.FilterSubjects) &&
		have.Metadata[MetaConsumerConnector] == connector {
		return cons, nil
	}
	upd := have
	upd.Metadata = maps.Clone(have.Metadata)
	if upd.Metadata == nil {
		upd.Metadata = map[string]string{}
	}
	upd.Metadata[MetaConsumerConnector] = connector
	upd.AckWait, upd.MaxAckPending, upd.PinnedTTL = want.AckWait, want.MaxAckPending, want.PinnedTTL
	upd.FilterSubject, upd.FilterSubjects = want.FilterSubject, want.FilterSubjects
	cons, err = stream.UpdateConsumer(ctx, upd)
	if err != nil {
		return nil, fmt.Errorf("stream %s: update consumer %s: %w", s.Stream, s.Consumer, err)
	}
	return cons, nil
}

// policyName names a priority policy as the server's API does.
func policyName(p jetstream.PriorityPolicy) string {
	b, err := p.MarshalJSON()
	if err != nil || string(b) == `""` {
		return "none"
	}
	return strings.Trim(string(b), `"`)
}
