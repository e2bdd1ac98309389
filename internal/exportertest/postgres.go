package exportertest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// EnvPostgresBin names the folder holding the PostgreSQL server binaries
// (initdb, postgres); by default the newest /usr/lib/postgresql/*/bin, where
// Debian's postgresql package puts them (make postgres installs it).
const EnvPostgresBin = "JETLAKE_POSTGRES_BIN"

// PostgresOptions configure StartPostgres. The zero value picks a free port
// and a temporary directory.
type PostgresOptions struct {
	// Dir holds the cluster (DataDir), its sockets and LogFile; empty
	// means a temporary directory that Stop removes.
	Dir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one.
	Port         int
	StartTimeout time.Duration // 0 means DefaultStartTimeout
	StopTimeout  time.Duration // 0 means DefaultStopTimeout
}

// PostgresServer is a PostgreSQL server started for tests: a fresh cluster
// listening on 127.0.0.1 only, where user "jetlake" owns database "jetlake"
// and needs no password.
type PostgresServer struct {
	URL     string // postgres://jetlake@127.0.0.1:<Port>/jetlake?sslmode=disable
	Port    int
	Dir     string
	DataDir string
	LogFile string

	opts    PostgresOptions
	tempDir bool
	proc    *process
}

// PostgresBinDir returns the folder of the PostgreSQL server binaries.
func PostgresBinDir() (string, error) {
	if dir := os.Getenv(EnvPostgresBin); dir != "" {
		if err := checkExecutable(filepath.Join(dir, "postgres")); err != nil {
			return "", fmt.Errorf("exportertest: %s: %w", EnvPostgresBin, err)
		}
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, dir := range dirs {
		if checkExecutable(filepath.Join(dir, "postgres")) == nil && checkExecutable(filepath.Join(dir, "initdb")) == nil {
			return dir, nil
		}
	}
	return "", errors.New("exportertest: no PostgreSQL server under /usr/lib/postgresql/*/bin: run make postgres (Debian's postgresql package), or set " + EnvPostgresBin)
}

// StartPostgres creates a cluster and starts a server on it, and returns
// once it accepts connections. PostgreSQL refuses to run as root: when this
// process is root, the server runs as the system user "postgres".
func StartPostgres(opts PostgresOptions) (*PostgresServer, error) {
	bin, err := PostgresBinDir()
	if err != nil {
		return nil, err
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	s := &PostgresServer{opts: opts, Dir: opts.Dir}
	if s.Dir, s.tempDir, err = serverDir(opts.Dir, "postgres"); err != nil {
		return nil, err
	}
	s.DataDir = filepath.Join(s.Dir, "data")
	s.LogFile = filepath.Join(s.Dir, "postgres.log")
	cred, err := postgresCredential(s.Dir)
	if err != nil {
		s.removeTempDir()
		return nil, err
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", s.DataDir, "-U", "jetlake", "-A", "trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		s.removeTempDir()
		return nil, fmt.Errorf("exportertest: initdb: %w\n%s", err, out)
	}
	if s.Port, err = choosePort(opts.Port); err != nil {
		s.removeTempDir()
		return nil, err
	}
	args := []string{"-D", s.DataDir, "-p", strconv.Itoa(s.Port), "-k", s.Dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"}
	if s.proc, err = startProcessAs("postgres", filepath.Join(bin, "postgres"), args, nil, s.LogFile, cred); err != nil {
		s.removeTempDir()
		return nil, err
	}
	s.URL = fmt.Sprintf("postgres://jetlake@127.0.0.1:%d/jetlake?sslmode=disable", s.Port)
	admin := fmt.Sprintf("postgres://jetlake@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
	if err := s.proc.waitReady(opts.StartTimeout, func() bool { return ping(admin) == nil }); err != nil {
		s.Stop()
		return nil, err
	}
	if err := exec1(admin, "CREATE DATABASE jetlake"); err != nil {
		s.Stop()
		return nil, fmt.Errorf("exportertest: create database: %w", err)
	}
	return s, nil
}

// postgresCredential returns the credential to run PostgreSQL with, and
// gives dir to that user: nil, and nothing to do, unless this process is
// root.
func postgresCredential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("exportertest: PostgreSQL does not run as root, and there is no user postgres to run it as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, fmt.Errorf("exportertest: start postgres: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func ping(url string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

func exec1(url, stmt string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// Stop stops the server and removes its directory when StartPostgres made
// it.
func (s *PostgresServer) Stop() error {
	var err error
	if s.proc != nil {
		err = s.proc.stop(s.opts.StopTimeout)
	}
	return errors.Join(err, s.removeTempDir())
}

func (s *PostgresServer) removeTempDir() error {
	if !s.tempDir {
		return nil
	}
	s.tempDir = false
	return os.RemoveAll(s.Dir)
}
