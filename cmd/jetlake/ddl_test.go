package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
	fmts "github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ddl")

// ddlConnector is a connector file with the given [output] settings and
// path template; extra is appended as it is.
func ddlConnector(output, template, extra string) string {
	return fmt.Sprintf(`name = "events"

[nats]
url = "nats://127.0.0.1:4222"

[[streams]]
stream = "EVENTS"
subjects = ["events.>"]

[s3]
bucket = "lake"
endpoint = "http://127.0.0.1:9000"
prefix = "raw"

[output]
path_template = %q
%s
%s`, template, output, extra)
}

// runDDL runs jetlake ddl in-process: it needs no network.
func runDDL(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(append([]string{"ddl"}, args...), &o, &e)
	return code, o.String(), e.String()
}

// wantDDLGolden compares ddl's output with testdata/ddl/<name>.sql, or
// writes it there with -update.
func wantDDLGolden(t *testing.T, name, out string) {
	t.Helper()
	golden := filepath.Join("testdata", "ddl", name+".sql")
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/jetlake -run DDL -update)", err)
	}
	if out != string(want) {
		t.Errorf("output differs from %s (go test ./cmd/jetlake -run DDL -update rewrites it):\n--- got\n%s--- want\n%s", golden, out, want)
	}
}

func TestDDLGolden(t *testing.T) {
	formats := []struct{ name, output string }{
		{"json_lines", `format = "json_lines"`},
		{"json_lines_gzip", "format = \"json_lines\"\ncompression = \"gzip\"\ninclude_headers = true"},
		{"parquet", `format = "parquet"`},
		{"parquet_typed", `format = "parquet"
compression = "zstd"
include_headers = true
keep_payload = false

[[output.columns]]
name = "user_id"
source = "user.id"
type = "int64"

[[output.columns]]
name = "qty"
source = "qty"
type = "int32"

[[output.columns]]
name = "amount"
source = "amount"
type = "double"

[[output.columns]]
name = "paid"
source = "paid"
type = "boolean"

[[output.columns]]
name = "created_at"
source = "created_at"
type = "timestamp"
unit = "ms"

[[output.columns]]
name = "day"
source = "ship.day"
type = "date"

[[output.columns]]
name = "order"
source = "order"
type = "string"

[[output.columns]]
name = "attrs"
source = "attrs"
type = "json"`},
	}
	templates := []struct{ name, template string }{
		{"default", "{stream}/{subject}/{date}/{hour}"},
		{"hive", "{stream}/date={date}/hour={hour}"},
		{"ymd", "{year}/{month}/{day}"},
	}
	for _, f := range formats {
		for _, tm := range templates {
			path := writeFile(t, f.name+"-"+tm.name+".toml", ddlConnector(f.output, tm.template, ""))
			for _, engine := range []string{engineAthena, engineTrino} {
				name := f.name + "." + tm.name + "." + engine
				t.Run(name, func(t *testing.T) {
					code, out, errOut := runDDL(t, "-config", path, "-engine", engine)
					if code != 0 {
						t.Fatalf("exit %d: %s", code, errOut)
					}
					wantDDLGolden(t, name, out)
				})
			}
		}
	}
}

func TestDDLRefusesFormatsNoTableReads(t *testing.T) {
	for _, tt := range []struct{ output, want string }{
		{`format = "json_array"`, "format json_array writes one JSON array per object, which Athena and Trino cannot read as rows"},
		{"format = \"raw\"\nraw_delimiter = \"\\n\"", "format raw writes the payload bytes with no record structure"},
		{"format = \"json_lines\"\ninclude_metadata = false", "include_metadata = false: each record is the payload alone"},
	} {
		path := writeFile(t, "c.toml", ddlConnector(tt.output, "{stream}/{date}", ""))
		for _, engine := range []string{engineAthena, engineTrino} {
			code, out, errOut := runDDL(t, "-config", path, "-engine", engine)
			if code != 1 || out != "" || !strings.Contains(errOut, tt.want) {
				t.Errorf("%s, %s: exit %d, stdout %q, stderr %q; want exit 1 and %q", tt.output, engine, code, out, errOut, tt.want)
			}
		}
	}
}

