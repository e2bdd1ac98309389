// Command jetlake-demo shows jetlake end to end on one machine. It starts
// nats-server on 127.0.0.1:4222 and MinIO on 127.0.0.1:9000 (the addresses
// examples/local.toml names), creates the stream EVENTS and the bucket lake,
// publishes sample events, runs bin/jetlake until the stream is exported,
// lists the objects it wrote, then writes the same events into an Iceberg
// table through an embedded sqlite catalog (examples/iceberg.toml) and
// shows its snapshots and rows, and stops both servers again.
//
// Run it from the repository with "make demo", which builds bin/jetlake and
// the pinned servers first. It exits non-zero if jetlake fails or writes no
// object.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/internal/exportertest"
	"github.com/jetlake/jetlake/internal/iceberg/icebergtest"
	"github.com/jetlake/jetlake/pathtemplate"
	_ "modernc.org/sqlite" // reads the demo's catalog
)

const (
	natsPort      = 4222
	minioPort     = 9000
	streamName    = "EVENTS"
	bucketName    = "lake"
	configFile    = "examples/local.toml"
	icebergFile   = "examples/iceberg.toml"
	icebergDB     = "bin/demo-catalog.db" // the catalog examples/iceberg.toml names
	eventCount    = 2000
	exportTimeout = 2 * time.Minute
	module        = "module github.com/jetlake/jetlake"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jetlake-demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) (err error) {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	for _, port := range []int{natsPort, minioPort} {
		if !portFree(port) {
			return fmt.Errorf("port %d on 127.0.0.1 is busy; %s needs it: stop whatever listens there and try again", port, configFile)
		}
	}

	step("starting nats-server %s on 127.0.0.1:%d", exportertest.NATSServerVersion, natsPort)
	start := time.Now()
	ns, err := exportertest.StartNATS(exportertest.NATSOptions{Port: natsPort})
	if err != nil {
		return err
	}
	defer stopServer("nats-server", ns.Stop, &err)
	step("nats-server ready in %v (log: %s)", time.Since(start).Round(time.Millisecond), ns.LogFile)

	step("starting MinIO %s on 127.0.0.1:%d", exportertest.MinIOVersion, minioPort)
	start = time.Now()
	ms, err := exportertest.StartMinIO(exportertest.MinIOOptions{Port: minioPort})
	if err != nil {
		return err
	}
	defer stopServer("MinIO", ms.Stop, &err)
	step("MinIO ready in %v (log: %s)", time.Since(start).Round(time.Millisecond), ms.LogFile)

	if err := ms.CreateBucket(ctx, bucketName); err != nil {
		return err
	}
	step("created bucket %s", bucketName)
	if err := publishEvents(ctx, ns); err != nil {
		return err
	}
	if err := runJetlake(ctx, root, ms, configFile); err != nil {
		return err
	}
	if err := listObjects(ctx, ms); err != nil {
		return err
	}
	// The catalog of an earlier demo names files of a MinIO that is gone.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(root, icebergDB+suffix))
	}
	if err := runJetlake(ctx, root, ms, icebergFile); err != nil {
		return err
	}
	return showTable(ms, filepath.Join(root, icebergDB))
}

// showTable reads the demo's Iceberg table as a query engine would and
// prints its snapshots, data files and rows. It fails unless every event is
// in the table once.
func showTable(ms *exportertest.MinIOServer, catalog string) error {
	db, err := sql.Open("sqlite", "file:"+catalog)
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := ms.Client()
	if err != nil {
		return err
	}
	tr, err := icebergtest.Read(db, false, "events-lake", "lake", "events", icebergtest.MinIOGet(c, bucketName))
	if err != nil {
		return fmt.Errorf("read the table: %w", err)
	}
	rows := 0
	for _, f := range tr.Files {
		rows += len(f.Seqs)
	}
	step("Iceberg table lake.events (catalog %s): %d snapshot(s), %d data files, %d rows", icebergDB, tr.Snapshots, len(tr.Files), rows)
	for i, f := range tr.Files {
		if i == 5 {
			fmt.Printf("  ... %d more\n", len(tr.Files)-5)
			break
		}
		fmt.Printf("  %6d rows  %s\n", len(f.Seqs), f.Path)
	}
	if problems := tr.Check(eventCount); len(problems) > 0 {
		return fmt.Errorf("the table does not hold every event once: %s", problems[0])
	}
	return nil
}

// publishEvents creates the stream and publishes the sample events.
func publishEvents(ctx context.Context, ns *exportertest.NATSServer) error {
	nc, err := ns.Connect(nats.Name("jetlake-demo"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     streamName,
		Subjects: []string{"events.>"},
		Storage:  jetstream.FileStorage,
	}); err != nil {
		return fmt.Errorf("create stream %s: %w", streamName, err)
	}
	step("created stream %s (subjects events.>)", streamName)

	counts := map[string]int{}
	rng := rand.New(rand.NewPCG(2026, 11))
	at := time.Now().UTC().Add(-time.Hour)
	for i := range eventCount {
		at = at.Add(time.Duration(rng.IntN(3600)) * time.Millisecond)
		msg := sampleEvent(rng, i, at)
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			return fmt.Errorf("publish to %s: %w", msg.Subject, err)
		}
		counts[msg.Subject]++
	}
	step("published %d events: %d orders, %d clicks, %d signups", eventCount,
		counts["events.orders"], counts["events.clicks"], counts["events.signups"])
	return nil
}

