package exportertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSOptions configures StartNATS. The zero value starts a server on a free
// port in a new temporary directory.
type NATSOptions struct {
	// Dir holds the JetStream store and the log. Empty means a new
	// temporary directory, removed by Stop; a given Dir is kept.
	Dir string
	// Port on 127.0.0.1. Zero means a free port.
	Port int
	// Args are extra command-line arguments for nats-server.
	Args []string
	// StartTimeout bounds the wait for the server to serve JetStream;
	// zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// StopTimeout is how long Stop and Restart wait after SIGTERM before
	// they send SIGKILL; zero means DefaultStopTimeout.
	StopTimeout time.Duration
}

// NATSServer is a running nats-server with JetStream enabled, listening on
// 127.0.0.1. Its methods are safe for concurrent use.
type NATSServer struct {
	URL      string // nats://127.0.0.1:<Port>
	Port     int
	Dir      string // holds StoreDir and LogFile
	StoreDir string // the JetStream store (-sd)
	LogFile  string // the server's log (-l)

	binary  string
	opts    NATSOptions
	tempDir bool // Dir was created by StartNATS and is removed by Stop

	mu      sync.Mutex
	proc    *process
	stopped bool
}

// StartNATS starts a nats-server built from NATSServerBinary and returns once
// it accepts connections and answers JetStream requests. When opts.Port is
// zero and the chosen port is taken by someone else before the server binds
// it, the start is retried on a new port.
func StartNATS(opts NATSOptions) (*NATSServer, error) {
	bin, err := NATSServerBinary()
	if err != nil {
		return nil, err
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	s := &NATSServer{binary: bin, opts: opts, Dir: opts.Dir}
	if s.Dir, s.tempDir, err = serverDir(opts.Dir, "nats"); err != nil {
		return nil, err
	}
	s.StoreDir = filepath.Join(s.Dir, "store")
	s.LogFile = filepath.Join(s.Dir, "nats-server.log")

	for attempt := 1; ; attempt++ {
		if s.Port, err = choosePort(opts.Port); err == nil {
			s.URL = "nats://127.0.0.1:" + strconv.Itoa(s.Port)
			err = s.start()
		}
		if err == nil || opts.Port != 0 || attempt == 3 || portFree(s.Port) {
			break
		}
	}
	if err != nil {
		s.removeTempDir()
		return nil, err
	}
	return s, nil
}

// choosePort returns port, or a free port when port is zero. An explicit port
// that is taken is an error that names it.
func choosePort(port int) (int, error) {
	if port == 0 {
		return FreePort()
	}
	if !portFree(port) {
		return 0, fmt.Errorf("exportertest: port %d on 127.0.0.1 is already in use", port)
	}
	return port, nil
}

// start runs the server and waits for it to serve JetStream. The caller
// holds mu or owns s exclusively.
func (s *NATSServer) start() error {
	args := append([]string{
		"-a", "127.0.0.1",
		"-p", strconv.Itoa(s.Port),
		"-js",
		"-sd", s.StoreDir,
		"-l", s.LogFile,
	}, s.opts.Args...)
	p, err := startProcess("nats-server", s.binary, args, nil, s.LogFile)
	if err != nil {
		return err
	}
	if err := p.waitReady(s.opts.StartTimeout, s.ready); err != nil {
		p.kill()
		return err
	}
	s.proc = p
	return nil
}

// ready reports whether the server accepts a connection and answers a
// JetStream account request.
func (s *NATSServer) ready() bool {
	nc, err := nats.Connect(s.URL, nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return false
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err == nil
}

// Connect connects to the server. The options come after the defaults
// (the connection name "exportertest"), so they can override them.
func (s *NATSServer) Connect(opts ...nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect(s.URL, append([]nats.Option{nats.Name("exportertest")}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("exportertest: connect to %s: %w", s.URL, err)
	}
	return nc, nil
}

// Stop ends the server: SIGTERM, then SIGKILL after the stop timeout. It
// removes the temporary directory StartNATS created (a given Dir is kept).
// Stop is idempotent; the server cannot be restarted afterwards.
func (s *NATSServer) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	var err error
	if s.proc != nil {
		err = s.proc.stop(s.opts.StopTimeout)
	}
	if err == nil {
		err = s.removeTempDir()
	}
	return err
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it to
// exit. The store is kept, so Restart brings the server back with its data.
// It returns ErrStopped after Stop.
func (s *NATSServer) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	return s.proc.kill()
}

// Restart stops the server if it still runs (as Stop does, but keeping the
// store) and starts it again on the same port with the same store. It
// returns once JetStream answers again, or ErrStopped after Stop.
func (s *NATSServer) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	if err := s.proc.stop(s.opts.StopTimeout); err != nil {
		return err
	}
	return s.start()
}

func (s *NATSServer) removeTempDir() error {
	if !s.tempDir {
		return nil
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		return fmt.Errorf("exportertest: remove %s: %w", s.Dir, err)
	}
	return nil
}

// PID returns the process id of the running server, or 0 when it is not
// running.
func (s *NATSServer) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc.pid()
}
