//go:build !unix

package serverless

import (
	"os"
	"syscall"
)

// ownGroup is nil where process groups are not supported: only the process itself is killed.
func ownGroup() *syscall.SysProcAttr { return nil }

// killGroup kills the process.
func killGroup(p *os.Process) { _ = p.Kill() }
