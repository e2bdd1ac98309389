package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter"
	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/lossmarker"
	"github.com/jetlake/jetlake/pathtemplate"
)

// maxSampleSubjects is how many concrete subjects plan lists per wildcard
// filter.
const maxSampleSubjects = 5

// cmdPlan is a dry run: it prints what jetlake run would do with the
// configuration and checks, online, everything it needs. It changes nothing
// but a probe object under <prefix>/_jetlake/probe/ (removed with -cleanup).
func cmdPlan(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "connector file or directory of *.toml files")
	cleanup := fs.Bool("cleanup", false, "remove the probe object afterwards (needs s3:DeleteObject)")
	timeout := fs.Duration("timeout", 10*time.Second, "time limit of each network call")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "jetlake plan: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *timeout <= 0 {
		fmt.Fprintf(stderr, "jetlake plan: -timeout %s: must be more than 0\n", *timeout)
		return exitUsage
	}
	conns, code, ok := loadConfig(*path, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var failed, warned int
	for i, c := range conns {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		p := &planner{c: c, cleanup: *cleanup, timeout: *timeout, now: time.Now().UTC()}
		p.run(ctx)
		p.print(stdout)
		failed += p.failed
		warned += p.warned
	}
	fmt.Fprintf(stdout, "\nplan: %d %s failed, %d %s\n", failed, plural(failed, "check", "checks"), warned, plural(warned, "warning", "warnings"))
	if failed > 0 {
		return exitFailure
	}
	return exitOK
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Check outcomes.
const (
	statusOK   = "ok"
	statusNote = "note"
	statusWarn = "warn"
	statusFail = "FAIL"
	statusSkip = "skip"
)

type checkLine struct {
	status string
	msg    string
}

// sampleKeys are the lines that show the sample object keys of one
// stream.
type sampleKeys struct {
	lines []string
}

// planner plans one connector.
type planner struct {
	c       *config.Connector
	cleanup bool
	timeout time.Duration
	now     time.Time

	checks         []checkLine
	samples        []sampleKeys
	failed, warned int
}

func (p *planner) add(status, format string, args ...any) {
	p.checks = append(p.checks, checkLine{status, fmt.Sprintf(format, args...)})
	switch status {
	case statusFail:
		p.failed++
	case statusWarn:
		p.warned++
	}
}

// op bounds one network call.
func (p *planner) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.timeout)
}

func (p *planner) run(ctx context.Context) {
	if !p.c.Enabled {
		p.add(statusSkip, "connector is disabled (enabled = false): no online checks")
		for _, s := range p.c.Streams {
			p.samples = append(p.samples, p.sampleKeys(s, nil, "examples from the filter subjects"))
		}
		return
	}
	p.checkNATS(ctx)
	p.checkS3(ctx)
}

