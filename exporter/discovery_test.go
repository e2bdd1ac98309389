package exporter

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetlake/jetlake/config"
)

// fakeNATS is a NATS server that speaks just enough of the protocol for a
// client to connect: it sends an INFO advertising connectURLs, answers the
// client's PING, and records the CONNECT line of each connection.
type fakeNATS struct {
	ln          net.Listener
	connectURLs []string
	hangUp      bool // close each connection once it is established

	mu       sync.Mutex
	connects []string
}

func startFakeNATS(t *testing.T, connectURLs []string, hangUp bool) *fakeNATS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeNATS{ln: ln, connectURLs: connectURLs, hangUp: hangUp}
	t.Cleanup(func() { ln.Close() })
	go s.serve()
	return s
}

func (s *fakeNATS) addr() string { return s.ln.Addr().String() }

func (s *fakeNATS) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.handle(c)
	}
}

func (s *fakeNATS) handle(c net.Conn) {
	defer c.Close()
	urls := `[]`
	if len(s.connectURLs) > 0 {
		urls = `["` + strings.Join(s.connectURLs, `","`) + `"]`
	}
	host, port, _ := net.SplitHostPort(s.addr())
	fmt.Fprintf(c, `INFO {"server_id":"FAKE","version":"2.10.0","go":"go1","host":%q,"port":%s,"max_payload":1048576,"proto":1,"auth_required":true,"connect_urls":%s}`+"\r\n", host, port, urls)
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		switch {
		case strings.HasPrefix(line, "CONNECT"):
			s.mu.Lock()
			s.connects = append(s.connects, line)
			s.mu.Unlock()
		case strings.HasPrefix(line, "PING"):
			io.WriteString(c, "PONG\r\n")
			if s.hangUp {
				time.Sleep(100 * time.Millisecond)
				return
			}
		}
	}
}

func (s *fakeNATS) connections() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.connects...)
}

// A server's INFO advertises the other servers of its cluster; jetlake
// reconnects only to the servers its url names, so the password of [nats]
// never goes to a host the configuration did not name, in plain text or
// not.
func TestReconnectsGoOnlyToTheConfiguredServers(t *testing.T) {
	other := startFakeNATS(t, nil, false)
	seed := startFakeNATS(t, []string{other.addr()}, true)
	t.Setenv("JETLAKE_TEST_NATS_PASSWORD", "Hunter2")
	e := &Exporter{
		cfg: &config.Connector{Name: "discovery", NATS: config.NATS{
			URL: "nats://" + seed.addr(), User: "exporter", PasswordEnv: "JETLAKE_TEST_NATS_PASSWORD",
		}},
		log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc, err := e.connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// The seed hangs up every connection: the client reconnects, to the
	// seed after its reconnect wait, or at once to a server it was told of.
	deadline := time.Now().Add(15 * time.Second)
	for len(seed.connections()) < 2 && len(other.connections()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := other.connections(); len(got) > 0 {
		t.Fatalf("the advertised server got %d connections, the first %s", len(got), got[0])
	}
	if n := len(seed.connections()); n < 2 {
		t.Fatalf("the seed got %d connections, want a reconnect", n)
	}
	if !strings.Contains(seed.connections()[0], "Hunter2") {
		t.Fatalf("the seed's CONNECT has no password: %s", seed.connections()[0])
	}
}
