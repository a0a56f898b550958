package store

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// TestRefusedOpenKeepsLayout: an adapter of the new layout that refuses the
// tables (a UID width flag that differs from the recorded one) must not
// move the recorded layout version forward on its way out: the adapters of
// the old layout, whose flags are right, would then refuse the tables too.
func TestRefusedOpenKeepsLayout(t *testing.T) {
	db, prefix := openPebble(t)
	ctx := context.Background()
	s := openStore(t, db, Config{TablePrefix: prefix})
	old := cellcodec.LayoutVersion - 1
	setLayoutVersion(t, s.uid, old)

	// A new-version adapter started with a wrong --uid.width.tagk.
	var se *SchemaError
	_, err := Open(ctx, db, Config{TablePrefix: prefix, Layout: rowkey.Layout{TagKWidth: s.layout.TagKWidth + 1}})
	if !errors.As(err, &se) || se.Setting != "uid.width.tagk" {
		t.Fatalf("open with another tagk width: %v, want a refusal naming uid.width.tagk", err)
	}
	if v := layoutVersionOf(t, s.uid); v != strconv.Itoa(old) {
		t.Errorf("an adapter that refused the tables moved the layout version from %d to %s", old, v)
	}
}

// TestFailedOpenKeepsLayout: the same when Open fails after the schema
// check, on the data table (here one without family t, which Open
// refuses; on HBase, a codec it refuses or a master that does not answer).
func TestFailedOpenKeepsLayout(t *testing.T) {
	db, prefix := openPebble(t)
	ctx := context.Background()
	if err := db.CreateTable(ctx, table.TableSpec{Name: prefix + DataTableSuffix, Families: []table.FamilySpec{{Name: "x"}}}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTable(ctx, uidTableSpec(Config{TablePrefix: prefix})); err != nil {
		t.Fatal(err)
	}
	uid, err := db.Table(ctx, prefix+UIDTableSuffix)
	if err != nil {
		t.Fatal(err)
	}
	// A schema row as an adapter of the previous layout wrote it.
	old := cellcodec.LayoutVersion - 1
	l := rowkey.DefaultLayout
	var cells []table.Cell
	for _, s := range schemaOf(l, l) {
		v := s.value
		if s.name == layoutSetting {
			v = old
		}
		cells = append(cells, table.Cell{Row: schemaRow, Family: labels2uid.FamilyID, Qualifier: []byte(s.name), Timestamp: table.LatestTimestamp, Value: []byte(strconv.Itoa(v))})
	}
	if err := uid.Put(ctx, cells); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, db, Config{TablePrefix: prefix}); err == nil {
		t.Fatal("opened a data table without family t")
	} else {
		t.Logf("Open: %v", err)
	}
	if v := layoutVersionOf(t, uid); v != strconv.Itoa(old) {
		t.Errorf("an Open that failed moved the layout version from %d to %s", old, v)
	}
}
