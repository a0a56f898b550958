// Package hbasetest connects tests to the real HBase that the test command
// starts (scripts/hbase.sh). It owns the environment contract only: it must
// not know any table layout.
package hbasetest

import (
	"os"
	"testing"
)

// EnvZK names the environment variable holding the ZooKeeper address
// (host:port) of the HBase that tests run against.
const EnvZK = "PROMHBASE_TEST_ZK"

// EnvZKRoot optionally names the ZooKeeper root znode (default /hbase).
const EnvZKRoot = "PROMHBASE_TEST_ZK_ROOT"

// ZK returns the ZooKeeper address of the test HBase. Without one, the test
// fails when CI=true (a CI run must never skip HBase tests) and is skipped
// otherwise, with a message that says how to run it.
func ZK(tb testing.TB) string {
	tb.Helper()
	if zk := os.Getenv(EnvZK); zk != "" {
		return zk
	}
	missing(tb, EnvZK+" is not set: run `make test`, or start HBase with `scripts/hbase.sh start` and export the line `scripts/hbase.sh env` prints")
	return ""
}

// missing ends a test that lacks its HBase: a failure in CI, where nothing
// may be skipped, and a skip on a developer's machine.
func missing(tb testing.TB, msg string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// ZKRoot returns the ZooKeeper root znode of the test HBase.
func ZKRoot() string {
	if r := os.Getenv(EnvZKRoot); r != "" {
		return r
	}
	return "/hbase"
}

// EnvRunDir names the environment variable holding the HBASE_RUN_DIR of the
// test HBase (scripts/hbase.sh), set only when tests may stop and resume it.
// The test command sets it for the packages it runs one at a time, never for
// packages that run side by side.
const EnvRunDir = "PROMHBASE_TEST_HBASE_RUN_DIR"

// RunDir returns the run directory of an HBase the calling test may stop and
// resume. Without one, the test fails when CI=true and is skipped otherwise.
func RunDir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv(EnvRunDir); d != "" {
		return d
	}
	missing(tb, EnvRunDir+" is not set: this test stops and resumes the HBase in that directory; run `make test`")
	return ""
}
