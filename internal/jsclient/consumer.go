// Package jsclient is how jetlake talks to JetStream: the connection's
// options, the JetStream context, the settings of the consumers jetlake
// creates and the one check of an existing consumer, the pulls of pinned
// consumers, permissions violations and the grant each needs, and subject
// lookups.
package jsclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
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
	// The options that read files (credentials, CA, client certificate)
	// read them again at every connect and fail the same way each time:
	// find out once, here, so that a missing or malformed file stops the
	// exporter with what to fix instead of being retried for ever.
	scratch := nats.GetDefaultOptions()
	for _, o := range opts {
		if err := o(&scratch); err != nil {
			return nil, fmt.Errorf("%w: check the files named in [nats] (creds_file, nkey_seed_file, tls_ca_file, tls_cert_file, tls_key_file)", err)
		}
	}
	if scratch.UserJWT != nil {
		if _, err := scratch.UserJWT(); err != nil {
			return nil, fmt.Errorf("nats creds_file %s: %w", c.CredsFile, err)
		}
		if _, err := scratch.SignatureCB([]byte("jetlake")); err != nil {
			return nil, fmt.Errorf("nats creds_file %s: %w", c.CredsFile, err)
		}
	}
	return opts, nil
}

// MetaConsumerConnector is the consumer metadata key naming the connector
// that owns it; plan uses it to tell jetlake's consumers on a stream apart.
const MetaConsumerConnector = "jetlake_connector"

// PriorityGroup is the priority group of consumers with failover = "pinned".
const PriorityGroup = "jetlake"

