package main

import (
	"context"
	"testing"

	"github.com/prom-hbase/prom-hbase/table/pebbletable"
)

// TestDataRegionsFlag: a count passes as it is; "auto" asks HBase, and on the
// embedded backend, which has no regions, means the default; anything else
// is refused.
func TestDataRegionsFlag(t *testing.T) {
	db, err := pebbletable.Open(t.TempDir(), pebbletable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for flag, want := range map[string]int{"0": 0, "3": 3, "auto": 0} {
		if got, err := dataRegions(context.Background(), db, flag); err != nil || got != want {
			t.Errorf("--hbase.data-regions=%s: %d, %v; want %d", flag, got, err, want)
		}
	}
	for _, flag := range []string{"-1", "x", ""} {
		if _, err := dataRegions(context.Background(), db, flag); err == nil {
			t.Errorf("--hbase.data-regions=%q accepted", flag)
		}
	}
}
