package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetlake/jetlake/config"
	"github.com/jetlake/jetlake/internal/exportertest"
)

// permUser is a NATS user of its own for one connector, on a server of
// permServer's.
type permUser struct {
	name   string // user, connector, bucket; the stream is its upper case
	stream string
	file   string // the connector file
	perms  string // the permissions block the user gets
}

// permConnector writes the connector file of user name: the whole stream
// <NAME> on name.>, or the subjects given, with the extra lines of the
// stream entry and extra sections after the others. url is the server's.
func permConnector(t *testing.T, file, name, url, subjects, entry, sections string) {
	t.Helper()
	body := fmt.Sprintf(`name = %[1]q
shutdown_timeout = "10s"
[nats]
url = %[2]q
user = %[1]q
password_env = "PERM_NATS_PASSWORD"
[[streams]]
stream = %[3]q
%[4]s
ack_wait = "15s"
%[5]s
[s3]
bucket = %[1]q
endpoint = %[6]q
prefix = "lake"
[rotation]
max_messages_per_file = 300
max_file_age = "2s"
%[7]s`, name, url, strings.ToUpper(name), subjects, entry, shared.MinIO(t).Endpoint, sections)
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// permServer starts a nats-server whose users are an admin, the
// no_auth_user the test connects as, and one user per connector with the
// permissions edit makes of what plan prints for it. Each connector file
// is written by write with the server's URL; the users' password is in
// PERM_NATS_PASSWORD of permEnv.
func permServer(t *testing.T, names []string, write func(file, name, url string), edit func(name, perms string) string) (*exportertest.NATSServer, []*permUser) {
	t.Helper()
	var users []*permUser
	var conf strings.Builder
	conf.WriteString("authorization {\n  users = [\n    {user: admin, password: admin}\n")
	for _, name := range names {
		u := &permUser{name: name, stream: strings.ToUpper(name), file: filepath.Join(t.TempDir(), name+".toml")}
		write(u.file, name, "nats://127.0.0.1:4222") // the permissions do not depend on the URL
		conns, err := config.Load(u.file)
		if err != nil {
			t.Fatal(err)
		}
		u.perms = edit(name, natsPermissions(conns[0]))
		fmt.Fprintf(&conf, "    {\n      user: %s\n      password: %s\n      %s\n    }\n", name, permPassword, strings.ReplaceAll(u.perms, "\n", "\n      "))
		users = append(users, u)
	}
	conf.WriteString("  ]\n}\nno_auth_user: admin\n")
	path := filepath.Join(t.TempDir(), "server.conf")
	if err := os.WriteFile(path, []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := exportertest.NATS(t, exportertest.NATSOptions{Args: []string{"-c", path}})
	nc, err := ns.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	for _, u := range users {
		write(u.file, u.name, ns.URL)
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: u.stream, Subjects: []string{u.name + ".>"}, Retention: permRetention[u.name]}); err != nil {
			t.Fatal(err)
		}
		if err := shared.MinIO(t).CreateBucket(context.Background(), u.name); err != nil {
			t.Fatal(err)
		}
	}
	return ns, users
}

const permPassword = "perm-pw-5512"

// permRetention is the retention of a user's stream, limits when not
// named: jetlake acks only what it reads with explicit acks, so the user
// refused acks reads a work-queue stream.
var permRetention = map[string]jetstream.RetentionPolicy{"permnoack": jetstream.WorkQueuePolicy}

// permEnv is the environment of jetlake as a connector's NATS user.
func permEnv(t *testing.T) []string {
	return shared.MinIO(t).ClientEnv("PERM_NATS_PASSWORD=" + permPassword)
}

