package exportertest

import "syscall"

// sysProcAttr puts a server in its own process group, so a Ctrl-C in the
// terminal reaches only our process, which then stops the server in order;
// and it asks the kernel to kill the server if our process dies first (a test
// binary killed on timeout must not leave servers behind).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
