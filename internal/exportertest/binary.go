package exportertest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Pinned server versions. Tests, the demo and the Makefile all use these, so
// every run talks to the same servers.
const (
	NATSServerVersion = "v2.15.2"
	MinIOVersion      = "v0.0.0-20260212201848-7aac2a2c5b7c"
)

// Module paths the servers are built from.
const (
	NATSServerModule = "github.com/nats-io/nats-server/v2"
	MinIOModule      = "github.com/minio/minio"
)

// Environment variables that name a server binary to use instead of the
// cached build.
const (
	EnvNATSServer = "JETLAKE_NATS_SERVER"
	EnvMinIO      = "JETLAKE_MINIO"
	EnvCache      = "JETLAKE_CACHE"
)

// CacheDir returns the directory that holds the server builds:
// $JETLAKE_CACHE, or $HOME/.cache/jetlake.
func CacheDir() (string, error) {
	if dir := os.Getenv(EnvCache); dir != "" {
		return dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("exportertest: no cache directory (set %s): %w", EnvCache, err)
	}
	return filepath.Join(home, ".cache", "jetlake"), nil
}

// NATSServerBinary returns the path of the pinned nats-server binary:
// $JETLAKE_NATS_SERVER if set, else
// <cache>/nats-server-<version>/nats-server, which is built with
// "go install" first if it is missing.
func NATSServerBinary() (string, error) {
	return serverBinary(EnvNATSServer, "nats-server", NATSServerModule, NATSServerVersion)
}

// MinIOBinary returns the path of the pinned MinIO binary: $JETLAKE_MINIO if
// set, else <cache>/minio-<version>/minio, which is built with "go install"
// first if it is missing (a build of MinIO takes several minutes).
func MinIOBinary() (string, error) {
	return serverBinary(EnvMinIO, "minio", MinIOModule, MinIOVersion)
}

func serverBinary(env, name, module, version string) (string, error) {
	if path := os.Getenv(env); path != "" {
		if err := checkExecutable(path); err != nil {
			return "", fmt.Errorf("exportertest: %s: %w", env, err)
		}
		return path, nil
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, name+"-"+version)
	path := filepath.Join(dir, name)
	if checkExecutable(path) == nil {
		return path, nil
	}
	if err := install(dir, name, module+"@"+version); err != nil {
		return "", err
	}
	return path, nil
}

func checkExecutable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// install builds pkg into dir/name. Test packages run in parallel and may all
// find the binary missing, so a lock file makes one of them build while the
// others wait, and the binary is renamed into place only once it is complete.
func install(dir, name, pkg string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("exportertest: build %s: %w", pkg, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("exportertest: build %s: %w", pkg, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("exportertest: build %s: lock: %w", pkg, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	path := filepath.Join(dir, name)
	if checkExecutable(path) == nil {
		return nil // another process built it while we waited
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("exportertest: build %s: the go command is not on PATH: %w", pkg, err)
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return fmt.Errorf("exportertest: build %s: %w", pkg, err)
	}
	defer os.RemoveAll(tmp)

	cmd := exec.Command(goBin, "install", pkg)
	cmd.Dir = tmp // outside any module, so the repository's go.mod plays no part
	cmd.Env = Environ("GOBIN=", "GOBIN="+tmp)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("exportertest: go install %s: %w\n%s", pkg, err, bytes.TrimSpace(out.Bytes()))
	}
	if err := os.Rename(filepath.Join(tmp, name), path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("exportertest: go install %s produced no %s binary", pkg, name)
		}
		return fmt.Errorf("exportertest: build %s: %w", pkg, err)
	}
	return nil
}
