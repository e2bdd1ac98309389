// Package plan checks online what jetlake run needs of a connector: that
// NATS, its streams, consumers and state bucket and the S3 bucket are
// there and fit, that the store honours conditional writes, and which
// object keys the messages would get; and, offline, which kind of restore
// the connector's objects allow. It decides every outcome; printing
// them is left to the caller. It changes nothing but a probe object under
// <prefix>/_jetlake/probe/, which it removes when asked to.
package plan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/internal/state"
)

// Status is the outcome of a check.
type Status string

// Check outcomes. Fail makes the plan fail; Warn is counted.
const (
	OK   Status = "ok"
	Note Status = "note"
	Warn Status = "warn"
	Fail Status = "FAIL"
	Skip Status = "skip"
)

// Check is the outcome of one check, in one line.
type Check struct {
	Status Status
	Msg    string
}

// Result is the plan of one connector.
type Result struct {
	Checks []Check
	// Samples are the lines that show sample object keys, stream after
	// stream, indented below each stream's header line.
	Samples []string
}

// Count returns how many checks have status s.
func (r *Result) Count(s Status) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == s {
			n++
		}
	}
	return n
}

// Options tune a plan. Timeout must be more than 0.
type Options struct {
	Cleanup bool          // remove the probe afterwards (needs s3:DeleteObject)
	Timeout time.Duration // time limit of each network call
	Now     time.Time     // the time of the sample keys' messages
	// ShowPayloads prints the value a sample message was rejected for;
	// without it, the reason names the column and what is wrong alone.
	ShowPayloads bool
}

// maxSampleSubjects is how many concrete subjects a plan lists per
// wildcard filter.
const maxSampleSubjects = 5

// Run plans connector c: every check of a connector that is enabled, and
// sample keys for each of its streams.
func Run(ctx context.Context, c *config.Connector, o Options) *Result {
	p := &planner{c: c, o: o, r: &Result{}}
	if !c.Enabled {
		p.add(Skip, "connector is disabled (enabled = false): no online checks")
		for _, s := range c.Streams {
			p.sampleKeys(s, nil, "examples from the filter subjects")
		}
		p.r.Checks = append(p.r.Checks, RestoreCheck(c))
		return p.r
	}
	p.checkNATS(ctx)
	p.checkS3(ctx)
	p.checkIceberg(ctx)
	p.r.Checks = append(p.r.Checks, RestoreCheck(c))
	return p.r
}

// RestoreCheck says which kind of restore the objects of connector c
// allow: what jetlake restore gives back of their messages
// (formats.RestoreFidelity of its [output]), in one line starting
// "restore". It is OK when messages come back whole, with headers and
// payloads byte for byte, a Note otherwise: a choice of format, not a
// fault, and so no warning.
func RestoreCheck(c *config.Connector) Check {
	f := formats.RestoreFidelity(c.Output.FormatsOptions())
	status := OK
	if !f.Restorable || !f.Headers || !f.ExactJSON {
		status = Note
	}
	where := ""
	if c.Iceberg != nil {
		// An Iceberg table's data files are parquet files of the same
		// options; restore reads those of a snapshot.
		where = " from the Iceberg table's parquet data files"
	}
	return Check{status, fmt.Sprintf("restore%s: %s", where, f)}
}

// checkIceberg checks the catalog and table of a connector with [iceberg].
func (p *planner) checkIceberg(ctx context.Context) {
	ic := p.c.Iceberg
	if ic == nil {
		return
	}
	octx, cancel := p.op(ctx)
	defer cancel()
	name := ic.Namespace + "." + ic.Table
	status, err := iceberg.CheckConnector(octx, p.c)
	if err != nil {
		p.add(Fail, "iceberg table %s (catalog %s): %v", name, config.RedactURL(ic.URI), err)
		return
	}
	p.add(OK, "iceberg table %s (catalog %s): %s", name, config.RedactURL(ic.URI), status)
}

// planner plans one connector.
type planner struct {
	c *config.Connector
	o Options
	r *Result
	// ends the call in flight when NATS refuses one of its publishes or
	// subscriptions, which would otherwise only time out
	perms jsclient.PermissionWatch
}