// Settings is the configuration jetlake wants its consumer to have, read
// in mode. An ack-less consumer has no AckWait or MaxAckPending: the
// server keeps no pending set for it.
func Settings(connector string, s config.Stream, mode ReadMode) jetstream.ConsumerConfig {
	cc := jetstream.ConsumerConfig{
		Metadata:      map[string]string{MetaConsumerConnector: connector},
		Durable:       s.Consumer,
		AckPolicy:     mode.Policy(),
		MaxDeliver:    -1,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		MemoryStorage: s.MemoryConsumer(),
	}
	if !mode.AckLess {
		cc.AckWait, cc.MaxAckPending = s.AckWait, s.MaxAckPending
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

// Setup says what Ensure did to the consumer.
type Setup int

const (
	Found       Setup = iota // it was there (and may have been updated)
	Made                     // it was missing, and was created
	Rebuilt                  // it was kept in the other storage, and was made again
	RebuiltAcks              // it had another ack policy than its read mode's, and was made again
)

// Ensure returns the durable consumer of s, one of c's streams,
// creating it (Made) when it is missing: delivering from sequence from,
// the first the export record does not hold, or, with from 0 (no record),
// where s's deliver_policy says. An existing consumer that CheckConsumer
// refuses is a *ConfigError; its AckWait, MaxAckPending, filter subjects
// and pinned TTL are updated to the configured values. An entry without
// partitions on a stream that carries the partition transform is refused
// too, before any consumer is made. A consumer kept in another storage than
// consumer_storage, when set, asks for is deleted and created again there
// (Rebuilt), delivering from from, or, without a record, from
// right after what it proves exported (Proven). A consumer with another
// ack policy than the stream's read mode (ModeFor) asks for is made again
// the same way (RebuiltAcks): the server does not change a consumer's ack
// policy.
func Ensure(ctx context.Context, stream jetstream.Stream, c *config.Connector, s config.Stream, from uint64) (cons jetstream.Consumer, did Setup, err error) {
	if msg := UnpartitionedRefusal(c, s, stream.CachedInfo().Config); msg != "" {
		return nil, Found, &ConfigError{Stream: s.Stream, Consumer: s.Consumer, Msg: msg}
	}
	mode := ModeFor(stream.CachedInfo().Config.Retention)
	want := Settings(c.Name, s, mode)
	cons, err = stream.Consumer(ctx, s.Consumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cons, err = create(ctx, stream, want, from, s.DeliverPolicy)
		if err != nil {
			return nil, Found, fmt.Errorf("stream %s: create consumer %s: %w", s.Stream, s.Consumer, err)
		}
		return cons, Made, nil
	}
	if err != nil {
		return nil, Found, fmt.Errorf("stream %s: consumer %s: %w", s.Stream, s.Consumer, err)
	}
	have := cons.CachedInfo().Config
	problems := CheckConsumer(c, s, StreamKey(c, s), have, mode)
	if refused := refusedProblem(problems); refused != nil {
		return nil, Found, &ConfigError{Stream: s.Stream, Consumer: s.Consumer, Msg: refused.Msg}
	}
	switch {
	case have.AckPolicy != want.AckPolicy:
		cons, err = remake(ctx, stream, cons, want, s, from, "read it "+mode.String())
		return cons, RebuiltAcks, err
	case s.ConsumerStorage != "" && have.MemoryStorage != want.MemoryStorage:
		cons, err = remake(ctx, stream, cons, want, s, from, "keep it "+storageName(s.MemoryConsumer()))
		return cons, Rebuilt, err
	}
	if len(problems) == 0 && have.Metadata[MetaConsumerConnector] == c.Name {
		return cons, Found, nil
	}
	upd := have
	upd.Metadata = maps.Clone(have.Metadata)
	if upd.Metadata == nil {
		upd.Metadata = map[string]string{}
	}
	upd.Metadata[MetaConsumerConnector] = c.Name
	if !mode.AckLess {
		upd.AckWait, upd.MaxAckPending = want.AckWait, want.MaxAckPending
	}
	upd.PinnedTTL = want.PinnedTTL
	upd.FilterSubject, upd.FilterSubjects = want.FilterSubject, want.FilterSubjects
	cons, err = stream.UpdateConsumer(ctx, upd)
	if err != nil {
		return nil, Found, fmt.Errorf("stream %s: update consumer %s: %w", s.Stream, s.Consumer, err)
	}
	return cons, Found, nil
}

// refusedProblem returns the first of problems that is refused, or nil.
func refusedProblem(problems []ConsumerProblem) *ConsumerProblem {
	for i := range problems {
		if problems[i].Refused {
			return &problems[i]
		}
	}
	return nil
}

// StreamKey names s in messages the way plan does: streams[N], N counted
// from 1 in the order of the file.
func StreamKey(c *config.Connector, s config.Stream) string {
	i := slices.IndexFunc(c.Streams, func(cs config.Stream) bool { return cs.Stream == s.Stream && cs.Consumer == s.Consumer })
	if i < 0 {
		return "streams"
	}
	return fmt.Sprintf("streams[%d]", i+1)
}

// ConsumerProblem is one way an existing consumer differs from what its
// connector needs.
type ConsumerProblem struct {
	// Refused: jetlake cannot change the setting, so jetlake run refuses
	// the consumer until someone fixes it. Otherwise run sets the setting
	// to the configured value on start.
	Refused bool
	// Harmful: a setting run changes on start that, as it is until then,
	// works against the connector's limits (messages held in a buffer
	// redelivered, or deliveries stopped before a file is full).
	Harmful bool
	// Msg says what is wrong and what to do; it follows
	// "stream S, consumer C: ".
	Msg string
}

// CheckConsumer compares have, the configuration of an existing consumer,
// with what connector c needs for its stream s. key names s in the
// messages ("streams[2]"). A consumer of another connector (OwnerRefusal),
// MaxDeliver, headers-only delivery and the priority policy are refused;
// an ack policy other than mode's is rebuilt on start; AckWait,
// MaxAckPending (neither matters to an ack-less consumer), the filter
// subjects and the pinned TTL are what run updates. No problems: the
// consumer fits.
func CheckConsumer(c *config.Connector, s config.Stream, key string, have jetstream.ConsumerConfig, mode ReadMode) []ConsumerProblem {
	var out []ConsumerProblem
	add := func(refused, harmful bool, format string, args ...any) {
		out = append(out, ConsumerProblem{Refused: refused, Harmful: harmful, Msg: fmt.Sprintf(format, args...)})
	}
	rename := fmt.Sprintf("or set %s.consumer to another name", key)
	if msg := OwnerRefusal(c.Name, key, have); msg != "" {
		add(true, false, "%s", msg)
	}
	if have.AckPolicy != mode.Policy() {
		add(false, false, "AckPolicy %s; jetlake reads this stream %s (%s): it rebuilds the consumer with AckPolicy %s from the export record on start",
			apiName(have.AckPolicy), mode, mode.Why, apiName(mode.Policy()))
	}
	if have.MaxDeliver > 0 {
		add(true, false, "MaxDeliver %d; jetlake needs -1 (unlimited) so an outage never ends in max-deliveries drops: "+
			"update the consumer's max_deliver to -1, or delete the consumer (jetlake re-creates it) %s", have.MaxDeliver, rename)
	}
	if have.HeadersOnly {
		add(true, false, "delivers headers only, without the message data: delete the consumer (jetlake re-creates it) %s", rename)
	}
	want := Settings(c.Name, s, mode)
	if have.PriorityPolicy != want.PriorityPolicy || !slices.Equal(have.PriorityGroups, want.PriorityGroups) {
		add(true, false, "priority policy %s with groups %v does not fit failover = %q, which needs %s with groups %v; "+
			"a priority policy cannot be changed: delete the consumer (jetlake re-creates it) %s",
			apiName(have.PriorityPolicy), have.PriorityGroups, s.Failover, apiName(want.PriorityPolicy), want.PriorityGroups, rename)
	}
	if !mode.AckLess && have.AckPolicy == want.AckPolicy {
		out = append(out, ackProblems(c, s, key, have)...)
	}
	haveFilters := have.FilterSubjects
	if have.FilterSubject != "" {
		haveFilters = []string{have.FilterSubject}
	}
	if !slices.Equal(haveFilters, s.Subjects) {
		add(false, false, "filter subjects %s; jetlake sets them to %s on start", listOrWhole(haveFilters), listOrWhole(s.Subjects))
	}
	if s.ConsumerStorage != "" && have.MemoryStorage != want.MemoryStorage {
		add(false, false, "keeps its state %s; jetlake rebuilds it %s from the export record on start (%s.consumer_storage = %q)",
			storageName(have.MemoryStorage), storageName(want.MemoryStorage), key, s.ConsumerStorage)
	}
	if s.Failover == config.FailoverPinned && have.PinnedTTL != want.PinnedTTL {
		add(false, false, "pinned TTL %s; jetlake sets it to %s (%s.priority_timeout) on start",
			config.FormatDuration(have.PinnedTTL), config.FormatDuration(want.PinnedTTL), key)
	}
	return out
}

// ackProblems are the ways the AckWait and MaxAckPending of have, a
// consumer that takes acks, differ from what entry s (key) needs.
func ackProblems(c *config.Connector, s config.Stream, key string, have jetstream.ConsumerConfig) []ConsumerProblem {
	var out []ConsumerProblem
	add := func(refused, harmful bool, format string, args ...any) {
		out = append(out, ConsumerProblem{Refused: refused, Harmful: harmful, Msg: fmt.Sprintf(format, args...)})
	}
	switch minAck := 2 * c.Rotation.MaxFileAge; {
	case have.AckWait < minAck:
		add(false, true, "AckWait %s is less than 2 × max_file_age (%s); jetlake sets it to %s on start",
			config.FormatDuration(have.AckWait), config.FormatDuration(c.Rotation.MaxFileAge), config.FormatDuration(s.AckWait))
	case have.AckWait != s.AckWait:
		add(false, false, "AckWait %s; jetlake sets it to %s (%s.ack_wait) on start", config.FormatDuration(have.AckWait), config.FormatDuration(s.AckWait), key)
	}
	perFile := c.Rotation.MaxMessagesPerFile
	switch {
	case have.MaxAckPending > 0 && perFile > 0 && have.MaxAckPending < perFile:
		add(false, true, "MaxAckPending %d is less than max_messages_per_file (%d): files would be cut at 90%% of it; jetlake sets it to %d on start",
			have.MaxAckPending, perFile, s.MaxAckPending)
	case have.MaxAckPending > 0 && have.MaxAckPending < s.MaxAckPending:
		add(false, true, "MaxAckPending %d is less than %d, what %s.max_ack_pending and the rotation limits ask for: the server would stop delivering sooner; jetlake sets it to %d on start",
			have.MaxAckPending, s.MaxAckPending, key, s.MaxAckPending)
	case have.MaxAckPending != s.MaxAckPending:
		add(false, false, "MaxAckPending %d; jetlake sets it to %d on start", have.MaxAckPending, s.MaxAckPending)
	}
	return out
}

// OwnerRefusal says why connector must not read the existing consumer
// configured as have, or returns "": its metadata names another connector.
// key names the [[streams]] entry in the fix, as in CheckConsumer ("":
// none).
// Two connectors on one consumer would each be delivered messages the
// other never exports, and neither's export record would hold the whole
// stream. A consumer without that metadata (made by hand, or by a release
// that did not write it) is adopted, and given connector's name.
func OwnerRefusal(connector, key string, have jetstream.ConsumerConfig) string {
	owner, ok := have.Metadata[MetaConsumerConnector]
	if !ok || owner == connector {
		return ""
	}
	rename := "name another consumer in this connector's file"
	if key != "" {
		rename = fmt.Sprintf("set %s.consumer to another name", key)
	}
	return fmt.Sprintf("belongs to connector %q (its metadata %s), not to %q: two connectors on one consumer would each take messages the other then never exports; "+
		"%s, or, if connector %q is gone for good, set the consumer's %s metadata to %q or delete the consumer",
		owner, MetaConsumerConnector, connector, rename, owner, MetaConsumerConnector, connector)
}

// storageName says where a consumer keeps its state.
func storageName(memory bool) string {
	if memory {
		return "in memory"
	}
	return "in a file"
}

// remake deletes cons, an existing consumer of s, and creates it again as
// want (why says what for: "keep it in memory"), delivering from from (the
// first sequence the export record lacks) or, without a record, from right
// after what it proves exported (Proven): what it had delivered and not
// had acked comes back.
func remake(ctx context.Context, stream jetstream.Stream, cons jetstream.Consumer, want jetstream.ConsumerConfig, s config.Stream, from uint64, why string) (jetstream.Consumer, error) {
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("stream %s: consumer %s: %w", s.Stream, s.Consumer, err)
	}
	if from == 0 {
		from = Proven(info) + 1
	}
	if err := stream.DeleteConsumer(ctx, s.Consumer); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("stream %s: delete consumer %s to %s: %w", s.Stream, s.Consumer, why, err)
	}
	cons, err = create(ctx, stream, want, from, s.DeliverPolicy)
	if err != nil {
		return nil, fmt.Errorf("stream %s: create consumer %s to %s: %w", s.Stream, s.Consumer, why, err)
	}
	return cons, nil
}

