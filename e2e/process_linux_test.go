package e2e

import "syscall"

// childAttrs make a child die with the test binary: a test that times out
// panics without running its cleanups, and adapters left running would
// write into the next package's HBase for the rest of the run (seen in CI,
// 2026-11-27).
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
