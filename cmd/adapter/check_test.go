package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/store"
	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/pebbletable"
)

// deleteMapping removes the first tagv reverse mapping of the embedded
// store at dir, or the forward mapping of its string, and returns the
// string.
func deleteMapping(t *testing.T, dir string, forward bool) string {
	t.Helper()
	ctx := context.Background()
	db, err := pebbletable.Open(dir, pebbletable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tbl, err := db.Table(ctx, store.UIDTableSuffix)
	if err != nil {
		t.Fatal(err)
	}
	sc := tbl.Scan(ctx, table.ScanOptions{Family: labels2uid.FamilyName})
	defer sc.Close()
	for sc.Next() {
		for _, c := range sc.At().Cells {
			if string(c.Qualifier) == "tagv" {
				name := string(c.Value)
				if forward {
					c = table.Cell{Row: c.Value, Family: labels2uid.FamilyID, Qualifier: c.Qualifier}
				}
				if err := tbl.Delete(ctx, []table.Cell{c}); err != nil {
					t.Fatal(err)
				}
				return name
			}
		}
	}
	t.Fatalf("no tagv reverse mapping: %v", sc.Err())
	return ""
}

func TestCheckCommand(t *testing.T) {
	blocks, data := t.TempDir(), t.TempDir()
	writeTestBlock(t, blocks)
	if out, code := runAdapter(t, "import", "--storage.path="+data, "prometheus", blocks); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, out)
	}
	check := []string{"check", "--storage.path=" + data}
	out, code := runAdapter(t, check...)
	if code != 0 || !strings.Contains(out, "no problems found") || !regexp.MustCompile(`tagv +5 +5 +- +5 +5\n`).MatchString(out) {
		t.Fatalf("a store written by the adapter: exit %d\n%s", code, out)
	}
	gone := deleteMapping(t, data, false)
	out, code = runAdapter(t, check...)
	if code != 1 || !strings.Contains(out, `tagv missing reverse mapping: "`+gone+`"`) || !strings.Contains(out, "1 harmful problems left") {
		t.Errorf("a reverse mapping deleted: exit %d\n%s", code, out)
	}
	out, code = runAdapter(t, append(check, "--fix")...)
	if code != 0 || !strings.Contains(out, "(fixed)") || !strings.Contains(out, "1 missing reverse mapping (harmful), 1 fixed") || !strings.Contains(out, "nothing harmful left") {
		t.Errorf("--fix: exit %d\n%s", code, out)
	}
	if out, code = runAdapter(t, check...); code != 0 || !strings.Contains(out, "no problems found") {
		t.Errorf("after --fix: exit %d\n%s", code, out)
	}
	// A forward mapping lost: the UID table alone shows a harmless unused
	// reverse row; the data rows show that it is used, and --fix writes
	// the forward mapping back.
	gone = deleteMapping(t, data, true)
	if out, code = runAdapter(t, check...); code != 0 || !strings.Contains(out, `tagv unused reverse mapping: "`+gone+`"`) {
		t.Errorf("a forward mapping deleted, without --data: exit %d\n%s", code, out)
	}
	withData := append(check, "--data")
	out, code = runAdapter(t, withData...)
	if code != 1 || !strings.Contains(out, "data table prom-data: 3 rows read") || !strings.Contains(out, `tagv lost forward mapping: "`+gone+`"`) ||
		!regexp.MustCompile(`tagv +4 +5 +5 +5 +5\n`).MatchString(out) {
		t.Errorf("--data: exit %d\n%s", code, out)
	}
	if out, code = runAdapter(t, append(withData, "--fix")...); code != 0 || !strings.Contains(out, "1 lost forward mapping (harmful), 1 fixed") {
		t.Errorf("--data --fix: exit %d\n%s", code, out)
	}
	if out, code = runAdapter(t, withData...); code != 0 || !strings.Contains(out, "no problems found") {
		t.Errorf("--data after --fix: exit %d\n%s", code, out)
	}
	if out, code = runAdapter(t, "check", "--storage.path="+filepath.Join(data, "nowhere")); code != 1 || !strings.Contains(out, "no embedded store there") {
		t.Errorf("no store: exit %d\n%s", code, out)
	}
	if out, code = runAdapter(t, append(check, "--max-listed=0")...); code != 2 || !strings.Contains(out, "adapter check:") {
		t.Errorf("bad flag: exit %d\n%s", code, out)
	}
}