// create creates the consumer cfg on stream, delivering from sequence
// from, or, with from 0, where deliver says. An ack-less consumer always
// starts at a sequence jetlake reads first (the stream's first, or the one
// after its last for deliver_policy "new"), kept in its metadata
// (MetaDeliverFrom): the ack floor of such a consumer moves at delivery
// and proves nothing.
func create(ctx context.Context, stream jetstream.Stream, cfg jetstream.ConsumerConfig, from uint64, deliver string) (jetstream.Consumer, error) {
	if cfg.AckPolicy == jetstream.AckNonePolicy {
		if from == 0 {
			si, err := stream.Info(ctx)
			if err != nil {
				return nil, fmt.Errorf("stream info: %w", err)
			}
			from = max(si.State.FirstSeq, 1)
			if deliver == config.DeliverNew {
				from = si.State.LastSeq + 1
			}
		}
		cfg = withDeliverFrom(cfg, from)
	}
	return stream.CreateConsumer(ctx, ConsumerFrom(cfg, from))
}

// withDeliverFrom returns cfg with a copy of its metadata that says it
// was created to deliver from sequence from (MetaDeliverFrom).
func withDeliverFrom(cfg jetstream.ConsumerConfig, from uint64) jetstream.ConsumerConfig {
	md := maps.Clone(cfg.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	md[MetaDeliverFrom] = strconv.FormatUint(from, 10)
	cfg.Metadata = md
	return cfg
}

func listOrWhole(subjects []string) string {
	if len(subjects) == 0 {
		return "(none: the whole stream)"
	}
	return "[" + strings.Join(subjects, ", ") + "]"
}

// apiName names a policy as the server's API and the nats CLI do ("all",
// not "AckAll").
func apiName(p json.Marshaler) string {
	b, err := p.MarshalJSON()
	if err != nil || string(b) == `""` {
		return "none"
	}
	return strings.Trim(string(b), `"`)
}

// ConsumerFrom returns cfg delivering from sequence from; 0 leaves cfg's
// deliver policy as it is.
func ConsumerFrom(cfg jetstream.ConsumerConfig, from uint64) jetstream.ConsumerConfig {
	switch {
	case from == 1:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverAllPolicy, 0
	case from > 1:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	return cfg
}

// UnpartitionedRefusal says why entry s of connector c, which has no
// partitions, must not read a stream configured as have, or returns "".
// A stream that carries the partition transform stores every subject
// behind its partition token: a consumer without partitions would export
// it again, with the tokens in its keys and subjects, beside the
// partitioned instances.
func UnpartitionedRefusal(c *config.Connector, s config.Stream, have jetstream.StreamConfig) string {
	t := have.SubjectTransform
	if s.Partitioned() || t == nil {
		return ""
	}
	n, ok := config.TransformPartitions(t.Source, t.Destination)
	if !ok {
		return ""
	}
	return fmt.Sprintf("carries the partition transform %q → %q of %d partitions, and %s has no partitions: "+
		"it would export the stream again, with the partition token in every key and subject; set %s.partitions = %d",
		t.Source, t.Destination, n, StreamKey(c, s), StreamKey(c, s), n)
}

// Move makes cons, the consumer of s (a [[streams]] entry of connector), deliver from sequence from on:
// with a reset on servers that have it (2.14+); by deleting and creating
// it again on older ones, or when its deliver policy does not allow the
// reset (deliver new, or a start sequence above from). It returns the new
// consumer when it made one. An ack-less consumer made again keeps in its
// metadata (MetaDeliverFrom) no more than proven: the sequence below which
// the caller knows every one exported, which from, a sequence the caller
// lacks, need not be.
func Move(ctx context.Context, js jetstream.JetStream, stream jetstream.Stream, connector string, s config.Stream, cons jetstream.Consumer, from, proven uint64) (jetstream.Consumer, error) {
	_, err := js.ResetConsumerToSequence(ctx, s.Stream, s.Consumer, from)
	switch {
	case err == nil:
		return nil, nil
	case errors.Is(err, jetstream.ErrConsumerInvalidReset), errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrJetStreamNotEnabled):
	default:
		return nil, fmt.Errorf("reset to sequence %d: %w", from, err)
	}
	cfg := Settings(connector, s, ModeFor(stream.CachedInfo().Config.Retention))
	if cons != nil {
		if info := cons.CachedInfo(); info != nil {
			cfg = info.Config
		}
	}
	if cfg.AckPolicy == jetstream.AckNonePolicy {
		was, err := strconv.ParseUint(cfg.Metadata[MetaDeliverFrom], 10, 64)
		if err != nil || was > proven {
			was = proven
		}
		cfg = withDeliverFrom(cfg, was)
	}
	if err := stream.DeleteConsumer(ctx, s.Consumer); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("delete to create again from sequence %d: %w", from, err)
	}
	made, err := stream.CreateConsumer(ctx, ConsumerFrom(cfg, from))
	if err != nil {
		return nil, fmt.Errorf("create again from sequence %d: %w", from, err)
	}
	return made, nil
}