// For an Iceberg table ddl says how each engine reads it from its catalog:
// Trino through a catalog file for PostgreSQL, REST and Glue, or
// register_table for an embedded sqlite catalog; Athena from Glue alone.
func TestDDLSaysHowEachEngineReadsAnIcebergTable(t *testing.T) {
	for _, tt := range []struct {
		name, iceberg, engine string
		code                  int
		want                  []string
	}{
		{"postgres", "uri = \"postgres://jetlake@db:5432/lake?sslmode=verify-full\"", engineTrino, 0, []string{
			"--   iceberg.catalog.type=jdbc\n", "--   iceberg.jdbc-catalog.connection-url=jdbc:postgresql://db:5432/lake?sslmode=verify-full\n",
			"--   iceberg.jdbc-catalog.connection-user=jetlake\n", "--   iceberg.jdbc-catalog.catalog-name=events\n",
			"--   iceberg.jdbc-catalog.default-warehouse-dir=s3://lake/raw\n", "FROM iceberg.jetlake.events\n"}},
		{"sqlite", "uri = \"sqlite:///tmp/c.db\"", engineTrino, 0, []string{
			"CALL iceberg.system.register_table(schema_name => 'jetlake', table_name => 'events', table_location => 's3://lake/raw/jetlake/events');\n",
			"note: register_table points Trino at the table's newest metadata file"}},
		{"rest", "catalog = \"rest\"\nuri = \"https://cat.example.com/api\"\nwarehouse = \"w\"\ntoken_env = \"CAT_TOKEN\"", engineTrino, 0, []string{
			"--   iceberg.catalog.type=rest\n", "--   iceberg.rest-catalog.uri=https://cat.example.com/api\n",
			"--   iceberg.rest-catalog.warehouse=w\n", "--   iceberg.rest-catalog.oauth2.token=${ENV:CAT_TOKEN}\n"}},
		{"glue-trino", "catalog = \"glue\"\nregion = \"eu-west-1\"", engineTrino, 0, []string{
			"--   iceberg.catalog.type=glue\n", "--   hive.metastore.glue.region=eu-west-1\n"}},
		{"glue-athena", "catalog = \"glue\"\nregion = \"eu-west-1\"", engineAthena, 0, []string{
			"-- Athena already sees the Iceberg table jetlake.events", "FROM \"jetlake\".\"events\"\n"}},
		{"sqlite-athena", "uri = \"sqlite:///tmp/c.db\"", engineAthena, 1, []string{
			"Athena reads Iceberg tables from the AWS Glue Data Catalog only: set catalog = \"glue\""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := strings.Replace(ddlConnector(`format = "parquet"`, "{stream}/{date}", "[iceberg]\n"+tt.iceberg+"\n"), "path_template = \"{stream}/{date}\"\n", "", 1)
			path := writeFile(t, "c.toml", c)
			code, out, errOut := runDDL(t, "-config", path, "-engine", tt.engine)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errOut)
				}
			}
		})
	}
}

func TestDDLExplainsTemplatesThatCannotBeProjected(t *testing.T) {
	for _, tt := range []struct{ template, want string }{
		{"{stream}/dt-{date}", `segment "dt-{date}" mixes a variable with other text, so it cannot be projected`},
		{"{year}{month}", `segment "{year}{month}" mixes a variable with other text`},
		{"{stream}/a=b={date}", `segment "a=b={date}" mixes a variable`},
		{"{stream}/9x={date}", `the key "9x" is not a column name`},
	} {
		path := writeFile(t, "c.toml", ddlConnector(`format = "parquet"`, tt.template, ""))
		code, _, errOut := runDDL(t, "-config", path, "-engine", engineAthena)
		if code != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and %q", tt.template, code, errOut, tt.want)
		}
	}
}

