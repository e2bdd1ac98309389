package plan

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/content"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/internal/jsclient"
	"github.com/jetlake/jetlake/pathtemplate"
)

// subjectSample is what the stream holds of one filter.
type subjectSample struct {
	filter   string
	subjects []string // up to maxSampleSubjects, sorted
	total    int      // subjects in the stream matching filter
}

// streamSamples adds sample keys from the subjects the stream holds, or
// from messages it holds when paths depend on their content.
func (p *planner) streamSamples(ctx context.Context, nc *nats.Conn, s config.Stream) {
	if p.readsContent() && p.contentSamples(ctx, nc, s) {
		return
	}
	if !p.usesSubject() {
		p.sampleKeys(s, nil, "")
		return
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
		// One page of stream info is enough for a sample: a stream may
		// hold millions of subjects.
		octx, cancel := p.op(ctx)
		subs, total, err := jsclient.StreamSubjects(octx, nc, p.c.NATS, s.Stream, f, maxSampleSubjects)
		cancel()
		if err != nil {
			p.add(Note, "stream %s: could not list the subjects matching %s: %v", s.Stream, f, p.why(octx, err))
		}
		subjects = append(subjects, subjectSample{filter: f, subjects: subs[:min(len(subs), maxSampleSubjects)], total: total})
	}
	p.sampleKeys(s, subjects, "")
}

// sampleKeys adds sample object keys for s. subjects are the concrete
// subjects per filter; nil means none are known and examples are made up
// from the filters. why, when set, says why they are made up.
func (p *planner) sampleKeys(s config.Stream, subjects []subjectSample, why string) {
	c := p.c
	add := func(format string, args ...any) {
		p.r.Samples = append(p.r.Samples, fmt.Sprintf(format, args...))
	}
	header := fmt.Sprintf("stream %s", s.Stream)
	if why != "" {
		header += " (" + why + ")"
	}
	render := func(subject string) string {
		var key string
		var err error
		if c.Iceberg != nil {
			key, err = iceberg.DataKey(c, s.Stream, subject, p.o.Now, 1, 500)
		} else {
			dir := c.Output.PathTemplate.Dir(&pathtemplate.Values{Stream: s.Stream, Subject: subject, Consumer: s.Consumer, Time: p.o.Now})
			key, err = pathtemplate.Key(c.S3.Prefix, dir, 1, 500, c.Output.Ext())
		}
		if err != nil {
			return err.Error()
		}
		return "s3://" + c.S3.Bucket + "/" + key
	}
	if !p.usesSubject() {
		what := "the template does not use the subject"
		if c.Iceberg != nil {
			what = "the table is not partitioned by subject"
		}
		add("%s: %s:", header, what)
		add("  %s", render("example"))
		return
	}
	add("%s:", header)
	if subjects == nil {
		filters := s.Subjects
		if len(filters) == 0 {
			filters = []string{">"}
		}
		for _, f := range filters {
			add("  %s (example of %s)", render(config.ExampleSubject(f)), f)
		}
		return
	}
	for _, ss := range subjects {
		switch {
		case !strings.ContainsAny(ss.filter, "*>"):
			add("  %s", render(ss.filter))
		case len(ss.subjects) == 0:
			add("  %s (example: the stream holds no subject matching %s yet)", render(config.ExampleSubject(ss.filter)), ss.filter)
		default:
			add("  filter %s: %d %s in the stream%s", ss.filter, ss.total, plural(ss.total, "subject", "subjects"), shown(len(ss.subjects), ss.total))
			for _, subj := range ss.subjects {
				add("    %s", render(subj))
			}
		}
	}
}

func shown(n, total int) string {
	if n < total {
		return fmt.Sprintf(", the first %d", n)
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// usesSubject reports whether the subject names a folder of the keys: in
// the path template, or for an Iceberg table, in its partitioning.
func (p *planner) usesSubject() bool {
	if ib := p.c.Iceberg; ib != nil {
		for _, part := range ib.Partitioning {
			if part.Column == "subject" {
				return true
			}
		}
		return false
	}
	return p.c.Output.PathTemplate.UsesSubject()
}

// contentSamples adds the keys of messages the stream holds, the oldest and
// newest of each filter, rendered as run renders them: with their event
// time, typed columns and headers. It reports false when it has none to
// show, and the samples are then made up as for other templates.
func (p *planner) contentSamples(ctx context.Context, nc *nats.Conn, s config.Stream) bool {
	octx, cancel := p.op(ctx)
	msgs, err := jsclient.SampleMessages(octx, nc, p.c.NATS, s.Stream, s.Subjects)
	cancel()
	if err != nil {
		p.add(Note, "stream %s: could not read messages for sample keys: %v", s.Stream, p.why(octx, err))
	}
	if len(msgs) == 0 {
		return false
	}
	reader, err := content.New(&p.c.Output, p.c.Iceberg != nil)
	if err != nil {
		p.add(Fail, "stream %s: %v", s.Stream, err)
		return false
	}
	c := p.c
	p.r.Samples = append(p.r.Samples, fmt.Sprintf("stream %s (messages it holds: the oldest and newest of each filter):", s.Stream))
	for _, m := range msgs {
		v := pathtemplate.Values{Stream: s.Stream, Subject: m.Subject, Consumer: s.Consumer}
		fellBack, err := reader.Read(m.Data, m.Header, m.Time, &v)
		var line string
		switch {
		case err != nil:
			// The reason quotes the payload, personal data maybe:
			// only when asked for.
			why := content.Redacted(err)
			if p.o.ShowPayloads {
				why = err.Error()
			}
			line = fmt.Sprintf("sequence %d: rejected, to s3://%s/%s: %s", m.Seq, c.S3.Bucket, pathtemplate.KindPrefix(c.S3.Prefix, pathtemplate.Rejected), why)
		default:
			var key string
			var kerr error
			if c.Iceberg != nil {
				key, kerr = iceberg.DataKeyOf(c, s.Stream, m.Subject, m.Time, m.Seq, m.Seq, reader.Values())
			} else {
				key, kerr = pathtemplate.Key(c.S3.Prefix, c.Output.PathTemplate.Dir(&v), m.Seq, m.Seq, c.Output.Ext())
			}
			if kerr != nil {
				line = fmt.Sprintf("sequence %d: %v", m.Seq, kerr)
				break
			}
			line = fmt.Sprintf("s3://%s/%s (sequence %d", c.S3.Bucket, key, m.Seq)
			if fellBack {
				line += ": no event time, filed by its JetStream timestamp"
			}
			line += ")"
		}
		p.r.Samples = append(p.r.Samples, "  "+line)
	}
	return true
}

// readsContent reports whether keys depend on the messages' content: an
// event time or a payload field or header in the path template, or a table
// partition over a typed column.
func (p *planner) readsContent() bool {
	if p.c.Iceberg != nil {
		return p.c.Iceberg.ReadsPayload()
	}
	return p.c.Output.UsesContent()
}
