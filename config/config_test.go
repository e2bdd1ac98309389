package config

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jetlake/jetlake/formats"
	"github.com/jetlake/jetlake/pathtemplate"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/*.bad cases, and the key tables of docs/configuration.md")

// Every testdata/*.bad.toml file, and every testdata/*.bad directory, has a
// sibling *.bad.txt with the exact error Load returns for it.
func TestLoadReportsEveryProblemExactly(t *testing.T) {
	cases, err := filepath.Glob("testdata/*.bad*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range cases {
		if strings.HasSuffix(path, ".txt") {
			continue
		}
		n++
		want := strings.TrimSuffix(path, ".toml") + ".txt"
		t.Run(filepath.Base(path), func(t *testing.T) {
			conns, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%q) = %d connectors, want an error", path, len(conns))
			}
			var probs Errors
			if !errors.As(err, &probs) {
				t.Fatalf("Load(%q) error is %T, want Errors: %v", path, err, err)
			}
			got := err.Error() + "\n"
			if *update {
				if err := os.WriteFile(want, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			b, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(b) {
				t.Errorf("Load(%q) error:\n%s\nwant (%s):\n%s", path, got, want, b)
			}
		})
	}
	if n == 0 {
		t.Fatal("no testdata/*.bad cases")
	}
}

func TestLoadAcceptsGoodFiles(t *testing.T) {
	cases, err := filepath.Glob("testdata/*.good*")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no testdata/*.good cases")
	}
	for _, path := range cases {
		t.Run(filepath.Base(path), func(t *testing.T) {
			conns, err := Load(path)
			if err != nil {
				t.Fatalf("Load(%q): %v", path, err)
			}
			for _, c := range conns {
				checkResolved(t, c)
			}
		})
	}
}

// checkResolved checks what every loaded connector guarantees, whatever its
// file said.
func checkResolved(t *testing.T, c *Connector) {
	t.Helper()
	switch {
	case c.Name == "" || c.NATS.URL == "" || c.S3.Bucket == "" || c.S3.Region == "":
		t.Errorf("%s: required setting left empty: %+v", c.File, c)
	case c.ShutdownTimeout <= 0 || c.S3.UploadConcurrency < 1:
		t.Errorf("%s: default not filled in: %+v", c.File, c)
	case c.Output.Format == "" || c.Output.GroupBy == "" || c.Output.PathTemplate == nil || c.Output.Compression == "" || c.Output.OnTypeError == "":
		t.Errorf("%s: output default not filled in: %+v", c.File, c.Output)
	case (c.Output.Format == formats.Parquet) != (c.Output.RowGroupSize > 0):
		t.Errorf("%s: row group size %d for format %s", c.File, c.Output.RowGroupSize, c.Output.Format)
	case c.Output.Format != formats.Parquet && (len(c.Output.Columns) > 0 || !c.Output.KeepPayload):
		t.Errorf("%s: parquet settings for format %s: %+v", c.File, c.Output.Format, c.Output)
	case c.Rotation.MaxFileSize < minFileSize || c.Rotation.MaxBufferedBytes < c.Rotation.MaxFileSize || c.Rotation.MaxFileAge <= 0:
		t.Errorf("%s: rotation not resolved: %+v", c.File, c.Rotation)
	case len(c.Streams) == 0:
		t.Errorf("%s: no streams", c.File)
	}
	for i, s := range c.Streams {
		if s.Stream == "" || s.Consumer == "" || s.DeliverPolicy == "" || s.Line < 1 {
			t.Errorf("%s: streams[%d] not resolved: %+v", c.File, i+1, s)
		}
		if s.MaxAckPending < 1 {
			t.Errorf("%s: streams[%d].MaxAckPending = %d", c.File, i+1, s.MaxAckPending)
		}
		if 2*c.Rotation.MaxFileAge > s.AckWait {
			t.Errorf("%s: streams[%d].AckWait %v is less than twice MaxFileAge %v", c.File, i+1, s.AckWait, c.Rotation.MaxFileAge)
		}
	}
}

func TestLoadFillsInEveryDefault(t *testing.T) {
	conns, err := Load("testdata/minimal.good.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Connector{
		File:               "testdata/minimal.good.toml",
		Name:               "events",
		Enabled:            true,
		ShutdownTimeout:    30 * time.Second,
		ReadyUploadFailure: time.Minute,
		State:              State{Bucket: "jetlake_state", Replicas: 1},
		NATS:               NATS{URL: "nats://127.0.0.1:4222"},
		Streams: []Stream{{
			Stream:        "EVENTS",
			Consumer:      "events",
			DeliverPolicy: DeliverAll,
			AckWait:       2 * time.Minute,
			MaxAckPending: 250000, // 256MiB / 256, above the ceiling
			Line:          7,
		}},
		S3: S3{Bucket: "lake", Region: "us-east-1", UploadConcurrency: 4, Checksum: ChecksumCRC32C},
		Output: Output{
			Format:             formats.JSONLines,
			Compression:        formats.None,
			PathTemplate:       pathtemplate.MustParse("{stream}/{subject}/{date}/{hour}"),
			GroupBy:            GroupBySubject,
			IncludeMetadata:    true,
			KeepPayload:        true,
			OnTypeError:        formats.RejectTypeErrors,
			MaxOpenDirectories: 4096,
		},
		Rotation: Rotation{
			MaxFileSize:        8 << 20,
			MaxMessagesPerFile: 10000,
			MaxFileAge:         time.Minute,
			MaxBufferedBytes:   256 << 20,
		},
	}
	if len(conns) != 1 || !reflect.DeepEqual(conns[0], want) {
		t.Errorf("Load = %+v\nwant %+v", conns[0], want)
	}
}

func TestLoadResolvesEveryKey(t *testing.T) {
	conns, err := Load("testdata/full.good.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Connector{
		File:               "testdata/full.good.toml",
		Name:               "events",
		Enabled:            false,
		ShutdownTimeout:    45 * time.Second,
		ReadyUploadFailure: time.Minute,
		State:              State{Bucket: "jetlake_state", Replicas: 1},
		NATS: NATS{
			URL:         "nats://10.0.0.1:4222, tls://10.0.0.2:4222",
			User:        "exporter",
			PasswordEnv: "JETLAKE_NATS_PASSWORD",
			TLSCAFile:   "/etc/jetlake/ca.pem",
			TLSCertFile: "/etc/jetlake/client.pem",
			TLSKeyFile:  "/etc/jetlake/client-key.pem",
		},
		Streams: []Stream{{
			Stream:          "EVENTS",
			Subjects:        []string{"events.>", "audit.*"},
			Consumer:        "jetlake-events",
			DeliverPolicy:   DeliverNew,
			ConsumerStorage: StorageFile,
			AckWait:         5 * time.Minute,
			MaxAckPending:   50000,
			Line:            14,
		}, {
			Stream:          "ORDERS",
			Consumer:        "events",
			DeliverPolicy:   DeliverAll,
			AckWait:         2 * time.Minute,
			MaxAckPending:   250000, // 1GB / 256, above the ceiling
			Line:            23,
			Partitions:      8,
			LeaseTTL:        20 * time.Second,
			Failover:        FailoverPinned,
			PriorityTimeout: 30 * time.Second,
		}},
		S3: S3{
			Bucket:             "lake",
			Endpoint:           "http://127.0.0.1:9000",
			Region:             "eu-west-1",
			Prefix:             "raw/events",
			PathStyle:          false,
			AccessKeyIDEnv:     "LAKE_KEY_ID",
			SecretAccessKeyEnv: "LAKE_SECRET",
			UploadConcurrency:  16,
			Checksum:           ChecksumCRC32C,
		},
		Output: Output{
			Format:             formats.Raw,
			PathTemplate:       pathtemplate.MustParse("{stream}/date={date}/hour={hour}"),
			GroupBy:            GroupByPath,
			IncludeMetadata:    true, // the default: raw takes no record keys
			RawDelimiter:       "\n",
			Compression:        formats.Zstd,
			KeepPayload:        true,
			OnTypeError:        formats.RejectTypeErrors,
			MaxOpenDirectories: 500,
		},
		Rotation: Rotation{
			MaxFileSize:        64 << 20,
			MaxMessagesPerFile: 0,
			MaxFileAge:         30 * time.Second,
			MaxBufferedBytes:   1e9,
		},
	}
	if len(conns) != 1 || !reflect.DeepEqual(conns[0], want) {
		t.Errorf("Load = %+v\nwant %+v", conns[0], want)
	}
}

func TestLoadResolvesParquetKeys(t *testing.T) {
	tests := []struct {
		file string
		want Output
	}{
		{"testdata/parquet.good.toml", Output{
			Format:             formats.Parquet,
			Compression:        formats.Zstd,
			PathTemplate:       pathtemplate.MustParse("{stream}/{subject}/{date}/{hour}"),
			GroupBy:            GroupBySubject,
			IncludeMetadata:    true,
			IncludeHeaders:     true,
			RowGroupSize:       128 << 20,
			KeepPayload:        false,
			OnTypeError:        formats.NullTypeErrors,
			MaxOpenDirectories: 4096,
			Columns: []Column{
				{Name: "user_id", Source: "user.id", Type: formats.TypeInt64, Coerce: true},
				{Name: "first_sku", Source: "items.0.sku", Type: formats.TypeString},
				{Name: "created_at", Source: "created_at", Type: formats.TypeTimestamp, Unit: "ms"},
				{Name: "day", Source: "day", Type: formats.TypeDate},
				{Name: "_extra", Source: "extra", Type: formats.TypeJSON},
			},
		}},
		{"testdata/parquet-defaults.good.toml", Output{
			Format:             formats.Parquet,
			Compression:        formats.Snappy,
			PathTemplate:       pathtemplate.MustParse("{stream}/{subject}/{date}/{hour}"),
			GroupBy:            GroupBySubject,
			IncludeMetadata:    true,
			RowGroupSize:       64 << 20,
			KeepPayload:        true,
			OnTypeError:        formats.RejectTypeErrors,
			MaxOpenDirectories: 4096,
			Columns: []Column{
				{Name: "total", Source: "total", Type: formats.TypeDouble},
				{Name: "paid", Source: "paid", Type: formats.TypeBoolean},
				{Name: "at", Source: "at", Type: formats.TypeTimestamp},
			},
		}},
		{"testdata/exact-payload.good.toml", Output{
			Format:             formats.JSONArray,
			Compression:        formats.Zstd,
			PathTemplate:       pathtemplate.MustParse("{stream}/{subject}/{date}/{hour}"),
			GroupBy:            GroupBySubject,
			IncludeMetadata:    true,
			IncludeHeaders:     true,
			KeepExactPayload:   true,
			KeepPayload:        true,
			OnTypeError:        formats.RejectTypeErrors,
			MaxOpenDirectories: 4096,
		}},
		{"testdata/compression.good.toml", Output{
			Format:             formats.JSONLines,
			Compression:        formats.Gzip,
			PathTemplate:       pathtemplate.MustParse("{stream}/{subject}/{date}/{hour}"),
			GroupBy:            GroupBySubject,
			IncludeMetadata:    true,
			KeepPayload:        true,
			OnTypeError:        formats.RejectTypeErrors,
			MaxOpenDirectories: 4096,
		}},
	}
	for _, tt := range tests {
		conns, err := Load(tt.file)
		if err != nil {
			t.Fatal(err)
		}
		if got := conns[0].Output; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Output = %+v\nwant %+v", tt.file, got, tt.want)
		}
	}
}

func TestLoadFollowsInlineTablesAndDottedKeys(t *testing.T) {
	conns, err := Load("testdata/inline.good.toml")
	if err != nil {
		t.Fatal(err)
	}
	c := conns[0]
	if c.NATS.TokenEnv != "NATS_TOKEN" || c.S3.Prefix != `raw/"quoted"` || !c.S3.PathStyle {
		t.Errorf("nats/s3 = %+v %+v", c.NATS, c.S3)
	}
	if got := []int{c.Streams[0].Line, c.Streams[1].Line}; !reflect.DeepEqual(got, []int{8, 12}) {
		t.Errorf("stream lines = %v, want [8 12]", got)
	}
	if c.Streams[1].Consumer != "b-reader" || c.Streams[0].Consumer != "inline" {
		t.Errorf("consumers = %q, %q", c.Streams[0].Consumer, c.Streams[1].Consumer)
	}
	if want := []string{"a.>", "b.*.c"}; !reflect.DeepEqual(c.Streams[0].Subjects, want) {
		t.Errorf("subjects = %q, want %q", c.Streams[0].Subjects, want)
	}
	// 2 × 100 messages is below the 1000 floor; 10 MiB / 256 is 40960.
	if c.Streams[0].MaxAckPending != 40960 {
		t.Errorf("MaxAckPending = %d, want 40960", c.Streams[0].MaxAckPending)
	}
}

func TestLoadReadsADirectoryInNameOrder(t *testing.T) {
	conns, err := Load("testdata/multi.good")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range conns {
		names = append(names, c.Name+"@"+c.File)
	}
	want := []string{"a@" + filepath.Join("testdata/multi.good", "a.toml"), "b@" + filepath.Join("testdata/multi.good", "b.toml")}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("connectors = %q, want %q (disabled ones included, other files skipped)", names, want)
	}
}

func TestDerivedMaxAckPending(t *testing.T) {
	tests := []struct {
		buffered int64
		count    int
		want     int
	}{
		{256 << 20, 10000, 250000},
		{32 << 20, 10000, 131072},
		{128 << 10, 100, 1000},        // floor
		{128 << 10, 0, 1000},          // floor, no count limit
		{1 << 40, 0, 250000},          // ceiling
		{64 << 20, 200000, 400000},    // room for two full files
		{1 << 40, 10000000, 20000000}, // two full files beat the ceiling
	}
	for _, tt := range tests {
		got := DerivedAckPending(Rotation{MaxBufferedBytes: tt.buffered, MaxMessagesPerFile: tt.count})
		if got != tt.want {
			t.Errorf("DerivedAckPending(%d bytes, %d messages) = %d, want %d", tt.buffered, tt.count, got, tt.want)
		}
	}
}

func TestLoadOfAMissingPathIsAnOrdinaryError(t *testing.T) {
	_, err := Load("testdata/does-not-exist.toml")
	var probs Errors
	if !errors.Is(err, fs.ErrNotExist) || errors.As(err, &probs) {
		t.Errorf("Load = %v (%T), want an fs.ErrNotExist that is not Errors", err, err)
	}
}

func TestLoadOfAnEmptyDirectoryFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.toml"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	if !errors.Is(err, ErrNoConnectors) {
		t.Errorf("Load(empty dir) = %v, want ErrNoConnectors", err)
	}
}

func TestProblemsAreFoundWithErrorsAs(t *testing.T) {
	_, err := Load("testdata/size.bad.toml")
	var p *Problem
	if !errors.As(err, &p) || p.Key != "rotation.max_file_size" || p.Line != 13 {
		t.Errorf("errors.As(*Problem) = %+v", p)
	}
}

func TestParseNamesTheFileInProblems(t *testing.T) {
	_, err := Parse("inline", []byte("name = 1\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "inline:1: name: must be a string, not an integer") {
		t.Errorf("Parse = %v", err)
	}
}

// Every example connector file must load, so the examples never rot.
func TestExamplesAreValid(t *testing.T) {
	n, err := loadTree("../examples")
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("../examples holds no *.toml files")
	}
}

func TestLoadTreeFindsNestedFilesAndTheirProblems(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("testdata/minimal.good.toml")
	if err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(nested, "c.toml"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := loadTree(dir); n != 1 || err != nil {
		t.Errorf("loadTree = %d, %v; want 1, nil", n, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.toml"), []byte("name = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := loadTree(dir); n != 2 || err == nil {
		t.Errorf("loadTree = %d, %v; want 2 and an error", n, err)
	}
	if n, err := loadTree(t.TempDir()); n != 0 || err != nil {
		t.Errorf("loadTree(empty) = %d, %v; want 0, nil", n, err)
	}
}

// loadTree loads every *.toml file under root, each on its own, and returns
// how many there are and the problems of all of them.
func loadTree(root string) (int, error) {
	n := 0
	var errs []error
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".toml") {
			return nil
		}
		n++
		if _, err := Load(path); err != nil {
			errs = append(errs, err)
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	return n, errors.Join(errs...)
}

// Every output a good file resolves to is one the formats package takes,
// mapped field for field as the exporter maps it.
func TestGoodOutputsAreValidFormatsOptions(t *testing.T) {
	cases, err := filepath.Glob("testdata/*.good*")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range cases {
		conns, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range conns {
			opts := c.Output.FormatsOptions()
			if _, err := formats.New(opts); err != nil {
				t.Errorf("%s: formats.New(%+v): %v", c.File, opts, err)
			}
		}
	}
}
