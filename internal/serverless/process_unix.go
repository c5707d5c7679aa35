//go:build unix

package serverless

import (
	"os"
	"syscall"
)

// ownGroup starts a process in a process group of its own, so that it can be killed with
// every process it started.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills a process's group: the process and whatever it started in it.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
