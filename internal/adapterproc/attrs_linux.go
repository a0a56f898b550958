package adapterproc

import "syscall"

// ChildAttrs make a child die with its parent: a test that times out
// panics without running its cleanups, and adapters left running would
// write into the next package's HBase for the rest of the run (seen in CI,
// 2026-11-27).
func ChildAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
