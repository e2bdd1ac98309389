package main

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/plan"
)

type policyStatement struct {
	Sid       string         `json:"Sid"`
	Effect    string         `json:"Effect"`
	Action    []string       `json:"Action"`
	Resource  string         `json:"Resource"`
	Condition map[string]any `json:"Condition,omitempty"`
}

// s3Policy is the least-privilege policy of a connector: write and read
// its objects, list its prefix. ListBucket carries the prefix as a
// ForAllValues:StringLike condition, which a request without a prefix
// passes as well: HeadBucket (checked at start) has none, and without
// ListBucket a HEAD of a missing object answers 403, not 404. AWS reads
// StringLikeIfExists alike, but MinIO refuses to load a policy that
// names it.
func s3Policy(c *config.Connector, cleanup bool) string {
	sts := []policyStatement{{
		Sid: "JetlakeObjects", Effect: "Allow",
		Action:   []string{"s3:PutObject", "s3:GetObject"},
		Resource: plan.ResourcePrefix(c),
	}}
	list := policyStatement{Sid: "JetlakeList", Effect: "Allow", Action: []string{"s3:ListBucket"}, Resource: "arn:aws:s3:::" + c.S3.Bucket}
	if c.S3.Prefix != "" {
		list.Condition = map[string]any{"ForAllValues:StringLike": map[string][]string{"s3:prefix": {c.S3.Prefix + "/*"}}}
	}
	sts = append(sts, list)
	deletes := func(sid, resource string) {
		sts = append(sts, policyStatement{Sid: sid, Effect: "Allow", Action: []string{"s3:DeleteObject"}, Resource: resource})
	}
	if c.Iceberg != nil {
		// Snapshot expiry removes the manifests and replaced data files
		// only expired snapshots name, the table's commits remove
		// metadata files past write.metadata.previous-versions-max, and
		// the orphan sweep removes the files it wrote and no snapshot
		// names: all in the table's folder, and nothing elsewhere.
		deletes("JetlakeTableUpkeep", strings.TrimSuffix(plan.ResourcePrefix(c), "*")+c.Iceberg.Namespace+"/"+c.Iceberg.Table+"/*")
	}
	if cleanup {
		deletes("JetlakePlanCleanup", plan.ProbeResource(c))
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