func TestDDLUsageErrorsExit2(t *testing.T) {
	path := writeFile(t, "c.toml", ddlConnector(`format = "parquet"`, "{stream}/{date}", ""))
	bad := writeFile(t, "bad.toml", "name = \"x\"\n")
	for _, args := range [][]string{
		{"-config", path},
		{"-config", path, "-engine", "hive"},
		{"-engine", "athena"},
		{"-config", bad, "-engine", "athena"},
		{"-config", path, "-engine", "athena", "-since", "2020/01/01"},
		{"-config", path, "-engine", "athena", "-table", "my-table"},
		{"-config", path, "-engine", "athena", "-location", "lake/raw"},
		{"-config", path, "-engine", "athena", "extra"},
	} {
		if code, _, _ := runDDL(t, args...); code != 2 {
			t.Errorf("jetlake ddl %q: exit %d, want 2", args, code)
		}
	}
}

func TestDDLTableLocationAndSince(t *testing.T) {
	path := writeFile(t, "c.toml", ddlConnector(`format = "parquet"`, "{stream}/{date}", ""))
	code, out, errOut := runDDL(t, "-config", path, "-engine", engineAthena, "-table", "analytics.nats_events",
		"-location", "s3://lake-alias/raw", "-since", "2026-01-01")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"CREATE EXTERNAL TABLE IF NOT EXISTS analytics.nats_events (",
		"LOCATION 's3://lake-alias/raw/'",
		"'projection.date.range' = '2026-01-01,NOW'",
		"'storage.location.template' = 's3://lake-alias/raw/${path_stream}/${date}/'",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestDDLDirectoryPrintsEveryConnectorAndFailsForTheUnreadable(t *testing.T) {
	dir := t.TempDir()
	a := strings.Replace(ddlConnector(`format = "parquet"`, "{stream}/{date}", ""), `name = "events"`, `name = "a-parquet"`, 1)
	b := strings.Replace(ddlConnector(`format = "json_array"`, "{stream}/{date}", ""), `name = "events"`, `name = "b-array"`, 1)
	b = strings.Replace(b, `prefix = "raw"`, `prefix = "array"`, 1) // a prefix of its own
	for name, body := range map[string]string{"a.toml": a, "b.toml": b} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runDDL(t, "-config", dir, "-engine", engineTrino)
	if code != 1 || !strings.Contains(out, "CREATE TABLE IF NOT EXISTS a_parquet (") || !strings.Contains(errOut, "connector b-array: format json_array") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, _ := runDDL(t, "-config", dir, "-engine", engineTrino, "-table", "t"); code != 2 {
		t.Fatalf("-table with two connectors: exit %d, want 2", code)
	}
}

func TestTableLayout(t *testing.T) {
	since := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name     string
		template string
		streams  []config.Stream
		dataCols []string
		want     string // columns as name:proj[values], then the template
	}{
		{
			name:     "literal filters make subject an enum, escaped as in keys",
			template: "{subject}/{hour}",
			streams:  []config.Stream{{Stream: "S", Consumer: "c", Subjects: []string{"a.b", "a.ü"}}},
			dataCols: []string{"subject"},
			want:     "path_subject:enum[a.b a.%C3%BC] hour:integer[0-23] | ${path_subject}/${hour}/",
		},
		{
			name:     "a wildcard or a whole stream makes subject injected",
			template: "{subject}",
			streams:  []config.Stream{{Stream: "S", Subjects: []string{"a.b"}}, {Stream: "T"}},
			want:     "subject:injected[] | ${subject}/",
		},
		{
			name:     "subject tokens are known up to the first wildcard",
			template: "{subject:2}/{subject:3}/{subject:4}",
			streams:  []config.Stream{{Stream: "S", Subjects: []string{"orders.eu.*", "orders.us.created"}}},
			want:     "subject_2:enum[eu us] subject_3:injected[] subject_4:enum[%00] | ${subject_2}/${subject_3}/${subject_4}/",
		},
		{
			name:     "hive keys name the columns, a repeated variable reuses its column",
			template: "lake/Dt={date}/{consumer}/h={hour}/again={date}",
			streams:  []config.Stream{{Stream: "S", Consumer: "c-1"}, {Stream: "T", Consumer: "c-2"}},
			want:     "dt:date[] consumer:enum[c-1 c-2] h:integer[0-23] | lake/Dt=${dt}/${consumer}/h=${h}/again=${dt}/",
		},
		{
			name:     "a template without variables is a fixed folder",
			template: "exports/all",
			streams:  []config.Stream{{Stream: "S"}},
			want:     "fixed exports/all/",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &config.Connector{Streams: tt.streams}
			tpl, err := pathtemplate.Parse(tt.template)
			if err != nil {
				t.Fatal(err)
			}
			c.Output.PathTemplate = tpl
			l, err := tableLayout(c, tt.dataCols, since)
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, p := range l.parts {
				s := p.name + ":" + p.proj
				switch p.proj {
				case projInteger:
					s += fmt.Sprintf("[%d-%d]", p.lo, p.hi)
				default:
					s += "[" + strings.Join(p.values, " ") + "]"
				}
				parts = append(parts, s)
			}
			got := strings.Join(parts, " ") + " | " + l.template
			if l.fixed != "" {
				got = "fixed " + l.fixed
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestTakenPartitionColumnsSayWhoTookThem(t *testing.T) {
	since := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		template string
		typed    []string
		want     string
	}{
		{"{stream}/{date}", []string{"path_stream"}, `partition column "path_stream" is already the typed column "path_stream"; rename it in [[output.columns]], or write the segment as key={...} with another key`},
		{"d={date}/path_d={hour}/d={minute}", nil, `partition column "path_d" is already the partition of segment "path_d={hour}"`},
		{"payload={date}", nil, `partition column "path_payload" is already the data column "path_payload"`},
	} {
		c := &config.Connector{Streams: []config.Stream{{Stream: "S"}}}
		c.Output.Format = fmts.Parquet // the format that writes typed columns
		c.Output.PathTemplate = pathtemplate.MustParse(tt.template)
		data := []string{"stream", "payload", "path_payload"}
		for _, n := range tt.typed {
			c.Output.Columns = append(c.Output.Columns, config.Column{Name: n})
			data = append(data, n)
		}
		_, err := tableLayout(c, data, since)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v\nwant an error saying %s", tt.template, err, tt.want)
		}
	}
}

// TestDDLProjectsContentPartitions: {column:<name>} and {header:<Name>}
// are injected partitions, the event time's date a date projection, and
// the notes say both.
func TestDDLProjectsContentPartitions(t *testing.T) {
	path := writeFile(t, "content.toml", ddlConnector(`format = "json_lines"
time_source = "column:created_at"
timezone = "Europe/Berlin"

[[output.columns]]
name = "created_at"
source = "created_at"
type = "timestamp"

[[output.columns]]
name = "tenant"
source = "tenant"
type = "string"`, "{stream}/dt={date}/tenant={column:tenant}/{header:X-Region}", ""))
	for _, engine := range []string{engineAthena, engineTrino} {
		t.Run(engine, func(t *testing.T) {
			code, out, errOut := runDDL(t, "-config", path, "-engine", engine)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			wantDDLGolden(t, "json_lines.content."+engine, out)
			for _, note := range []string{"partition tenant is injected", "partition x_region is injected", "hold the event time (time_source column:created_at, rendered in Europe/Berlin)"} {
				if !strings.Contains(errOut, note) {
					t.Errorf("the notes do not say %q:\n%s", note, errOut)
				}
			}
		})
	}
}
