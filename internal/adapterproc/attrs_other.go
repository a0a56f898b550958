//go:build !linux

package adapterproc

import "syscall"

// ChildAttrs: only Linux can tie a child's life to its parent's.
func ChildAttrs() *syscall.SysProcAttr { return nil }
