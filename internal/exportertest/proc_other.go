//go:build !linux

package exportertest

import "syscall"

// sysProcAttr puts a server in its own process group, so a Ctrl-C in the
// terminal reaches only our process, which then stops the server in order.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
