package clustertest

import "syscall"

// childAttrs make the adapter die with the test binary, which a timeout
// ends without running cleanups.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
