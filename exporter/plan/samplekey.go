package plan

import (
	"time"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/iceberg"
	"github.com/jetlake/jetlake/pathtemplate"
)

// SampleKey is the key of a first file of stream s at now, for the summary
// jetlake validate prints without connecting anywhere: a data file in its
// partition folder for a connector with [iceberg], an object under the
// path template otherwise. Its subject is an example of the stream's
// first filter.
func SampleKey(c *config.Connector, s config.Stream, now time.Time) (string, error) {
	subject := "example"
	if len(s.Subjects) > 0 {
		subject = config.ExampleSubject(s.Subjects[0])
	}
	if c.Iceberg != nil {
		return iceberg.DataKey(c, s.Stream, subject, now, 1, 500)
	}
	dir := c.Output.PathTemplate.Dir(&pathtemplate.Values{Stream: s.Stream, Subject: subject, Consumer: s.Consumer, Time: now})
	return pathtemplate.Key(c.S3.Prefix, dir, 1, 500, c.Output.Ext())
}