// checkNATS connects with the connector's credentials and checks every
// stream, consumer and the state bucket.
func (p *planner) checkNATS(ctx context.Context) {
	c := p.c
	var missing []string
	for _, f := range [][2]string{{"token_env", c.NATS.TokenEnv}, {"password_env", c.NATS.PasswordEnv}} {
		if f[1] != "" && os.Getenv(f[1]) == "" {
			missing = append(missing, fmt.Sprintf("nats.%s names %s, which is %s", f[0], f[1], envStatus(f[1])))
		}
	}
	for _, f := range [][2]string{{"creds_file", c.NATS.CredsFile}, {"nkey_seed_file", c.NATS.NkeySeedFile}, {"tls_ca_file", c.NATS.TLSCAFile}, {"tls_cert_file", c.NATS.TLSCertFile}, {"tls_key_file", c.NATS.TLSKeyFile}} {
		if st := fileStatus(f[1]); st != "" && st != "readable" {
			missing = append(missing, fmt.Sprintf("nats.%s %s is %s", f[0], f[1], st))
		}
	}
	var err error
	var nc *nats.Conn
	if len(missing) > 0 {
		err = errors.New(strings.Join(missing, "; "))
		p.add(statusFail, "nats: cannot connect: %v", err)
	} else if nc, err = exporter.Dial(c); err != nil {
		hint := ""
		switch {
		case errors.Is(err, nats.ErrNoServers):
			hint = ": check [nats] url and that the server is reachable from here"
		case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
			hint = ": check the credentials in [nats]"
		}
		p.add(statusFail, "nats: %v%s", err, hint)
	}
	if err != nil {
		for _, s := range c.Streams {
			p.add(statusSkip, "stream %s: not checked: NATS not reachable", s.Stream)
			p.samples = append(p.samples, p.sampleKeys(s, nil, "examples from the filter subjects: NATS not reachable"))
		}
		return
	}
	defer nc.Close()
	p.add(statusOK, "nats: connected to %s (nats-server %s)", nc.ConnectedUrlRedacted(), nc.ConnectedServerVersion())
	js, err := exporter.NewJetStream(nc, c.NATS)
	if err != nil {
		p.add(statusFail, "nats: %v", err)
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
		p.add(statusFail, "stream %s: not found: create it, or fix %s.stream", s.Stream, key)
		p.samples = append(p.samples, p.sampleKeys(s, nil, "examples from the filter subjects: the stream does not exist"))
		return
	case err != nil:
		p.add(statusFail, "stream %s: %v", s.Stream, err)
		p.samples = append(p.samples, p.sampleKeys(s, nil, "examples from the filter subjects: stream info failed"))
		return
	}
	si := st.CachedInfo()
	filters := s.Subjects
	switch {
	case len(si.Config.Subjects) == 0:
		p.add(statusOK, "stream %s: exists (%d messages); it has no subjects of its own (mirror or sources), so the filters are not checked against them", s.Stream, si.State.Msgs)
	default:
		var outside []string
		for _, f := range filters {
			if !slices.ContainsFunc(si.Config.Subjects, func(ss string) bool { return subjectWithin(f, ss) }) {
				outside = append(outside, f)
			}
		}
		if len(outside) > 0 {
			p.add(statusFail, "stream %s: filter %s not within the stream's subjects %s: fix %s.subjects",
				s.Stream, strings.Join(outside, ", "), strings.Join(si.Config.Subjects, ", "), key)
		} else if len(filters) == 0 {
			p.add(statusOK, "stream %s: exists (%d messages, subjects %s); the consumer reads the whole stream", s.Stream, si.State.Msgs, strings.Join(si.Config.Subjects, ", "))
		} else {
			p.add(statusOK, "stream %s: exists (%d messages); its subjects %s cover the filters %s",
				s.Stream, si.State.Msgs, strings.Join(si.Config.Subjects, ", "), strings.Join(filters, ", "))
		}
	}
	p.samples = append(p.samples, p.streamSamples(ctx, nc, s))
	p.checkConsumer(ctx, st, key, s)
	p.checkCoverage(ctx, nc, st, s)
}

// subjectWithin reports whether every subject that matches filter also
// matches subject (a stream's subject, wildcards allowed).
func subjectWithin(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i := range f {
		switch {
		case i >= len(s):
			return false
		case s[i] == ">":
			return true
		case f[i] == ">":
			return false
		case s[i] == "*":
		case f[i] == "*" || f[i] != s[i]:
			return false
		}
	}
	return len(f) == len(s)
}

// streamSamples renders sample keys from the subjects the stream holds.
func (p *planner) streamSamples(ctx context.Context, nc *nats.Conn, s config.Stream) sampleKeys {
	if !p.c.Output.PathTemplate.UsesSubject() {
		return p.sampleKeys(s, nil, "")
	}
	filters := s.Subjects
	if len(filters) == 0 {
		filters = []string{">"}
	}
	var subjects []subjectSample
	for _, f := range filters {
		if !strings.ContainsAny(f, "*>") {
			subjects = append(subjects, subjectSample{filter: f, subjects: []string{f}, total: 1})
			continue
		}
		octx, cancel := p.op(ctx)
		subs, total, err := streamSubjects(octx, nc, p.c.NATS, s.Stream, f)
		cancel()
		if err != nil {
			p.add(statusNote, "stream %s: could not list the subjects matching %s: %v", s.Stream, f, err)
		}
		subjects = append(subjects, subjectSample{filter: f, subjects: subs, total: total})
	}
	return p.sampleKeys(s, subjects, "")
}

type subjectSample struct {
	filter   string
	subjects []string // up to maxSampleSubjects, sorted
	total    int      // subjects in the stream matching filter
}