// EnsurePartitionTransform gives the stream the partition transform of
// entry sc, or checks the one it has. A stream whose subjects a partition
// token could be mistaken for, or with another transform, is refused.
func EnsurePartitionTransform(ctx context.Context, js jetstream.JetStream, c *config.Connector, sc config.Stream, have jetstream.StreamConfig) error {
	src, dst := config.PartitionTransform(sc.Partitions)
	if t := have.SubjectTransform; t != nil {
		if t.Source == src && t.Destination == dst {
			return nil
		}
		return &ConfigError{Stream: sc.Stream, Msg: fmt.Sprintf("has the subject transform %q → %q; partitions = %d needs %q → %q: "+
			"the partition count of a stream can not change (its messages are stored under their partition), so match %s.partitions to the stream's, or export another stream",
			t.Source, t.Destination, sc.Partitions, src, dst, StreamKey(c, sc))}
	}
	if why := config.CheckPartitionSubjects(have.Subjects); why != "" {
		return &ConfigError{Stream: sc.Stream, Msg: "can not be partitioned: " + why}
	}
	upd := have
	upd.SubjectTransform = &jetstream.SubjectTransformConfig{Source: src, Destination: dst}
	if _, err := js.UpdateStream(ctx, upd); err != nil {
		return fmt.Errorf("stream %s: set the partition transform: %w", sc.Stream, err)
	}
	return nil
}

