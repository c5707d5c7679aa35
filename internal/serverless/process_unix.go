//go:build unix

package serverless

import (
	"os"
	"syscall"
)

// ownGroup starts a process in a process group of its own, so that it can be killed with
// every process it started; on Linux the process is also killed when the node dies.
func ownGroup() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	dieWithNode(a)
	return a
}

// killGroup kills a process's group: the process and whatever it started in it.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