// streamSubjects returns up to maxSampleSubjects subjects of stream that
// match filter, and how many there are. It asks for one page of stream
// info only: a stream may hold millions of subjects.
func streamSubjects(ctx context.Context, nc *nats.Conn, n config.NATS, stream, filter string) ([]string, int, error) {
	req, err := json.Marshal(map[string]string{"subjects_filter": filter})
	if err != nil {
		return nil, 0, err
	}
	msg, err := nc.RequestWithContext(ctx, apiPrefix(n)+"STREAM.INFO."+stream, req)
	if err != nil {
		return nil, 0, err
	}
	var resp struct {
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
		Total int `json:"total"`
		State struct {
			Subjects map[string]uint64 `json:"subjects"`
		} `json:"state"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, 0, err
	}
	if resp.Error != nil {
		return nil, 0, errors.New(resp.Error.Description)
	}
	subs := make([]string, 0, len(resp.State.Subjects))
	for s := range resp.State.Subjects {
		subs = append(subs, s)
	}
	slices.Sort(subs)
	total := max(resp.Total, len(subs))
	if len(subs) > maxSampleSubjects {
		subs = subs[:maxSampleSubjects]
	}
	return subs, total, nil
}

// apiPrefix is the JetStream API prefix the [nats] settings select.
func apiPrefix(n config.NATS) string {
	switch {
	case n.JetStreamDomain != "":
		return "$JS." + n.JetStreamDomain + ".API."
	case n.JetStreamAPIPrefix != "":
		return strings.TrimSuffix(n.JetStreamAPIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
}

// sampleKeys renders sample object keys for s. subjects are the concrete
// subjects per filter; nil means none are known and examples are made up
// from the filters.
func (p *planner) sampleKeys(s config.Stream, subjects []subjectSample, why string) sampleKeys {
	c := p.c
	var out sampleKeys
	header := fmt.Sprintf("stream %s", s.Stream)
	if why != "" {
		header += " (" + why + ")"
	}
	ext := objectExt(c)
	render := func(subject string) string {
		dir := c.Output.PathTemplate.Dir(&pathtemplate.Values{Stream: s.Stream, Subject: subject, Consumer: s.Consumer, Time: p.now})
		key, err := pathtemplate.Key(c.S3.Prefix, dir, 1, 500, ext)
		if err != nil {
			return err.Error()
		}
		return "s3://" + c.S3.Bucket + "/" + key
	}
	if !c.Output.PathTemplate.UsesSubject() {
		out.lines = append(out.lines, header+": the template does not use the subject:", "  "+render("example"))
		return out
	}
	out.lines = append(out.lines, header+":")
	if subjects == nil {
		filters := s.Subjects
		if len(filters) == 0 {
			filters = []string{">"}
		}
		for _, f := range filters {
			subj := sampleSubject(f)
			out.lines = append(out.lines, fmt.Sprintf("  %s (example of %s)", render(subj), f))
		}
		return out
	}
	for _, ss := range subjects {
		switch {
		case !strings.ContainsAny(ss.filter, "*>"):
			out.lines = append(out.lines, "  "+render(ss.filter))
		case len(ss.subjects) == 0:
			out.lines = append(out.lines, fmt.Sprintf("  %s (example: the stream holds no subject matching %s yet)", render(sampleSubject(ss.filter)), ss.filter))
		default:
			out.lines = append(out.lines, fmt.Sprintf("  filter %s: %d %s in the stream%s", ss.filter, ss.total, plural(ss.total, "subject", "subjects"), shown(len(ss.subjects), ss.total)))
			for _, subj := range ss.subjects {
				out.lines = append(out.lines, "    "+render(subj))
			}
		}
	}
	return out
}

func shown(n, total int) string {
	if n < total {
		return fmt.Sprintf(", the first %d", n)
	}
	return ""
}

// objectExt is the extension of the connector's objects, compression
// included. Load checked the format and the compression, the only options
// ObjectType looks at.
func objectExt(c *config.Connector) string {
	ext, _, _ := formats.ObjectType(c.Output.FormatsOptions())
	return ext
}

// checkConsumer compares an existing consumer with what jetlake run needs:
// the ack policy, MaxDeliver and priority policy cannot be changed by
// jetlake and fail the plan; AckWait, MaxAckPending and the filters are
// set by jetlake on start and are reported with what they become.
func (p *planner) checkConsumer(ctx context.Context, st jetstream.Stream, key string, s config.Stream) {
	c := p.c
	name := fmt.Sprintf("stream %s, consumer %s", s.Stream, s.Consumer)
	octx, cancel := p.op(ctx)
	cons, err := st.Consumer(octx, s.Consumer)
	cancel()
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		p.add(statusOK, "%s: does not exist yet; jetlake creates it on start: AckExplicit, AckWait %s, MaxAckPending %d, MaxDeliver -1, deliver %s%s",
			name, config.FormatDuration(s.AckWait), s.MaxAckPending, s.DeliverPolicy, filterText(s.Subjects))
		return
	case errors.Is(err, jetstream.ErrNotPullConsumer):
		p.add(statusFail, "%s: a push consumer (it has a deliver subject); jetlake reads with a pull consumer: delete the consumer (jetlake re-creates it) or set %s.consumer to another name", name, key)
		return
	case err != nil:
		p.add(statusFail, "%s: %v", name, err)
		return
	}
	info := cons.CachedInfo()
	have := info.Config
	bad := false
	fail := func(format string, args ...any) {
		bad = true
		p.add(statusFail, name+": "+format, args...)
	}
	if have.AckPolicy != jetstream.AckExplicitPolicy {
		fail("AckPolicy %s; jetlake needs explicit acks (buffers are uploaded out of stream order, so an ack of one message must not ack others): "+
			"delete the consumer (jetlake re-creates it, starting at deliver_policy %q) or set %s.consumer to another name", jsonName(have.AckPolicy), s.DeliverPolicy, key)
	}
	if have.MaxDeliver > 0 {
		fail("MaxDeliver %d; jetlake needs -1 (unlimited) so an outage never ends in max-deliveries drops: "+
			"update the consumer's max_deliver to -1, or delete the consumer (jetlake re-creates it) or set %s.consumer to another name", have.MaxDeliver, key)
	}
	if have.HeadersOnly {
		fail("delivers headers only, without the message data: delete the consumer (jetlake re-creates it) or set %s.consumer to another name", key)
	}
	wantPinned := s.Failover == config.FailoverPinned
	havePinned := have.PriorityPolicy == jetstream.PriorityPolicyPinned && slices.Equal(have.PriorityGroups, []string{exporter.PriorityGroup})
	if wantPinned != havePinned || !wantPinned && (have.PriorityPolicy != jetstream.PriorityPolicyNone || len(have.PriorityGroups) > 0) {
		fail("priority policy %s with groups %v does not fit failover = %q; a priority policy cannot be changed: delete the consumer (jetlake re-creates it) or set %s.consumer to another name",
			jsonName(have.PriorityPolicy), have.PriorityGroups, s.Failover, key)
	}
	changes := 0
	switch minAck := 2 * c.Rotation.MaxFileAge; {
	case have.AckWait < minAck:
		changes++
		p.add(statusWarn, "%s: AckWait %s is less than 2 × max_file_age (%s); jetlake sets it to %s on start",
			name, config.FormatDuration(have.AckWait), config.FormatDuration(c.Rotation.MaxFileAge), config.FormatDuration(s.AckWait))
	case have.AckWait != s.AckWait:
		changes++
		p.add(statusNote, "%s: AckWait %s; jetlake sets it to %s (%s.ack_wait) on start", name, config.FormatDuration(have.AckWait), config.FormatDuration(s.AckWait), key)
	}
	perFile := c.Rotation.MaxMessagesPerFile
	switch {
	case have.MaxAckPending > 0 && perFile > 0 && have.MaxAckPending < perFile:
		changes++
		p.add(statusWarn, "%s: MaxAckPending %d is less than max_messages_per_file (%d): files would be cut at 90%% of it; jetlake sets it to %d on start",
			name, have.MaxAckPending, perFile, s.MaxAckPending)
	case have.MaxAckPending > 0 && have.MaxAckPending < s.MaxAckPending:
		changes++
		p.add(statusWarn, "%s: MaxAckPending %d is less than %d, what %s.max_ack_pending and the rotation limits ask for: the server would stop delivering sooner; jetlake sets it to %d on start",
			name, have.MaxAckPending, s.MaxAckPending, key, s.MaxAckPending)
	case have.MaxAckPending != s.MaxAckPending:
		changes++
		p.add(statusNote, "%s: MaxAckPending %d; jetlake sets it to %d on start", name, have.MaxAckPending, s.MaxAckPending)
	}
	haveFilters := have.FilterSubjects
	if have.FilterSubject != "" {
		haveFilters = []string{have.FilterSubject}
	}
	if !slices.Equal(haveFilters, s.Subjects) {
		changes++
		p.add(statusNote, "%s: filter subjects %s; jetlake sets them to %s on start", name, listOrWhole(haveFilters), listOrWhole(s.Subjects))
	}
	if wantPinned && have.PinnedTTL != s.PriorityTimeout {
		changes++
		p.add(statusNote, "%s: pinned TTL %s; jetlake sets it to %s (%s.priority_timeout) on start", name, config.FormatDuration(have.PinnedTTL), config.FormatDuration(s.PriorityTimeout), key)
	}
	if info.Paused {
		until := "further notice"
		if have.PauseUntil != nil {
			until = have.PauseUntil.UTC().Format(time.RFC3339)
		}
		p.add(statusWarn, "%s: paused until %s: nothing is delivered until it resumes", name, until)
	}
	if !bad && changes == 0 {
		p.add(statusOK, "%s: exists and fits: AckExplicit, AckWait %s, MaxAckPending %d, MaxDeliver %d; %d pending, %d unacked",
			name, config.FormatDuration(have.AckWait), have.MaxAckPending, have.MaxDeliver, info.NumPending, info.NumAckPending)
	}
}

// jsonName names a policy as the server's API and the nats CLI do ("all",
// not "AckAll").
func jsonName(p json.Marshaler) string {
	b, err := p.MarshalJSON()
	if err != nil || string(b) == `""` {
		return "none"
	}
	return strings.Trim(string(b), `"`)
}

func filterText(subjects []string) string {
	if len(subjects) == 0 {
		return ", the whole stream"
	}
	return ", filters " + strings.Join(subjects, ", ")
}

func listOrWhole(subjects []string) string {
	if len(subjects) == 0 {
		return "(none: the whole stream)"
	}
	return "[" + strings.Join(subjects, ", ") + "]"
}

func stateBucket(c *config.Connector) string {
	if c.State.Bucket != "" {
		return c.State.Bucket
	}
	return exporter.StateBucket
}

func (p *planner) checkStateBucket(ctx context.Context, js jetstream.JetStream) {
	b := stateBucket(p.c)
	octx, cancel := p.op(ctx)
	_, err := js.KeyValue(octx, b)
	cancel()
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		p.add(statusOK, "state bucket %s: does not exist yet; jetlake creates it on first start (replicas %d), which needs %sINFO and %sSTREAM.CREATE.KV_%s",
			b, max(p.c.State.Replicas, 1), apiPrefix(p.c.NATS), apiPrefix(p.c.NATS), b)
	case err != nil:
		p.add(statusFail, "state bucket %s: %v", b, err)
	default:
		p.add(statusOK, "state bucket %s: exists", b)
	}
}