// permPublish publishes n messages to stream, alternating between the
// subjects <name>.a.<i%3> and <name>.b.<i%3>, and deletes the message at
// sequence del (0: none), so that the consumer's ledger has a gap that a
// walk of the stream looks up.
func permPublish(t *testing.T, ns *exportertest.NATSServer, u *permUser, n int, del uint64) {
	t.Helper()
	nc, err := ns.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	for i := range n {
		ab := []string{"a", "b"}[i%2]
		if _, err := js.PublishAsync(fmt.Sprintf("%s.%s.%d", u.name, ab, i%3), fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatal("publishing took more than 30s")
	}
	if del != 0 {
		st, err := js.Stream(ctx, u.stream)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.DeleteMsg(ctx, del); err != nil {
			t.Fatal(err)
		}
	}
}

// Each kind of connector runs with exactly the NATS permissions plan
// prints for it, as a user of its own: a plain one, one whose subjects
// are part of its stream, a partitioned one, a pinned one and one that
// writes an Iceberg table. plan, two runs with -until-idle (the first
// creates what the later ones find: the state bucket, the consumers, the
// partition transform) and verify -deep succeed, with a message deleted
// from the stream on the way so that walks look the stream up (its loss
// marker is found), and the server logs no permissions violation.
func TestThePrintedNATSPermissionsServeEveryKindOfConnector(t *testing.T) {
	kinds := map[string]struct{ subjects, entry, sections string }{
		"permplain":    {},
		"permfiltered": {subjects: `subjects = ["permfiltered.a.>"]`},
		"permparts":    {entry: "partitions = 2\nlease_ttl = \"3s\"\npriority_timeout = \"5s\""},
		"permpinned":   {entry: "failover = \"pinned\"\npriority_timeout = \"5s\""},
		"permiceberg": {sections: "[output]\nformat = \"parquet\"\n[iceberg]\nuri = \"sqlite://" + filepath.Join(t.TempDir(), "catalog.db") +
			"\"\nnamespace = \"lake\"\ntable = \"events\"\ncommit_interval = \"1s\"\n"},
	}
	names := []string{"permplain", "permfiltered", "permparts", "permpinned", "permiceberg"}
	ns, users := permServer(t, names, func(file, name, url string) {
		k := kinds[name]
		permConnector(t, file, name, url, k.subjects, k.entry, k.sections)
	}, func(_, perms string) string { return perms })
	env := permEnv(t)
	for _, u := range users {
		t.Run(strings.TrimPrefix(u.name, "perm"), func(t *testing.T) {
			t.Parallel()
			t.Logf("permissions:\n%s", u.perms)
			if code, out, errOut := jetlakeEnv(t, env, "plan", "-config", u.file); code != 0 {
				t.Fatalf("plan as the user: exit %d\n%s%s", code, out, errOut)
			}
			// A partition's walks look the stream up anyway: its holes
			// are the other partition's messages. (A message deleted
			// from a partitioned stream gets no loss marker, and verify
			// finds it missing: a matter of its own.)
			var del uint64 = 5
			if u.name == "permparts" {
				del = 0
			}
			permPublish(t, ns, u, 600, del)
			for i := range 2 {
				cmd := exec.Command(binary, "run", "-until-idle", "-config", u.file)
				cmd.Env = env
				if out, err := runWithTimeout(cmd, 90*time.Second); err != nil {
					t.Fatalf("run %d as the user: %v\n%s", i+1, err, out)
				}
				if i == 0 {
					permPublish(t, ns, u, 600, 0)
				}
			}
			cmd := exec.Command(binary, "verify", "-deep", "-quiet", "-config", u.file)
			cmd.Env = env
			out, err := runWithTimeout(cmd, time.Minute)
			if err != nil || !strings.Contains(string(out), "OK: every sequence") {
				t.Fatalf("verify -deep as the user: %v\n%s", err, out)
			}
			if del != 0 && u.name != "permfiltered" && !strings.Contains(string(out), "LOST 5 ") {
				t.Errorf("verify does not count the deleted message 5 lost:\n%s", out)
			}
		})
	}
	t.Cleanup(func() {
		if v := grepLines(ns.LogFile, "Violation"); v != "" {
			t.Errorf("the server logged permissions violations:\n%s", v)
		}
	})
}

// A grant missing from the user's permissions stops jetlake with one line
// that names the subject and the permission to add: run -until-idle exits
// 1 instead of retrying a time-out for ever, whether the refusal comes
// while it sets up (the consumer's info) or while it runs (a walk's
// look-up of a deleted message, at once; the acks, within the shutdown
// timeout its stored objects wait for their acks), and plan prints the
// same line where it printed the time-out.
func TestAMissingNATSGrantStopsJetlakeWithTheSubjectToAllow(t *testing.T) {
	drop := map[string]string{
		"permnoinfo":   "$JS.API.CONSUMER.INFO.PERMNOINFO.permnoinfo",
		"permnolookup": "$JS.API.STREAM.MSG.GET.PERMNOLOOKUP",
		"permnoack":    "$JS.ACK.PERMNOACK.permnoack.>",
	}
	// The line names what was refused, and the grant to add: an ack's
	// subject is the message's own, the grant covers every ack.
	refused := map[string]string{
		"permnoinfo":   regexp.QuoteMeta(`publish to "$JS.API.CONSUMER.INFO.PERMNOINFO.permnoinfo": add it`),
		"permnolookup": regexp.QuoteMeta(`publish to "$JS.API.STREAM.MSG.GET.PERMNOLOOKUP": add it`),
		"permnoack":    regexp.QuoteMeta(`publish to "$JS.ACK.PERMNOACK.permnoack.`) + `[0-9.]+": add "` + regexp.QuoteMeta(`$JS.ACK.PERMNOACK.permnoack.>`) + `"`,
	}
	ns, users := permServer(t, []string{"permnoinfo", "permnolookup", "permnoack"}, func(file, name, url string) {
		permConnector(t, file, name, url, "", "", "")
	}, func(name, perms string) string {
		line := fmt.Sprintf("%q\n", drop[name])
		if !strings.Contains(perms, line) {
			t.Fatalf("plan prints no %s", line)
		}
		return strings.Replace(perms, line, "\n", 1)
	})
	env := permEnv(t)
	for _, u := range users {
		t.Run(strings.TrimPrefix(u.name, "perm"), func(t *testing.T) {
			t.Parallel()
			want := regexp.MustCompile(`^jetlake: connector ` + u.name + `: nats: permission denied: ` + refused[u.name] + ` to the user's publish permissions \(`)
			permPublish(t, ns, u, 100, 5)
			start := time.Now()
			cmd := exec.Command(binary, "run", "-until-idle", "-config", u.file)
			cmd.Env = env
			out, err := runWithTimeout(cmd, time.Minute)
			took := time.Since(start)
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			last := lines[len(lines)-1]
			if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || !want.MatchString(last) {
				t.Fatalf("run -until-idle: %v after %s, want exit 1 and a last line matching %s:\n%s", err, took.Round(time.Millisecond), want, out)
			}
			// Refused acks leave the uploads waiting for their
			// confirmations until the shutdown timeout, 10s.
			if took > 20*time.Second {
				t.Errorf("run -until-idle took %s to stop", took.Round(time.Second))
			}
			t.Logf("stopped after %s: %s", took.Round(time.Millisecond), last)
			if u.name != "permnoinfo" {
				return
			}
			code, planOut, errOut := jetlakeEnv(t, env, "plan", "-config", u.file)
			wantPlan := "FAIL  stream PERMNOINFO, consumer permnoinfo: " + strings.TrimPrefix(last, "jetlake: connector permnoinfo: ")
			if code != 1 || !strings.Contains(planOut, wantPlan) || strings.Contains(planOut, "deadline exceeded") {
				t.Fatalf("plan: exit %d, want 1 and %q:\n%s%s", code, wantPlan, planOut, errOut)
			}
		})
	}
}
