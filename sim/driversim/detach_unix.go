//go:build unix

package driversim

import (
	"os/exec"
	"syscall"
)

// detach starts cmd in a process group of its own: a Ctrl-C at the
// terminal reaches the command that started the worker, which decides
// what becomes of the runs in flight, and not the worker itself.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
