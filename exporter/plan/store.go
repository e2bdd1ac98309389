package plan

import (
	"context"
	"errors"
	"strings"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/objstore"
	"github.com/jetlake/jetlake/pathtemplate"
)

// checkS3 checks the bucket, probes conditional writes (objstore.Probe)
// and reads the probe back.
func (p *planner) checkS3(ctx context.Context) {
	c := p.c
	store, err := objstore.NewS3Store(c.S3)
	if err != nil {
		p.add(Fail, "s3: %v", err)
		return
	}
	octx, cancel := p.op(ctx)
	err = store.CheckBucket(octx)
	cancel()
	if err != nil {
		p.add(Fail, "bucket %s: %v", c.S3.Bucket, err)
		p.add(Skip, "probe: not written: the bucket check failed")
		return
	}
	where := "AWS S3"
	if c.S3.Endpoint != "" {
		where = c.S3.Endpoint
	}
	p.add(OK, "bucket %s: exists and the credentials reach it (%s, region %s)", c.S3.Bucket, where, c.S3.Region)

	key := objstore.ProbeKey(c, "plan")
	url := "s3://" + c.S3.Bucket + "/" + key
	conditional, err := objstore.Probe(ctx, store, key, func(ctx context.Context, write func(context.Context) error) error {
		octx, cancel := p.op(ctx)
		defer cancel()
		return write(octx)
	})
	var pe *objstore.ProbeError
	if errors.As(err, &pe) && !pe.Second {
		p.add(Fail, "probe: cannot write %s: %v (jetlake needs s3:PutObject under %s)", url, pe.Err, ResourcePrefix(c))
		return
	}
	p.add(OK, "probe: wrote %s", url)
	switch {
	case pe != nil:
		p.add(Fail, "conditional writes: the second PUT failed with %v, not with 412 Precondition Failed", pe.Err)
	case conditional:
		p.add(OK, "conditional writes: a second PUT with If-None-Match: * was refused, as it must be: objects are written exactly once")
	default:
		p.add(Fail, "conditional writes: the store accepted a second PUT with If-None-Match: * and overwrote the probe: it ignores conditional writes. "+
			"jetlake run still works, but exactly-once holds only while this connector is the only writer under its prefix; use a store that honours If-None-Match (AWS S3, recent MinIO)")
	}
	octx, cancel = p.op(ctx)
	_, err = store.Head(octx, key)
	cancel()
	if err != nil {
		p.add(Fail, "probe: cannot read it back: %v (jetlake needs s3:GetObject under %s to check its own objects)", err, ResourcePrefix(c))
	} else {
		p.add(OK, "probe: read back its metadata (HEAD)")
	}
	if !p.o.Cleanup {
		p.add(Note, "probe left in place; -cleanup removes it (needs s3:DeleteObject)")
		return
	}
	octx, cancel = p.op(ctx)
	err = store.Delete(octx, key)
	cancel()
	if err != nil {
		p.add(Fail, "probe: cannot remove %s: %v (-cleanup needs s3:DeleteObject on %s: add the statement plan -cleanup prints)", url, err, ProbeResource(c))
		return
	}
	p.add(OK, "probe: removed")
}

// ProbeResource is where plan and run write their probes, as an S3 ARN
// resource pattern: plan -cleanup removes its probe there.
func ProbeResource(c *config.Connector) string {
	return strings.TrimSuffix(ResourcePrefix(c), "*") + pathtemplate.KindPrefix("", pathtemplate.Probe) + "*"
}

// ResourcePrefix is the key prefix jetlake writes under, as an S3 ARN
// resource pattern.
func ResourcePrefix(c *config.Connector) string {
	if c.S3.Prefix == "" {
		return "arn:aws:s3:::" + c.S3.Bucket + "/*"
	}
	return "arn:aws:s3:::" + c.S3.Bucket + "/" + c.S3.Prefix + "/*"
}
