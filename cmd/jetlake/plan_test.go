package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
)

// planFile is a connector on the package's servers reading subjects
// <lower(stream)>.> of stream with consumer.
func planFile(t *testing.T, natsURL, stream, consumer, bucket, extra string) string {
	t.Helper()
	return writeFile(t, "plan.toml", planFileBody(t, natsURL, stream, consumer, bucket, extra))
}

// planFileBody is the connector file planFile writes.
func planFileBody(t *testing.T, natsURL, stream, consumer, bucket, extra string) string {
	t.Helper()
	return fmt.Sprintf(`name = %q

[nats]
url = %q
%s
[[streams]]
stream = %q
subjects = ["%s.>"]
consumer = %q
ack_wait = "30s"

[s3]
bucket = %q
endpoint = %q
prefix = "raw"

[rotation]
max_messages_per_file = 500
max_file_age = "10s"
`, strings.ToLower(consumer), natsURL, extra, stream, strings.ToLower(stream), consumer, bucket, shared.MinIO(t).Endpoint)
}

func createPlanStream(t *testing.T, name string) jetstream.Stream {
	t.Helper()
	return createPlanStreamRetained(t, name, jetstream.LimitsPolicy)
}

// createPlanStreamRetained creates a plan test's stream with retention r.
func createPlanStreamRetained(t *testing.T, name string, r jetstream.RetentionPolicy) jetstream.Stream {
	t.Helper()
	nc, err := shared.NATS(t).Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	st, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}, Retention: r})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func createBucketOnce(t *testing.T, name string) {
	t.Helper()
	mc, err := shared.MinIO(t).Client()
	if err != nil {
		t.Fatal(err)
	}
	ok, err := mc.BucketExists(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		if err := shared.MinIO(t).CreateBucket(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
}

// The derived max_ack_pending of planFile: max(clamp(256MiB/256), 2 × 500).
const planMaxAckPending = 250000

func TestPlanReportsConsumersThatDoNotFitWithTheFix(t *testing.T) {
	createBucketOnce(t, "plan")
	for _, tt := range []struct {
		name     string
		stream   string
		consumer *jetstream.ConsumerConfig // nil: no consumer
		noStream bool
		limits   bool // a stream with limits retention, read ack-less; otherwise interest retention, read with explicit acks
		bucket   string
		code     int
		want     []string
	}{
		{
			name: "no consumer yet", stream: "PLANNEW", code: 0,
			want: []string{
				"ok    stream PLANNEW, consumer plannew: read with explicit acks: interest retention: a consumer without acks would let the server remove a message at delivery, before its object is stored",
				"ok    stream PLANNEW, consumer plannew: does not exist yet; jetlake creates it on start: AckExplicit, AckWait 30s, MaxAckPending 250000, MaxDeliver -1, deliver all, filters plannew.>",
			},
		},
		{
			name: "no consumer yet on a limits stream", stream: "PLANNEWLIMITS", code: 0, limits: true,
			want: []string{
				"ok    stream PLANNEWLIMITS, consumer plannewlimits: read ack-less: limits retention: the stream keeps its messages whatever the consumer acks, so the export record decides and the server keeps no pending set",
				"ok    stream PLANNEWLIMITS, consumer plannewlimits: does not exist yet; jetlake creates it on start: AckNone, MaxDeliver -1, deliver all, filters plannewlimits.>",
			},
		},
		{
			name: "an explicit consumer on a limits stream", stream: "PLANLIMITS", code: 0, limits: true,
			consumer: &jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 5 * time.Second, MaxAckPending: 100, MaxDeliver: -1, FilterSubject: "planlimits.>"},
			want: []string{
				"note  stream PLANLIMITS, consumer planlimits: AckPolicy explicit; jetlake reads this stream ack-less (limits retention: the stream keeps its messages whatever the consumer acks, so the export record decides and the server keeps no pending set): it rebuilds the consumer with AckPolicy none from the export record on start",
				"plan: 0 checks failed",
			},
		},
		{
			name: "a consumer that fits", stream: "PLANFIT", code: 0,
			consumer: &jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: planMaxAckPending, MaxDeliver: -1, FilterSubject: "planfit.>"},
			want:     []string{"ok    stream PLANFIT, consumer planfit: exists and fits: AckExplicit, AckWait 30s, MaxAckPending 250000, MaxDeliver -1"},
		},
		{
			name: "AckWait too short", stream: "PLANACKWAIT", code: 0,
			consumer: &jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 5 * time.Second, MaxAckPending: planMaxAckPending, MaxDeliver: -1, FilterSubject: "planackwait.>"},
			want:     []string{"warn  stream PLANACKWAIT, consumer planackwait: AckWait 5s is less than 2 × max_file_age (10s); jetlake sets it to 30s on start"},
		},
		{
			name: "MaxAckPending too small", stream: "PLANPENDING", code: 0,
			consumer: &jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: 100, MaxDeliver: -1, FilterSubject: "planpending.>"},
			want:     []string{"warn  stream PLANPENDING, consumer planpending: MaxAckPending 100 is less than max_messages_per_file (500): files would be cut at 90% of it; jetlake sets it to 250000 on start"},
		},
		{
			name: "AckAll", stream: "PLANACKALL", code: 0,
			consumer: &jetstream.ConsumerConfig{AckPolicy: jetstream.AckAllPolicy, AckWait: 30 * time.Second, MaxAckPending: planMaxAckPending, MaxDeliver: -1, FilterSubject: "planackall.>"},
			want: []string{
				"note  stream PLANACKALL, consumer planackall: AckPolicy all; jetlake reads this stream with explicit acks (interest retention: a consumer without acks would let the server remove a message at delivery, before its object is stored): it rebuilds the consumer with AckPolicy explicit from the export record on start",
			},
		},
		{
			name: "finite MaxDeliver", stream: "PLANMAXDELIVER", code: 1,
			consumer: &jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: planMaxAckPending, MaxDeliver: 5, FilterSubject: "planmaxdeliver.>"},
			want: []string{
				"FAIL  stream PLANMAXDELIVER, consumer planmaxdeliver: MaxDeliver 5; jetlake needs -1 (unlimited)",
				"update the consumer's max_deliver to -1",
			},
		},
		{
			name: "several misfits at once", stream: "PLANMANY", code: 1,
			consumer: &jetstream.ConsumerConfig{AckPolicy: jetstream.AckAllPolicy, AckWait: 2 * time.Second, MaxAckPending: 10, MaxDeliver: 3, FilterSubject: "planmany.>"},
			want: []string{
				"note  stream PLANMANY, consumer planmany: AckPolicy all",
				"FAIL  stream PLANMANY, consumer planmany: MaxDeliver 3",
				"plan: 1 check failed",
			},
		},
		{
			name: "another connector's consumer", stream: "PLANOWNER", code: 1,
			consumer: &jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxAckPending: planMaxAckPending, MaxDeliver: -1, FilterSubject: "planowner.>",
				Metadata: map[string]string{"jetlake_connector": "billing"}},
			want: []string{
				`FAIL  stream PLANOWNER, consumer planowner: belongs to connector "billing" (its metadata jetlake_connector), not to "planowner"`,
				`set streams[1].consumer to another name, or, if connector "billing" is gone for good, set the consumer's jetlake_connector metadata to "planowner" or delete the consumer`,
				"plan: 1 check failed",
			},
		},
		{
			name: "missing stream", stream: "PLANNOSTREAM", code: 1, noStream: true,
			want: []string{"FAIL  stream PLANNOSTREAM: not found: create it, or fix streams[1].stream", "plan: 1 check failed"},
		},
		{
			name: "missing bucket", stream: "PLANNOBUCKET", code: 1, bucket: "plan-no-such-bucket",
			want: []string{`FAIL  bucket plan-no-such-bucket: bucket "plan-no-such-bucket" does not exist: create it or fix s3.bucket`, "skip  probe: not written"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stream := tt.stream
			consumer := strings.ToLower(stream)
			if !tt.noStream {
				retention := jetstream.InterestPolicy
				if tt.limits {
					retention = jetstream.LimitsPolicy
				}
				st := createPlanStreamRetained(t, stream, retention)
				if tt.consumer != nil {
					cc := *tt.consumer
					cc.Durable = consumer
					if _, err := st.CreateConsumer(context.Background(), cc); err != nil {
						t.Fatal(err)
					}
				}
			}
			bucket := tt.bucket
			if bucket == "" {
				bucket = "plan"
			}
			path := planFile(t, shared.NATS(t).URL, stream, consumer, bucket, "")
			code, out, errOut := jetlakeEnv(t, shared.MinIO(t).ClientEnv(), "plan", "-config", path)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if t.Failed() {
				return
			}
			// jetlake run would accept whatever plan passed: only the
			// failing cases are refused by the exporter too.
			if tt.consumer != nil {
				assertUnchanged(t, stream, consumer, *tt.consumer)
			}
		})
	}
}

