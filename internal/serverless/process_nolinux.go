//go:build unix && !linux

package serverless

import "syscall"

// dieWithNode does nothing where no parent-death signal exists: a process outlives a node that dies.
func dieWithNode(*syscall.SysProcAttr) {}
