package main

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/exporter/plan"
	"github.com/jetlake/jetlake/lossmarker"
)

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
		Resource: plan.ResourcePrefix(c),
	}}
	list := policyStatement{Sid: "JetlakeList", Effect: "Allow", Action: []string{"s3:ListBucket"}, Resource: "arn:aws:s3:::" + c.S3.Bucket}
	if c.S3.Prefix != "" {
		list.Condition = map[string]any{"StringLikeIfExists": map[string][]string{"s3:prefix": {c.S3.Prefix + "/*"}}}
	}
	sts = append(sts, list)
	deletes := func(sid, under string) {
		if c.S3.Prefix != "" {
			under = c.S3.Prefix + "/" + under
		}
		sts = append(sts, policyStatement{Sid: sid, Effect: "Allow", Action: []string{"s3:DeleteObject"},
			Resource: "arn:aws:s3:::" + c.S3.Bucket + "/" + under})
	}
	if c.Iceberg != nil {
		// Snapshot expiry removes the manifests and replaced data files
		// only expired snapshots name, the table's commits remove
		// metadata files past write.metadata.previous-versions-max, and
		// the orphan sweep removes the files it wrote and no snapshot
		// names: all in the table's folder, and nothing elsewhere.
		deletes("JetlakeTableUpkeep", c.Iceberg.Namespace+"/"+c.Iceberg.Table+"/*")
	}
	if cleanup {
		deletes("JetlakePlanCleanup", lossmarker.Dir+"/probe/*")
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
