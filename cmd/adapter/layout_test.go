package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/store"
	"github.com/prom-hbase/prom-hbase/table/pebbletable"
)

// TestDefaultLayout: new embedded stores have no salt byte, new HBase
// tables the store's default salt; a layout flag given overrides either.
func TestDefaultLayout(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		flags storageFlags
		want  int
	}{
		{"embedded", storageFlags{storagePath: "data/"}, EmbeddedSaltBuckets},
		{"embedded, --salt.buckets=8", storageFlags{storagePath: "data/", layout: rowkey.Layout{SaltBuckets: 8}}, 8},
		{"hbase", storageFlags{zkQuorum: "127.0.0.1:2181"}, rowkey.DefaultLayout.SaltBuckets},
	} {
		db, err := pebbletable.Open(t.TempDir(), pebbletable.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := store.Open(ctx, db, c.flags.storeConfig(0, nil, slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := s.Layout().SaltBuckets; got != c.want {
			t.Errorf("%s: new tables have %d salt buckets, want %d", c.name, got, c.want)
		}
		s.Close()
		db.Close()
	}
}