// checkS3 checks the bucket, writes the probe object twice (the second
// write must be refused) and reads it back.
func (p *planner) checkS3(ctx context.Context) {
	c := p.c
	store, err := exporter.NewS3Store(c.S3)
	if err != nil {
		p.add(statusFail, "s3: %v", err)
		return
	}
	octx, cancel := p.op(ctx)
	err = store.CheckBucket(octx)
	cancel()
	if err != nil {
		p.add(statusFail, "bucket %s: %v", c.S3.Bucket, err)
		p.add(statusSkip, "probe: not written: the bucket check failed")
		return
	}
	where := "AWS S3"
	if c.S3.Endpoint != "" {
		where = c.S3.Endpoint
	}
	p.add(statusOK, "bucket %s: exists and the credentials reach it (%s, region %s)", c.S3.Bucket, where, c.S3.Region)

	key := probeKey(c)
	url := "s3://" + c.S3.Bucket + "/" + key
	body := formats.NewBody([]byte("jetlake plan probe\n"))
	opts := exporter.PutOptions{ContentType: "text/plain", IfNoneMatch: true}
	octx, cancel = p.op(ctx)
	err = store.Put(octx, key, body, opts)
	cancel()
	if err != nil {
		p.add(statusFail, "probe: cannot write %s: %v (jetlake needs s3:PutObject under %s)", url, err, resourcePrefix(c))
		return
	}
	p.add(statusOK, "probe: wrote %s", url)
	octx, cancel = p.op(ctx)
	err = store.Put(octx, key, body, opts)
	cancel()
	switch {
	case errors.Is(err, exporter.ErrExists):
		p.add(statusOK, "conditional writes: a second PUT with If-None-Match: * was refused, as it must be: objects are written exactly once")
	case err == nil:
		p.add(statusFail, "conditional writes: the store accepted a second PUT with If-None-Match: * and overwrote the probe: it ignores conditional writes. "+
			"jetlake run still works, but exactly-once holds only while this connector is the only writer under its prefix; use a store that honours If-None-Match (AWS S3, recent MinIO)")
	default:
		p.add(statusFail, "conditional writes: the second PUT failed with %v, not with 412 Precondition Failed", err)
	}
	octx, cancel = p.op(ctx)
	_, err = store.Head(octx, key)
	cancel()
	if err != nil {
		p.add(statusFail, "probe: cannot read it back: %v (jetlake needs s3:GetObject under %s to check its own objects)", err, resourcePrefix(c))
	} else {
		p.add(statusOK, "probe: read back its metadata (HEAD)")
	}
	if !p.cleanup {
		p.add(statusNote, "probe left in place; -cleanup removes it (needs s3:DeleteObject)")
		return
	}
	octx, cancel = p.op(ctx)
	err = removeObject(octx, c.S3, key)
	cancel()
	if err != nil {
		p.add(statusFail, "probe: cannot remove %s: %v (-cleanup needs s3:DeleteObject on it)", url, err)
		return
	}
	p.add(statusOK, "probe: removed")
}