func (p *planner) add(status Status, format string, args ...any) {
	p.r.Checks = append(p.r.Checks, Check{status, fmt.Sprintf(format, args...)})
}

// op bounds one network call; a permissions violation ends it too.
func (p *planner) op(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	ctx, unwatch := p.perms.Context(ctx)
	return ctx, func() { unwatch(); cancel() }
}

// why is err, the error of a call whose context of op is ctx, or the
// permissions violation that ended the call, which names the subject and
// the grant to add where err would say only that the call timed out.
func (p *planner) why(ctx context.Context, err error) error {
	if denied := jsclient.Denied(ctx); denied != nil {
		return denied
	}
	return err
}

// checkNATS connects with the connector's credentials and checks every
// stream, consumer and the state bucket.
func (p *planner) checkNATS(ctx context.Context) {
	c := p.c
	var missing []string
	for _, f := range [][2]string{{"token_env", c.NATS.TokenEnv}, {"password_env", c.NATS.PasswordEnv}} {
		if f[1] != "" && os.Getenv(f[1]) == "" {
			missing = append(missing, fmt.Sprintf("nats.%s names %s, which is %s", f[0], f[1], EnvStatus(f[1])))
		}
	}
	for _, f := range [][2]string{{"creds_file", c.NATS.CredsFile}, {"nkey_seed_file", c.NATS.NkeySeedFile}, {"tls_ca_file", c.NATS.TLSCAFile}, {"tls_cert_file", c.NATS.TLSCertFile}, {"tls_key_file", c.NATS.TLSKeyFile}} {
		if st := FileStatus(f[1]); st != "" && st != "readable" {
			missing = append(missing, fmt.Sprintf("nats.%s %s is %s", f[0], f[1], st))
		}
	}
	var err error
	var nc *nats.Conn
	if len(missing) > 0 {
		err = errors.New(strings.Join(missing, "; "))
		p.add(Fail, "nats: cannot connect: %v", err)
	} else if nc, err = jsclient.Dial(c, p.perms.Option()); err != nil {
		hint := ""
		switch {
		case errors.Is(err, nats.ErrNoServers):
			hint = ": check [nats] url and that the server is reachable from here"
		case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
			hint = ": check the credentials in [nats]"
		}
		p.add(Fail, "nats: %v%s", err, hint)
	}
	if err != nil {
		for _, s := range c.Streams {
			p.add(Skip, "stream %s: not checked: NATS not reachable", s.Stream)
			p.sampleKeys(s, nil, "examples from the filter subjects: NATS not reachable")
		}
		return
	}
	defer nc.Close()
	p.add(OK, "nats: connected to %s (nats-server %s)", nc.ConnectedUrlRedacted(), nc.ConnectedServerVersion())
	js, err := jsclient.NewJetStream(nc, c.NATS)
	if err != nil {
		p.add(Fail, "nats: %v", err)
		return
	}
	for i, s := range c.Streams {
		p.checkStream(ctx, nc, js, i, s)
	}
	p.checkStateBucket(ctx, js)
}

