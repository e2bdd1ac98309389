package config

import (
	"fmt"
	"strings"

	"github.com/jetlake/jetlake/lossmarker"
)

// placedConnector is a connector that loaded without problems, with the
// lines of its file, for the problems that span connectors.
type placedConnector struct {
	conn  *Connector
	lines *lineIndex
}

// at returns "FILE:LINE" of key in the connector's file.
func (pc placedConnector) at(key keyPath) string {
	return fmt.Sprintf("%s:%d", pc.conn.File, pc.lines.line(key))
}

// tableFolder returns the object key folder of the connector's Iceberg
// table, <prefix>/<namespace>/<table> (without a trailing '/'), or "" for a
// connector without [iceberg].
func (c *Connector) tableFolder() string {
	if c.Iceberg == nil {
		return ""
	}
	return joinKey(c.S3.Prefix, c.Iceberg.Namespace+"/"+c.Iceberg.Table)
}

func joinKey(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "/" + key
}

// within reports whether the folder key lies in the folder dir, or is it.
func within(key, dir string) bool {
	return key == dir || strings.HasPrefix(key, dir+"/")
}

// writeRoot is a folder a connector writes objects under.
type writeRoot struct {
	folder string
	key    keyPath // the key that places it, for the problem
	what   string  // what the connector keeps there, for the problem
}

// roots lists the folders a connector writes under: its whole prefix for
// bare objects; its table's folder and its loss markers' folder with
// [iceberg].
func (c *Connector) roots() []writeRoot {
	prefix := keyPath{}.key("s3").key("prefix")
	if c.Iceberg == nil {
		return []writeRoot{{c.S3.Prefix, prefix, "its objects"}}
	}
	return []writeRoot{
		{c.tableFolder(), keyPath{}.key("iceberg").key("table"), "its table " + c.Iceberg.Namespace + "." + c.Iceberg.Table + "'s files"},
		{joinKey(c.S3.Prefix, lossmarker.Dir), prefix, "its loss markers"},
	}
}

// overlaps reports connectors that would write into the folder of another
// connector's Iceberg table: two connectors committing one table would
// each take the other's files for its own (or for orphans to remove), and
// objects written into a table's folder by another connector mix with its
// data files and metadata. Each problem is reported once, in the file of
// the connector that loads later, and names the other connector.
func overlaps(conns []placedConnector) Errors {
	var probs Errors
	for i, x := range conns {
		for j, y := range conns {
			if i == j || y.conn.Iceberg == nil || x.conn.S3.Bucket != y.conn.S3.Bucket {
				continue
			}
			table := y.conn.tableFolder()
			for _, r := range x.conn.roots() {
				if !within(r.folder, table) {
					continue
				}
				same := x.conn.Iceberg != nil && r.folder == table && r.key.String() == "iceberg.table"
				if same && j > i {
					continue // reported in y's file
				}
				if r.folder == "" {
					continue // an empty prefix is in no table's folder
				}
				other := fmt.Sprintf("the Iceberg table %s.%s of connector %q (%s)",
					y.conn.Iceberg.Namespace, y.conn.Iceberg.Table, y.conn.Name, y.at(keyPath{}.key("iceberg").key("table")))
				fix := "choose an [s3] prefix outside it"
				if r.key.String() == "iceberg.table" {
					fix = "choose another [s3] prefix, or another [iceberg] namespace or table"
				}
				msg := fmt.Sprintf("connector %q puts %s at s3://%s/%s/, inside the folder of %s, s3://%s/%s/, where they would mix with that table's data and metadata files; %s",
					x.conn.Name, r.what, x.conn.S3.Bucket, r.folder, other, y.conn.S3.Bucket, table, fix)
				if same {
					msg = fmt.Sprintf("connector %q writes its table at s3://%s/%s/, which is also %s: two connectors writing one table would commit over each other's snapshots and take each other's files for orphans; give one of them another [iceberg] table or namespace, or another [s3] prefix or bucket",
						x.conn.Name, x.conn.S3.Bucket, table, other)
				}
				probs = append(probs, &Problem{File: x.conn.File, Line: x.lines.line(r.key), Key: r.key.String(), Msg: msg})
				break // one problem for each pair
			}
		}
	}
	return probs
}

// inside reports whether the folder key lies in the folder dir, or is it;
// every folder lies in the empty prefix, the whole bucket.
func inside(key, dir string) bool {
	return dir == "" || within(key, dir)
}

// nested reports connectors that write under the prefix of a connector of
// bare objects (one without [iceberg]) on the same bucket, or share it:
// its path template puts objects in folders its messages' values name, so
// a publisher could aim them at the other connector's objects, loss markers
// or table, and verify of either would read the other's objects as its
// own. Each problem is reported once, in the file of the connector inside
// (of the one that loads later when the two share a prefix), and names the
// other connector.
func nested(conns []placedConnector) Errors {
	var probs Errors
	prefix := keyPath{}.key("s3").key("prefix")
	for i, x := range conns {
		for j, y := range conns {
			if i == j || y.conn.Iceberg != nil || x.conn.S3.Bucket != y.conn.S3.Bucket || !inside(x.conn.S3.Prefix, y.conn.S3.Prefix) {
				continue
			}
			if x.conn.S3.Prefix == y.conn.S3.Prefix && x.conn.Iceberg == nil && j > i {
				continue // reported in y's file
			}
			msg := fmt.Sprintf("connector %q writes under s3://%s/%s, inside the prefix of connector %q (%s), s3://%s/%s, whose folders its messages name: one connector's messages could write among the other's objects, and verify would read them as its own; give each connector a prefix outside the other's",
				x.conn.Name, x.conn.S3.Bucket, folderText(x.conn.S3.Prefix), y.conn.Name, y.at(prefix), y.conn.S3.Bucket, folderText(y.conn.S3.Prefix))
			if x.conn.S3.Prefix == y.conn.S3.Prefix {
				msg = fmt.Sprintf("connector %q writes under s3://%s/%s, the prefix of connector %q (%s) too: each would take the other's objects and loss markers for its own; give each connector a prefix of its own",
					x.conn.Name, x.conn.S3.Bucket, folderText(x.conn.S3.Prefix), y.conn.Name, y.at(prefix))
			}
			probs = append(probs, &Problem{File: x.conn.File, Line: x.lines.line(prefix), Key: prefix.String(), Msg: msg})
		}
	}
	return probs
}

// folderText writes a prefix as a folder: "lake/", or "" for the whole
// bucket.
func folderText(prefix string) string {
	if prefix == "" {
		return ""
	}
	return prefix + "/"
}
