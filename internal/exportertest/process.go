package exportertest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Defaults for the zero values of the option structs.
const (
	DefaultStartTimeout = 60 * time.Second
	DefaultStopTimeout  = 10 * time.Second
)

// pollInterval is how often readiness is checked while a server starts.
const pollInterval = 50 * time.Millisecond

// ErrStopped is returned by Restart and Kill after Stop.
var ErrStopped = errors.New("exportertest: server was stopped")

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// port is not reserved: a start that loses it to another process is retried
// with a new port by StartNATS and StartMinIO.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("exportertest: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// serverDir returns the directory a server keeps its files in: dir, made if
// missing, or a new temporary directory (temp) that the server's Stop
// removes when dir is empty.
func serverDir(dir, name string) (_ string, temp bool, err error) {
	if dir == "" {
		if dir, err = os.MkdirTemp("", "jetlake-"+name+"-"); err != nil {
			return "", false, fmt.Errorf("exportertest: start %s: %w", name, err)
		}
		return dir, true, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, fmt.Errorf("exportertest: start %s: %w", name, err)
	}
	return dir, false, nil
}

// process is one run of a server binary. Its output goes to a log file; a
// goroutine reaps it as soon as it exits, so done says whether it still runs.
type process struct {
	name    string // for messages: "nats-server" or "minio"
	cmd     *exec.Cmd
	logFile string
	done    chan struct{} // closed once the process has exited and was reaped
	err     error         // result of Wait, valid once done is closed
}

// startProcess starts bin with args and env (nil env inherits this
// process's environment), appending stdout and stderr to logFile.
func startProcess(name, bin string, args, env []string, logFile string) (*process, error) {
	return startProcessAs(name, bin, args, env, logFile, nil)
}

// startProcessAs is startProcess with the process running as cred's user
// (nil: this process's).
func startProcessAs(name, bin string, args, env []string, logFile string, cred *syscall.Credential) (*process, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("exportertest: start %s: %w", name, err)
	}
	defer log.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = sysProcAttr()
	cmd.SysProcAttr.Credential = cred
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("exportertest: start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logFile: logFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitReady calls ready until it reports true, the process exits or timeout
// passes. The error carries the end of the log, where the server says why.
func (p *process) waitReady(timeout time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if ready() {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("exportertest: %s exited during start-up (%v)%s", p.name, p.err, p.logTail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("exportertest: %s not ready after %v%s", p.name, timeout, p.logTail())
		}
		select {
		case <-p.done:
		case <-time.After(pollInterval):
		}
	}
}

// stop sends SIGTERM, waits up to timeout for the process to exit, then
// sends SIGKILL and waits again. Signals go to our child's PID only; since
// the child was reaped by the goroutine in startProcess, a stopped PID is
// never signalled again.
func (p *process) stop(timeout time.Duration) error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("exportertest: stop %s: %w", p.name, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
	}
	return p.kill()
}

// kill sends SIGKILL and waits for the process to exit.
func (p *process) kill() error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("exportertest: kill %s: %w", p.name, err)
	}
	<-p.done
	return nil
}

// logTail returns the last lines of the log file, formatted to be appended to
// an error message.
func (p *process) logTail() string {
	f, err := os.Open(p.logFile)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 4 << 10
	if info, err := f.Stat(); err == nil && info.Size() > max {
		f.Seek(info.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return " (log " + p.logFile + " is empty)"
	}
	return "; end of " + p.logFile + ":\n" + string(b)
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

// pid returns the process id of p, or 0 when p is nil or has exited.
func (p *process) pid() int {
	if p == nil || p.exited() {
		return 0
	}
	return p.cmd.Process.Pid
}