func (p *planner) checkStream(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, i int, s config.Stream) {
	key := fmt.Sprintf("streams[%d]", i+1)
	octx, cancel := p.op(ctx)
	st, err := js.Stream(octx, s.Stream)
	cancel()
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		p.add(Fail, "stream %s: not found: create it, or fix %s.stream", s.Stream, key)
		p.sampleKeys(s, nil, "examples from the filter subjects: the stream does not exist")
		return
	case err != nil:
		p.add(Fail, "stream %s: %v", s.Stream, p.why(octx, err))
		p.sampleKeys(s, nil, "examples from the filter subjects: stream info failed")
		return
	}
	si := st.CachedInfo()
	filters := s.Subjects
	switch {
	case len(si.Config.Subjects) == 0:
		p.add(OK, "stream %s: exists (%d messages); it has no subjects of its own (mirror or sources), so the filters are not checked against them", s.Stream, si.State.Msgs)
	default:
		var outside []string
		for _, f := range filters {
			if !slices.ContainsFunc(si.Config.Subjects, func(ss string) bool { return config.SubjectWithin(f, ss) }) {
				outside = append(outside, f)
			}
		}
		if len(outside) > 0 {
			p.add(Fail, "stream %s: filter %s not within the stream's subjects %s: fix %s.subjects",
				s.Stream, strings.Join(outside, ", "), strings.Join(si.Config.Subjects, ", "), key)
		} else if len(filters) == 0 {
			p.add(OK, "stream %s: exists (%d messages, subjects %s); the consumer reads the whole stream", s.Stream, si.State.Msgs, strings.Join(si.Config.Subjects, ", "))
		} else {
			p.add(OK, "stream %s: exists (%d messages); its subjects %s cover the filters %s",
				s.Stream, si.State.Msgs, strings.Join(si.Config.Subjects, ", "), strings.Join(filters, ", "))
		}
	}
	p.streamSamples(ctx, nc, s)
	if s.Partitioned() {
		p.checkPartitions(ctx, js, st, key, s)
		return
	}
	if msg := jsclient.UnpartitionedRefusal(p.c, s, si.Config); msg != "" {
		p.add(Fail, "stream %s: %s", s.Stream, msg)
		return
	}
	p.checkConsumer(ctx, st, key, s)
	p.checkCoverage(ctx, nc, st, s)
}

func (p *planner) checkStateBucket(ctx context.Context, js jetstream.JetStream) {
	b := p.c.State.Bucket
	octx, cancel := p.op(ctx)
	kv, err := js.KeyValue(octx, b)
	cancel()
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		api := jsclient.APIPrefix(p.c.NATS)
		p.add(OK, "state bucket %s: does not exist yet; jetlake creates it on first start (replicas %d), which needs %sINFO and %sSTREAM.CREATE.KV_%s",
			b, max(p.c.State.Replicas, 1), api, api, b)
		p.checkBucketReplicas(ctx, js, max(p.c.State.Replicas, 1), "[state] replicas = %d, fewer than stream %s's %d: the bucket jetlake creates can lose the export records and intents in an outage the stream survives; set [state] replicas = %d")
	case err != nil:
		p.add(Fail, "state bucket %s: %v", b, p.why(octx, err))
	default:
		p.checkBucketLimits(ctx, js, kv)
	}
}

// checkBucketLimits fails a state bucket that can lose entries by itself
// (run refuses it), and warns when it has fewer replicas than a stream.
func (p *planner) checkBucketLimits(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue) {
	b := p.c.State.Bucket
	octx, cancel := p.op(ctx)
	st, err := kv.Status(octx)
	cancel()
	if err != nil {
		p.add(Fail, "state bucket %s: %v", b, p.why(octx, err))
		return
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok || bs.StreamInfo() == nil {
		p.add(OK, "state bucket %s: exists", b)
		return
	}
	cfg := bs.StreamInfo().Config
	if why := state.Unsafe(b, cfg); why != "" {
		p.add(Fail, "state bucket %s: %s", b, why)
		return
	}
	p.add(OK, "state bucket %s: exists (%s storage, %d replicas, no expiry)", b, cfg.Storage, max(cfg.Replicas, 1))
	p.checkBucketReplicas(ctx, js, max(cfg.Replicas, 1), "%d replicas, fewer than stream %s's %d: an outage the stream survives can lose the export records and intents; nats stream edit KV_"+b+" --replicas %d")
}

// checkBucketReplicas warns, with format (replicas, stream, its replicas,
// its replicas), of each stream with more replicas than the state bucket's.
func (p *planner) checkBucketReplicas(ctx context.Context, js jetstream.JetStream, replicas int, format string) {
	for _, s := range p.c.Streams {
		octx, cancel := p.op(ctx)
		st, err := js.Stream(octx, s.Stream)
		cancel()
		if err != nil {
			continue // reported with the stream
		}
		if r := st.CachedInfo().Config.Replicas; r > replicas {
			p.add(Warn, "state bucket %s: "+format, p.c.State.Bucket, replicas, s.Stream, r, r)
		}
	}
}
