package store

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/table"
)

// setLayoutVersion rewrites the schema row's layout version, as tables
// written by another adapter version would hold it.
func setLayoutVersion(t *testing.T, uid table.Table, v int) {
	t.Helper()
	if err := uid.Put(context.Background(), []table.Cell{{
		Row: schemaRow, Family: labels2uid.FamilyID, Qualifier: []byte(layoutSetting),
		Timestamp: table.LatestTimestamp, Value: []byte(strconv.Itoa(v)),
	}}); err != nil {
		t.Fatal(err)
	}
}

func layoutVersionOf(t *testing.T, uid table.Table) string {
	t.Helper()
	got, err := readSchema(context.Background(), uid)
	if err != nil {
		t.Fatal(err)
	}
	return string(got[layoutSetting])
}

// TestLayoutUpgrade: tables of every older cell layout this one reads are
// upgraded in place on open; an adapter of the older layout then refuses
// them, and one of this layout refuses tables of a newer one.
func TestLayoutUpgrade(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		cfg := Config{TablePrefix: prefix}
		s := openStore(t, db, cfg)
		uid := s.uid
		if v := layoutVersionOf(t, uid); v != strconv.Itoa(cellcodec.LayoutVersion) {
			t.Fatalf("new tables recorded layout %s", v)
		}
		if cellcodec.OldestReadableLayoutVersion >= cellcodec.LayoutVersion {
			t.Fatalf("no older layout to upgrade from")
		}
		var se *SchemaError
		for from := cellcodec.OldestReadableLayoutVersion; from < cellcodec.LayoutVersion; from++ {
			setLayoutVersion(t, uid, from)
			openStore(t, db, cfg)
			if v := layoutVersionOf(t, uid); v != strconv.Itoa(cellcodec.LayoutVersion) {
				t.Fatalf("after opening tables of layout %d: recorded %s", from, v)
			}
			// An adapter of the older layout now refuses the tables.
			old := schemaOf(s.layout)
			old[len(old)-1].value = from
			err := checkSchema(ctx, uid, old)
			if !errors.As(err, &se) || se.Setting != layoutSetting || se.Have != from || se.Table != cellcodec.LayoutVersion {
				t.Fatalf("adapter of layout %d on upgraded tables: %v", from, err)
			}
		}
		// Tables of a newer layout are refused, not downgraded.
		setLayoutVersion(t, uid, cellcodec.LayoutVersion+1)
		if _, err := Open(ctx, db, cfg); !errors.As(err, &se) || se.Table != cellcodec.LayoutVersion+1 {
			t.Fatalf("open tables of a newer layout: %v", err)
		}
		if v := layoutVersionOf(t, uid); v != strconv.Itoa(cellcodec.LayoutVersion+1) {
			t.Fatalf("newer layout rewritten to %s", v)
		}
	})
}
