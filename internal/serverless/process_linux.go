package serverless

import "syscall"

// dieWithNode has the kernel kill the process when the thread that started it ends: execute keeps
// that thread locked until the process is reaped, so it ends only when the node dies.
func dieWithNode(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