// probeKey is where plan writes its probe: beside the exporter's own probes,
// outside the table folders.
func probeKey(c *config.Connector) string {
	key := string(pathtemplate.AppendEscaped([]byte(lossmarker.Dir+"/probe/"), c.Name)) + "-plan-" + nuid.Next()
	if c.S3.Prefix != "" {
		key = c.S3.Prefix + "/" + key
	}
	return key
}

// removeObject deletes the probe: the only object jetlake ever deletes,
// and only when asked to.
func removeObject(ctx context.Context, c config.S3, key string) error {
	store, err := exporter.NewS3Store(c)
	if err != nil {
		return err
	}
	return store.Delete(ctx, key)
}

// print writes the plan of the connector.
func (p *planner) print(w io.Writer) {
	c := p.c
	fmt.Fprintf(w, "connector %s (%s)\n\n", c.Name, c.File)
	fmt.Fprintln(w, "effective configuration (defaults filled in; secrets are never in the file, only the names of their variables and files):")
	for _, l := range strings.Split(strings.TrimRight(effectiveConfig(c), "\n"), "\n") {
		if l == "" {
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintln(w, "  "+l)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "sample object keys (messages of this hour; sequences are examples):\n")
	for _, s := range p.samples {
		for _, l := range s.lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "checks:")
	for _, l := range p.checks {
		fmt.Fprintf(w, "  %-4s  %s\n", l.status, l.msg)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "least-privilege S3 policy for the identity jetlake runs as (as a bucket policy, add a \"Principal\" to each statement):")
	for _, l := range strings.Split(s3Policy(c, p.cleanup), "\n") {
		fmt.Fprintln(w, "  "+l)
	}
	if c.S3.SSE == config.SSEKMS {
		fmt.Fprintln(w, "  with sse = \"kms\", the identity also needs kms:GenerateDataKey and kms:Decrypt on the KMS key")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "NATS permissions of the user jetlake connects as (nats-server authorization):")
	for _, l := range strings.Split(natsPermissions(c), "\n") {
		fmt.Fprintln(w, "  "+l)
	}
}

// effectiveConfig renders the resolved connector as TOML, every default
// filled in. Secrets are never in a connector: environment variables and
// files are shown by name, with whether they are set.
func effectiveConfig(c *config.Connector) string {
	var b strings.Builder
	kv := func(k string, v any, comment string) {
		var s string
		switch v := v.(type) {
		case string:
			s = tomlString(v)
		case time.Duration:
			s = tomlString(config.FormatDuration(v))
		case []string:
			q := make([]string, len(v))
			for i, e := range v {
				q[i] = tomlString(e)
			}
			s = "[" + strings.Join(q, ", ") + "]"
		default:
			s = fmt.Sprint(v)
		}
		if comment != "" {
			s += "  # " + comment
		}
		fmt.Fprintf(&b, "%s = %s\n", k, s)
	}
	opt := func(k, v, comment string) {
		if v != "" {
			kv(k, v, comment)
		}
	}
	kv("name", c.Name, "")
	kv("enabled", c.Enabled, "")
	kv("shutdown_timeout", c.ShutdownTimeout, "")
	kv("ready_upload_failure", c.ReadyUploadFailure, "")

	n := c.NATS
	b.WriteString("\n[nats]\n")
	kv("url", redactURLs(n.URL), "")
	opt("creds_file", n.CredsFile, fileStatus(n.CredsFile))
	opt("nkey_seed_file", n.NkeySeedFile, fileStatus(n.NkeySeedFile))
	opt("token_env", n.TokenEnv, envStatus(n.TokenEnv))
	opt("user", n.User, "")
	opt("password_env", n.PasswordEnv, envStatus(n.PasswordEnv))
	if n.CredsFile == "" && n.NkeySeedFile == "" && n.TokenEnv == "" && n.User == "" {
		b.WriteString("# no credentials: connects without authentication\n")
	}
	opt("tls_ca_file", n.TLSCAFile, fileStatus(n.TLSCAFile))
	opt("tls_cert_file", n.TLSCertFile, fileStatus(n.TLSCertFile))
	opt("tls_key_file", n.TLSKeyFile, fileStatus(n.TLSKeyFile))
	kv("tls_required", n.TLSRequired, "")
	opt("jetstream_domain", n.JetStreamDomain, "")
	opt("jetstream_api_prefix", n.JetStreamAPIPrefix, "")
	inbox := n.InboxPrefix
	if inbox == "" {
		inbox = "_INBOX"
	}
	kv("inbox_prefix", inbox, "")

	for _, s := range c.Streams {
		b.WriteString("\n[[streams]]\n")
		kv("stream", s.Stream, "")
		if len(s.Subjects) == 0 {
			kv("subjects", []string{}, "the whole stream")
		} else {
			kv("subjects", s.Subjects, "")
		}
		kv("consumer", s.Consumer, "")
		kv("deliver_policy", s.DeliverPolicy, "only when jetlake creates the consumer")
		kv("ack_wait", s.AckWait, "")
		kv("max_ack_pending", s.MaxAckPending, "")
		if s.Failover != "" {
			kv("failover", s.Failover, "")
			kv("priority_timeout", s.PriorityTimeout, "")
		}
	}

	s3 := c.S3
	b.WriteString("\n[s3]\n")
	kv("bucket", s3.Bucket, "")
	if s3.Endpoint != "" {
		kv("endpoint", redactURLs(s3.Endpoint), "")
	} else {
		b.WriteString("# endpoint: AWS S3\n")
	}
	kv("region", s3.Region, "")
	kv("prefix", s3.Prefix, "")
	kv("path_style", s3.PathStyle, "")
	if s3.AccessKeyIDEnv != "" {
		kv("access_key_id_env", s3.AccessKeyIDEnv, envStatus(s3.AccessKeyIDEnv))
		kv("secret_access_key_env", s3.SecretAccessKeyEnv, envStatus(s3.SecretAccessKeyEnv))
	} else {
		b.WriteString("# credentials: the standard chain, first that works:\n")
		fmt.Fprintf(&b, "#   AWS_ACCESS_KEY_ID (%s), AWS_SECRET_ACCESS_KEY (%s), AWS_SESSION_TOKEN (%s)\n",
			envStatus("AWS_ACCESS_KEY_ID"), envStatus("AWS_SECRET_ACCESS_KEY"), envStatus("AWS_SESSION_TOKEN"))
		fmt.Fprintf(&b, "#   MINIO_ROOT_USER (%s), MINIO_ROOT_PASSWORD (%s)\n", envStatus("MINIO_ROOT_USER"), envStatus("MINIO_ROOT_PASSWORD"))
		file := os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
		if file == "" {
			if home, err := os.UserHomeDir(); err == nil {
				file = filepath.Join(home, ".aws", "credentials")
			}
		}
		profile := os.Getenv("AWS_PROFILE")
		if profile == "" {
			profile = "default"
		}
		fmt.Fprintf(&b, "#   shared credentials file %s (%s), profile %s\n", file, fileStatus(file), profile)
		b.WriteString("#   IAM: instance, task or pod role\n")
	}
	kv("upload_concurrency", s3.UploadConcurrency, "")
	kv("allow_insecure_http", s3.AllowInsecureHTTP, "")
	opt("tls_ca_file", s3.TLSCAFile, fileStatus(s3.TLSCAFile))
	opt("sse", s3.SSE, "")
	opt("sse_kms_key_id", s3.SSEKMSKeyID, "")
	opt("storage_class", s3.StorageClass, "")

	b.WriteString("\n[state]\n")
	kv("bucket", stateBucket(c), "")
	kv("replicas", max(c.State.Replicas, 1), "")

	o := c.Output
	b.WriteString("\n[output]\n")
	kv("format", string(o.Format), "")
	kv("compression", string(o.Compression), "objects end in ."+objectExt(c))
	kv("path_template", o.PathTemplate.String(), "")
	kv("group_by", o.GroupBy, "")
	kv("include_metadata", o.IncludeMetadata, "")
	kv("include_headers", o.IncludeHeaders, "")
	if o.Format == formats.Raw {
		kv("raw_delimiter", o.RawDelimiter, "")
	}
	if o.Format == formats.Parquet {
		kv("row_group_size", config.FormatSize(o.RowGroupSize), "")
		kv("keep_payload", o.KeepPayload, "")
		kv("on_type_error", string(o.OnTypeError), "")
		for _, col := range o.Columns {
			b.WriteString("\n[[output.columns]]\n")
			kv("name", col.Name, "")
			kv("source", col.Source, "")
			kv("type", string(col.Type), "")
			opt("unit", col.Unit, "")
			kv("coerce", col.Coerce, "")
		}
	}

	r := c.Rotation
	b.WriteString("\n[rotation]\n")
	kv("max_file_size", config.FormatSize(r.MaxFileSize), "")
	kv("max_messages_per_file", r.MaxMessagesPerFile, "")
	kv("max_file_age", r.MaxFileAge, "")
	kv("max_buffered_bytes", config.FormatSize(r.MaxBufferedBytes), "")
	return b.String()
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// redactURLs hides passwords in a comma-separated list of URLs. The
// configuration rejects URLs with credentials; this is the second guard.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil {
			if strings.Contains(p, "@") {
				parts[i] = "(unparsable URL with credentials, redacted)"
			}
			continue
		}
		if u.User != nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

func envStatus(name string) string {
	v, ok := os.LookupEnv(name)
	switch {
	case !ok:
		return "not set"
	case v == "":
		return "set but empty"
	}
	return "set"
}

func fileStatus(path string) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "missing"
		}
		return "not readable"
	}
	f.Close()
	return "readable"
}