// assertUnchanged checks that plan changed nothing on the consumer.
func assertUnchanged(t *testing.T, stream, consumer string, want jetstream.ConsumerConfig) {
	t.Helper()
	nc, err := shared.NATS(t).Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	cons, err := js.Consumer(context.Background(), stream, consumer)
	if err != nil {
		t.Fatal(err)
	}
	have := cons.CachedInfo().Config
	if have.AckWait != want.AckWait || have.MaxAckPending != want.MaxAckPending || have.AckPolicy != want.AckPolicy || have.MaxDeliver != want.MaxDeliver {
		t.Fatalf("plan changed the consumer: %+v", have)
	}
}

func TestPlanOfAGoodSetupPassesAndShowsKeysAndPermissions(t *testing.T) {
	createBucketOnce(t, "plan")
	createPlanStream(t, "PLANGOOD")
	nc, err := shared.NATS(t).Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for i, subj := range []string{"plangood.b", "plangood.a", "plangood.c.1", "plangood.d", "plangood.e", "plangood.f", "plangood.a"} {
		if _, err := js.Publish(context.Background(), subj, []byte(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	path := planFile(t, shared.NATS(t).URL, "PLANGOOD", "plangood", "plan", "")
	code, out, errOut := jetlakeEnv(t, shared.MinIO(t).ClientEnv(), "plan", "-config", path)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	t.Log(out)
	date := time.Now().UTC().Format("2006-01-02")
	for _, want := range []string{
		"connector plangood (" + path + ")",
		// effective configuration, defaults filled in, secrets by name only
		`max_ack_pending = 250000`,
		`consumer_storage = "memory"  # for a consumer jetlake creates; an existing one keeps its own`,
		`path_template = "{stream}/{subject}/{date}/{hour}"`,
		`compression = "none"  # objects end in .jsonl`,
		`AWS_ACCESS_KEY_ID (set), AWS_SECRET_ACCESS_KEY (set), AWS_SESSION_TOKEN (not set)`,
		`bucket = "jetlake_state"`,
		// the subjects the stream holds, the first five in order
		"filter plangood.>: 6 subjects in the stream, the first 5",
		"s3://plan/raw/PLANGOOD/plangood.a/" + date + "/",
		"s3://plan/raw/PLANGOOD/plangood.c.1/" + date + "/",
		"ok    nats: connected to nats://127.0.0.1:",
		"ok    stream PLANGOOD: exists (7 messages); its subjects plangood.> cover the filters plangood.>",
		"ok    bucket plan: exists",
		"ok    probe: wrote s3://plan/raw/_jetlake/probe/plangood-plan-",
		"ok    conditional writes: a second PUT with If-None-Match: * was refused",
		"note  probe left in place; -cleanup removes it (needs s3:DeleteObject)",
		"note  restore: messages come back with subjects; JSON payloads come back compacted (keep_exact_payload = true keeps their bytes), other payloads byte for byte; headers are not kept (include_headers = false)",
		// permissions
		`"Resource": "arn:aws:s3:::plan/raw/*"`,
		`"s3:prefix": [`,
		`"$JS.API.CONSUMER.MSG.NEXT.PLANGOOD.plangood"`,
		`"$JS.ACK.PLANGOOD.plangood.>"`,
		`"$KV.jetlake_state.*.cGxhbmdvb2Q.>"`,
		`"_INBOX.>"`,
		"plan: 0 checks failed, 0 warnings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, never := range []string{shared.MinIO(t).SecretKey, "s3:DeleteObject\""} {
		if strings.Contains(out, never) {
			t.Errorf("output holds %q", never)
		}
	}
	if n := probes(t, "plan", "raw/_jetlake/probe/plangood-plan-"); n != 1 {
		t.Fatalf("%d probe objects, want 1", n)
	}

	// -cleanup removes the probe and asks for s3:DeleteObject on probes only.
	code, out, errOut = jetlakeEnv(t, shared.MinIO(t).ClientEnv(), "plan", "-cleanup", "-config", path)
	if code != 0 || !strings.Contains(out, "ok    probe: removed") || !strings.Contains(out, `"Resource": "arn:aws:s3:::plan/raw/_jetlake/probe/*"`) {
		t.Fatalf("-cleanup: exit %d:\n%s%s", code, out, errOut)
	}
	if n := probes(t, "plan", "raw/_jetlake/probe/plangood-plan-"); n != 1 {
		t.Fatalf("%d probe objects after -cleanup, want the first run's only", n)
	}
}

func probes(t *testing.T, bucket, prefix string) int {
	t.Helper()
	mc, err := shared.MinIO(t).Client()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for obj := range mc.ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		n++
	}
	return n
}

func TestPlanWithoutNATSStillChecksTheStore(t *testing.T) {
	createBucketOnce(t, "plan")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + ln.Addr().String()
	ln.Close()
	path := planFile(t, url, "PLANDOWN", "plandown", "plan", "")
	code, out, errOut := jetlakeEnv(t, shared.MinIO(t).ClientEnv(), "plan", "-cleanup", "-config", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"FAIL  nats: nats " + url,
		"check [nats] url and that the server is reachable from here",
		"skip  stream PLANDOWN: not checked: NATS not reachable",
		"s3://plan/raw/PLANDOWN/plandown.example/", // an example key from the filter
		"ok    probe: removed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlanUsageErrorsExit2(t *testing.T) {
	bad := writeFile(t, "bad.toml", "name = \"x\"\n")
	good := planFile(t, shared.NATS(t).URL, "PLANUSAGE", "planusage", "plan", "")
	for _, args := range [][]string{
		{"plan"},
		{"plan", "-config"},
		{"plan", "-config", bad},
		{"plan", "-config", good, "extra"},
		{"plan", "-config", good, "-timeout", "0s"},
		{"plan", "-config", good, "-nope"},
	} {
		if code, _, _ := jetlakeEnv(t, nil, args...); code != 2 {
			t.Errorf("jetlake %q: exit %d, want 2", args, code)
		}
	}
}

// TestPlanPermissionsAreEnoughToRun gives a NATS user exactly the
// permissions plan prints and runs the exporter as that user: the list
// must hold every subject nats.go uses, the state bucket's creation
// included.
func TestPlanPermissionsAreEnoughToRun(t *testing.T) {
	createBucketOnce(t, "planperm")
	dir := t.TempDir()
	path := writeFile(t, "perm.toml", "") // rewritten below once the URL is known
	body := func(url string) string {
		return fmt.Sprintf(`name = "perm"

[nats]
url = %q
user = "jetlake"
password_env = "PLAN_NATS_PASSWORD"

[[streams]]
stream = "PERM"
subjects = ["perm.>"]

[s3]
bucket = "planperm"
endpoint = %q
prefix = "raw"

[rotation]
max_messages_per_file = 100
max_file_age = "10s"
`, url, shared.MinIO(t).Endpoint)
	}
	if err := os.WriteFile(path, []byte(body("nats://127.0.0.1:4222")), 0o644); err != nil {
		t.Fatal(err)
	}
	conns, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "server.conf")
	serverConf := fmt.Sprintf(`authorization {
  users = [
    {user: admin, password: admin}
    {
      user: jetlake
      password: s3cr3t-pw-7421
      %s
    }
  ]
}
no_auth_user: admin
`, strings.ReplaceAll(natsPermissions(conns[0]), "\n", "\n      "))
	if err := os.WriteFile(conf, []byte(serverConf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("nats-server configuration:\n%s", serverConf)
	ns := exportertest.NATS(t, exportertest.NATSOptions{Args: []string{"-c", conf}})
	if err := os.WriteFile(path, []byte(body(ns.URL)), 0o644); err != nil {
		t.Fatal(err)
	}

	nc, err := ns.Connect() // the admin, as the no_auth_user
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PERM", Subjects: []string{"perm.>"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 250 {
		if _, err := js.Publish(ctx, fmt.Sprintf("perm.s%d", i%3), []byte(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	// A wrong or missing password is a failed check that says what to fix.
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{shared.MinIO(t).ClientEnv("PLAN_NATS_PASSWORD=wrong"), "Authorization Violation: check the credentials in [nats]"},
		{shared.MinIO(t).ClientEnv(), "FAIL  nats: cannot connect: nats.password_env names PLAN_NATS_PASSWORD, which is not set"},
	} {
		code, out, errOut := jetlakeEnv(t, tt.env, "plan", "-config", path)
		if code != 1 || !strings.Contains(out, tt.want) {
			t.Errorf("exit %d, want 1 and %q:\n%s%s", code, tt.want, out, errOut)
		}
	}

	env := shared.MinIO(t).ClientEnv("PLAN_NATS_PASSWORD=s3cr3t-pw-7421")

	// plan as the restricted user: everything it asks is in the list too.
	code, out, errOut := jetlakeEnv(t, env, "plan", "-config", path)
	if code != 0 {
		t.Fatalf("plan as the restricted user: exit %d:\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "state bucket jetlake_state: does not exist yet") || !strings.Contains(out, "password_env = \"PLAN_NATS_PASSWORD\"  # set") {
		t.Fatalf("plan output:\n%s", out)
	}
	if strings.Contains(out, "s3cr3t-pw-7421") {
		t.Fatalf("plan printed the password:\n%s", out)
	}

	// run as the restricted user, twice: the first creates the state
	// bucket and the consumer, the second finds them.
	profile := filepath.Join(t.TempDir(), "cpu.pprof")
	for i := range 2 {
		args := []string{"run", "-until-idle", "-config", path}
		if i == 1 {
			args = append(args, "-cpuprofile", profile)
		}
		cmd := exec.Command(binary, args...)
		cmd.Env = env
		outb, err := runWithTimeout(cmd, 60*time.Second)
		if err != nil {
			t.Fatalf("run %d as the restricted user: %v\n%s\n%s", i+1, err, outb, tailFile(ns.LogFile))
		}
		if i == 0 {
			if _, err := js.Publish(ctx, "perm.s9", []byte(`{"late":true}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if b, err := os.ReadFile(profile); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("run -cpuprofile wrote no gzipped profile: %v, %d bytes", err, len(b))
	}
	if n := probes(t, "planperm", "raw/PERM/"); n < 4 {
		t.Fatalf("%d data objects, want at least 4", n)
	}
	cons, err := js.Consumer(ctx, "PERM", "perm")
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if floor := exportedFloor(t, js, info); floor != 251 {
		t.Fatalf("exported up to %d; want 251", floor)
	}
	if v := grepLines(ns.LogFile, "Violation"); v != "" {
		t.Fatalf("the server logged permission violations:\n%s", v)
	}

}

func tailFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// grepLines returns the lines of the file at path that contain sub.
func grepLines(path, sub string) string {
	b, _ := os.ReadFile(path)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// An Iceberg connector's policy grants s3:DeleteObject on its table's
// folder, which expiry, metadata cleanup and the orphan sweep remove from,
// and nowhere else; a plain connector's grants it nowhere.
func TestTheS3PolicyGrantsDeletesInTheTableFolderOnly(t *testing.T) {
	base := `name = "ice"
[nats]
url = "nats://127.0.0.1:4222"
[[streams]]
stream = "S"
subjects = ["s.>"]
[s3]
bucket = "lake"
prefix = "raw"
[output]
format = "parquet"
`
	for _, tt := range []struct {
		name, extra string
		want        []string
	}{
		{"plain", "", nil},
		{"iceberg", "[iceberg]\nuri = \"sqlite:///tmp/c.db\"\nnamespace = \"lake\"\ntable = \"events\"\n", []string{"arn:aws:s3:::lake/raw/lake/events/*"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conns, err := config.Load(writeFile(t, "c.toml", base+tt.extra))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Statement []struct {
					Action   []string
					Resource string
				}
			}
			if err := json.Unmarshal([]byte(s3Policy(conns[0], false)), &doc); err != nil {
				t.Fatal(err)
			}
			var deletes []string
			for _, st := range doc.Statement {
				if slices.Contains(st.Action, "s3:DeleteObject") {
					deletes = append(deletes, st.Resource)
				}
			}
			if !slices.Equal(deletes, tt.want) {
				t.Fatalf("s3:DeleteObject on %v, want %v", deletes, tt.want)
			}
		})
	}
}

// createdAtAndTenant declares the typed columns of the tests of sample
// keys by content.
const createdAtAndTenant = `
[[output.columns]]
name = "created_at"
source = "created_at"
type = "timestamp"

[[output.columns]]
name = "tenant"
source = "tenant"
type = "string"
`

// publishPlanMessages creates the stream and the plan bucket, and
// publishes subject and data pairs to it.
func publishPlanMessages(t *testing.T, stream string, subjectData ...string) {
	t.Helper()
	createBucketOnce(t, "plan")
	createPlanStream(t, stream)
	nc, err := shared.NATS(t).Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for i := 0; i+1 < len(subjectData); i += 2 {
		if _, err := js.Publish(context.Background(), subjectData[i], []byte(subjectData[i+1])); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPlanShowsKeysOfRealMessagesWhenPathsDependOnTheirContent: with an
// event time and a payload field in the path, plan renders the keys of
// messages the stream holds, as run would file them.
func TestPlanShowsKeysOfRealMessagesWhenPathsDependOnTheirContent(t *testing.T) {
	publishPlanMessages(t, "PLANCONTENT",
		"plancontent.a", `{"tenant":"acme","created_at":"2026-10-01T08:00:00Z"}`,
		"plancontent.a", `{"tenant":"zeta","created_at":"2026-10-03T23:00:00Z"}`,
		"plancontent.b", `{"tenant":"acme"}`)
	path := writeFile(t, "plan.toml", planFileBody(t, shared.NATS(t).URL, "PLANCONTENT", "plancontent", "plan", "")+`
[output]
path_template = "{stream}/dt={date}/tenant={column:tenant}"
time_source = "column:created_at"
`+createdAtAndTenant)
	code, out, errOut := jetlakeEnv(t, shared.MinIO(t).ClientEnv(), "plan", "-config", path)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	for _, want := range []string{
		"stream PLANCONTENT (messages it holds: the oldest and newest of each filter):",
		"s3://plan/raw/PLANCONTENT/dt=2026-10-01/tenant=acme/00000000000000000001-00000000000000000001.jsonl (sequence 1)",
		"s3://plan/raw/PLANCONTENT/dt=" + today + "/tenant=acme/00000000000000000003-00000000000000000003.jsonl (sequence 3: no event time, filed by its JetStream timestamp)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestPlanShowsTableKeysOfRealMessagesWhenPartitionsReadTheirPayload: a
// table partitioned by a typed column gets sample keys from the stream's
// messages, their partition folder rendered from their payload.
func TestPlanShowsTableKeysOfRealMessagesWhenPartitionsReadTheirPayload(t *testing.T) {
	publishPlanMessages(t, "PLANTABLE",
		"plantable.a", `{"tenant":"acme","created_at":"2026-10-01T08:00:00Z"}`,
		"plantable.a", `{"tenant":"zeta"}`)
	catalog := filepath.Join(t.TempDir(), "catalog.db")
	path := writeFile(t, "plan.toml", planFileBody(t, shared.NATS(t).URL, "PLANTABLE", "plantable", "plan", "")+`
[output]
format = "parquet"
`+createdAtAndTenant+`
[iceberg]
uri = "sqlite://`+catalog+`"
namespace = "lake"
table = "plantable"
partitioning = ["day(created_at)", "tenant"]
`)
	code, out, errOut := jetlakeEnv(t, shared.MinIO(t).ClientEnv(), "plan", "-config", path)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"stream PLANTABLE (messages it holds: the oldest and newest of each filter):",
		"/created_at_day=2026-10-01/tenant=acme/00000000000000000001-00000000000000000001.parquet (sequence 1)",
		"/created_at_day=null/tenant=zeta/00000000000000000002-00000000000000000002.parquet (sequence 2)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestPlanPrintsARejectedSampleWithoutItsValueUnlessAsked: the reason a
// sample message would be rejected for names the column and what is
// wrong, not the value, which is the publisher's and may be personal data;
// -show-payloads prints it.
func TestPlanPrintsARejectedSampleWithoutItsValueUnlessAsked(t *testing.T) {
	const secret = "ada.lovelace@example.com"
	publishPlanMessages(t, "PLANREJECT",
		"planreject.a", `{"tenant":"acme","created_at":"`+secret+`"}`,
		"planreject.a", `{"tenant":"acme","created_at":"2026-10-01T08:00:00Z"}`)
	path := writeFile(t, "plan.toml", planFileBody(t, shared.NATS(t).URL, "PLANREJECT", "planreject", "plan", "")+`
[output]
path_template = "{stream}/dt={date}/tenant={column:tenant}"
time_source = "column:created_at"
`+createdAtAndTenant)
	const rejected = "sequence 1: rejected, to s3://plan/raw/_jetlake/rejected/: column created_at (source created_at): a string that is not an RFC 3339 timestamp is not a timestamp"
	code, out, errOut := jetlakeEnv(t, shared.MinIO(t).ClientEnv(), "plan", "-config", path)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, rejected) || strings.Contains(out+errOut, secret) {
		t.Errorf("output lacks %q, or quotes the value %q:\n%s%s", rejected, secret, out, errOut)
	}
	code, out, errOut = jetlakeEnv(t, shared.MinIO(t).ClientEnv(), "plan", "-show-payloads", "-config", path)
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, `value "`+secret+`"`) {
		t.Errorf("with -show-payloads, the output lacks the value %q:\n%s", secret, out)
	}
}