// Pinned returns the id of the client pinned to the consumer's priority
// group, as its leader says; "" when none is.
func Pinned(ctx context.Context, js jetstream.JetStream, stream, consumer string) (string, error) {
	cons, err := js.Consumer(ctx, stream, consumer)
	if err != nil {
		return "", err
	}
	return PinnedIn(cons.CachedInfo()), nil
}

// PinnedIn returns the id of the client pinned to the priority group of
// the consumer ci describes; "" when none is.
func PinnedIn(ci *jetstream.ConsumerInfo) string {
	if ci == nil {
		return ""
	}
	for _, g := range ci.PriorityGroups {
		if g.Group == PriorityGroup {
			return g.PinnedClientID
		}
	}
	return ""
}

// Find returns the consumer of s (a [[streams]] entry of connector) on
// stream, or creates it when it is missing, delivering from the sequence
// from returns (0: as the entry's deliver_policy says). made reports that
// it was created here; a consumer another instance re-created first is
// found, not made.
func Find(ctx context.Context, stream jetstream.Stream, connector string, s config.Stream, from func(context.Context) (uint64, error)) (cons jetstream.Consumer, made bool, err error) {
	cons, err = stream.Consumer(ctx, s.Consumer)
	if err == nil {
		if msg := OwnerRefusal(connector, "", cons.CachedInfo().Config); msg != "" {
			return nil, false, &ConfigError{Stream: s.Stream, Consumer: s.Consumer, Msg: msg}
		}
		return cons, false, nil
	}
	if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, false, fmt.Errorf("consumer info: %w", err)
	}
	start, err := from(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("the consumer is missing, and its export record can not be read: %w", err)
	}
	cons, err = create(ctx, stream, Settings(connector, s, ModeFor(stream.CachedInfo().Config.Retention)), start, s.DeliverPolicy)
	if errors.Is(err, jetstream.ErrConsumerExists) {
		// Another instance re-created it first, or another connector.
		cons, err = stream.Consumer(ctx, s.Consumer)
		if err == nil {
			if msg := OwnerRefusal(connector, "", cons.CachedInfo().Config); msg != "" {
				return nil, false, &ConfigError{Stream: s.Stream, Consumer: s.Consumer, Msg: msg}
			}
		}
		return cons, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("the consumer is missing and could not be re-created: %w", err)
	}
	return cons, true, nil
}