var (
	pages     = []string{"/", "/pricing", "/docs", "/blog/jetstream-to-s3", "/signup", "/changelog"}
	referrers = []string{"", "https://www.google.com/", "https://news.ycombinator.com/", "https://github.com/"}
	plans     = []string{"free", "free", "free", "team", "business"}
	countries = []string{"DE", "FR", "US", "GB", "NL", "JP", "BR", "IN"}
	currency  = []string{"EUR", "USD", "GBP"}
)

// sampleEvent returns the i-th event: mostly clicks, some orders, a few
// signups. Every 40th event carries headers, as a traced request would.
func sampleEvent(rng *rand.Rand, i int, at time.Time) *nats.Msg {
	ts := at.Format(time.RFC3339Nano)
	var msg *nats.Msg
	switch n := rng.IntN(10); {
	case n < 3:
		msg = nats.NewMsg("events.orders")
		msg.Data = fmt.Appendf(nil,
			`{"order_id":"ord-%06d","customer_id":"cus-%04d","items":%d,"total_cents":%d,"currency":%q,"ts":%q}`,
			i, rng.IntN(500), 1+rng.IntN(5), 499+rng.IntN(20000), currency[rng.IntN(len(currency))], ts)
	case n < 9:
		msg = nats.NewMsg("events.clicks")
		msg.Data = fmt.Appendf(nil,
			`{"session_id":"s-%08x","page":%q,"referrer":%q,"duration_ms":%d,"ts":%q}`,
			rng.Uint32(), pages[rng.IntN(len(pages))], referrers[rng.IntN(len(referrers))], rng.IntN(30000), ts)
	default:
		msg = nats.NewMsg("events.signups")
		msg.Data = fmt.Appendf(nil,
			`{"user_id":"u-%06d","email":"user%d@example.com","plan":%q,"country":%q,"ts":%q}`,
			i, i, plans[rng.IntN(len(plans))], countries[rng.IntN(len(countries))], ts)
	}
	if i%40 == 0 {
		msg.Header.Set("Content-Type", "application/json")
		msg.Header.Set("Trace-Id", fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64()))
		msg.Header.Set("Source", "demo-"+strconv.Itoa(i%3))
	}
	return msg
}

// runJetlake runs bin/jetlake until it has exported everything, with the
// MinIO credentials in the standard AWS environment variables.
func runJetlake(ctx context.Context, root string, ms *exportertest.MinIOServer, configFile string) error {
	bin := filepath.Join(root, "bin", "jetlake")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s is missing: build it with \"make build\"", bin)
	}
	ctx, cancel := context.WithTimeout(ctx, exportTimeout)
	defer cancel()
	args := []string{"run", "-until-idle", "-config", configFile}
	step("running bin/jetlake %s", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = root
	cmd.Env = ms.ClientEnv()
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	// On timeout or Ctrl-C, ask jetlake to shut down as a service manager
	// would, and kill it only if it does not.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	start := time.Now()
	err := cmd.Run()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("jetlake did not finish within %v", exportTimeout)
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted")
	case err != nil:
		return fmt.Errorf("jetlake failed: %w", err)
	}
	step("jetlake finished in %v", time.Since(start).Round(time.Millisecond))
	return nil
}

// listObjects prints every object of the bucket and the first lines of the
// first data object. It fails if jetlake wrote no data object.
func listObjects(ctx context.Context, ms *exportertest.MinIOServer) error {
	c, err := ms.Client()
	if err != nil {
		return err
	}
	step("objects in bucket %s:", bucketName)
	var first string
	var count, data int
	var total int64
	for obj := range c.ListObjects(ctx, bucketName, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			return fmt.Errorf("list bucket %s: %w", bucketName, obj.Err)
		}
		fmt.Printf("%10d  %s\n", obj.Size, obj.Key)
		count++
		total += obj.Size
		if strings.Contains("/"+obj.Key, "/"+pathtemplate.OwnDir+"/") {
			continue // loss markers and other records, not data
		}
		data++
		if first == "" {
			first = obj.Key
		}
	}
	step("%d objects (%d with data), %d bytes", count, data, total)
	if first == "" {
		return fmt.Errorf("jetlake wrote no data object to bucket %s", bucketName)
	}
	return printHead(ctx, c, first, 3)
}

// printHead prints the first n lines of an object, gunzipping .gz objects.
func printHead(ctx context.Context, c *minio.Client, key string, n int) error {
	obj, err := c.GetObject(ctx, bucketName, key, minio.GetObjectOptions{})
	if err != nil {
		return fmt.Errorf("get %s: %w", key, err)
	}
	defer obj.Close()
	var r io.Reader = obj
	if strings.HasSuffix(key, ".gz") {
		zr, err := gzip.NewReader(obj)
		if err != nil {
			return fmt.Errorf("get %s: %w", key, err)
		}
		defer zr.Close()
		r = zr
	}
	step("first %d lines of %s:", n, key)
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	for i := 0; i < n && sc.Scan(); i++ {
		fmt.Println(string(bytes.TrimRight(sc.Bytes(), "\r")))
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	return nil
}

// stopServer stops a server and reports a failure through *err unless an
// earlier error is already there.
func stopServer(name string, stop func() error, err *error) {
	if serr := stop(); serr != nil {
		if *err == nil {
			*err = serr
		} else {
			fmt.Fprintf(os.Stderr, "jetlake-demo: stop %s: %v\n", name, serr)
		}
		return
	}
	step("stopped %s", name)
}

// repoRoot finds the repository from the working directory upwards, so the
// demo runs from any directory inside it.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(b, []byte(module+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run the demo inside the jetlake repository (no go.mod of github.com/jetlake/jetlake found)")
		}
		dir = parent
	}
}

// portFree reports whether nothing listens on 127.0.0.1:port.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func step(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}
