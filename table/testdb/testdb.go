// Package testdb opens fresh table.DBs for the tests of packages that run on
// both backends: Pebble in the test's temporary directory, and the test HBase
// (hbasetest) under a table-name prefix of the test's own, each closed when
// the test ends. It owns opening and closing only: it must not know any table
// layout.
package testdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/hbasetable"
	"github.com/prom-hbase/prom-hbase/table/pebbletable"
)

// Backend opens a fresh DB and returns it with the table-name prefix the test
// is to use in it.
type Backend struct {
	Name string
	Open func(tb testing.TB) (table.DB, string)
}

// Backends lists Pebble and HBase; owner (a package name) begins the HBase
// prefixes, so that tables a failed run left behind say whose they are.
func Backends(owner string) []Backend {
	return []Backend{
		{Name: "pebble", Open: Pebble},
		{Name: "hbase", Open: func(tb testing.TB) (table.DB, string) { return HBase(tb, owner) }},
	}
}

// ForEach runs f as a subtest on each backend, with a fresh DB.
func ForEach(t *testing.T, owner string, f func(t *testing.T, db table.DB, prefix string)) {
	for _, b := range Backends(owner) {
		t.Run(b.Name, func(t *testing.T) {
			db, prefix := b.Open(t)
			f(t, db, prefix)
		})
	}
}

// Pebble opens a DB in a temporary directory of tb's; the prefix is empty,
// since nothing else shares it.
func Pebble(tb testing.TB) (table.DB, string) {
	tb.Helper()
	db, err := pebbletable.Open(tb.TempDir(), pebbletable.Options{})
	if err != nil {
		tb.Fatalf("opening pebble: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db, ""
}

// HBase connects to the test HBase (skipped or failed without one, as
// hbasetest.ZK says) and returns a prefix no other test uses: owner and the
// time in nanoseconds.
func HBase(tb testing.TB, owner string) (table.DB, string) {
	tb.Helper()
	zk := hbasetest.ZK(tb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := hbasetable.Open(ctx, hbasetable.Config{ZooKeeper: zk, ZKRoot: hbasetest.ZKRoot()})
	if err != nil {
		tb.Fatalf("connecting to the test HBase at %s: %v", zk, err)
	}
	tb.Cleanup(func() { db.Close() })
	return db, fmt.Sprintf("%s_%d_", owner, time.Now().UnixNano())
}