// resourcePrefix is the key prefix jetlake writes under, as an S3 ARN
// resource pattern.
func resourcePrefix(c *config.Connector) string {
	if c.S3.Prefix == "" {
		return "arn:aws:s3:::" + c.S3.Bucket + "/*"
	}
	return "arn:aws:s3:::" + c.S3.Bucket + "/" + c.S3.Prefix + "/*"
}

type policyStatement struct {
	Sid       string         `json:"Sid"`
	Effect    string         `json:"Effect"`
	Action    []string       `json:"Action"`
	Resource  string         `json:"Resource"`
	Condition map[string]any `json:"Condition,omitempty"`
}

// s3Policy is the least-privilege policy of a connector: write and read
// its objects, list its prefix. ListBucket carries the prefix as an
// IfExists condition: HeadBucket (checked at start) has no prefix, and
// without ListBucket a HEAD of a missing object answers 403, not 404.
func s3Policy(c *config.Connector, cleanup bool) string {
	sts := []policyStatement{{
		Sid: "JetlakeObjects", Effect: "Allow",
		Action:   []string{"s3:PutObject", "s3:GetObject"},
		Resource: resourcePrefix(c),
	}}
	list := policyStatement{Sid: "JetlakeList", Effect: "Allow", Action: []string{"s3:ListBucket"}, Resource: "arn:aws:s3:::" + c.S3.Bucket}
	if c.S3.Prefix != "" {
		list.Condition = map[string]any{"StringLikeIfExists": map[string][]string{"s3:prefix": {c.S3.Prefix + "/*"}}}
	}
	sts = append(sts, list)
	if cleanup {
		probes := lossmarker.Dir + "/probe/*"
		if c.S3.Prefix != "" {
			probes = c.S3.Prefix + "/" + probes
		}
		sts = append(sts, policyStatement{
			Sid: "JetlakePlanCleanup", Effect: "Allow",
			Action:   []string{"s3:DeleteObject"},
			Resource: "arn:aws:s3:::" + c.S3.Bucket + "/" + probes,
		})
	}
	doc := struct {
		Version   string            `json:"Version"`
		Statement []policyStatement `json:"Statement"`
	}{"2012-10-17", sts}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err.Error()
	}
	return strings.TrimRight(buf.String(), "\n")
}

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
	api := apiPrefix(c.NATS)
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
	kv := "KV_" + stateBucket(c)
	kvPut := "$KV." + stateBucket(c) + ".>"
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
