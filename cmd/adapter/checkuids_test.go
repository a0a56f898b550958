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

// deleteReverse removes the first tagv reverse mapping of the embedded
// store at dir and returns its string.
func deleteReverse(t *testing.T, dir string) string {
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
				if err := tbl.Delete(ctx, []table.Cell{c}); err != nil {
					t.Fatal(err)
				}
				return string(c.Value)
			}
		}
	}
	t.Fatalf("no tagv reverse mapping: %v", sc.Err())
	return ""
}

func TestCheckUIDsCommand(t *testing.T) {
	blocks, data := t.TempDir(), t.TempDir()
	writeTestBlock(t, blocks)
	if out, code := runAdapter(t, "import", "--storage.path="+data, "prometheus", blocks); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, out)
	}
	check := []string{"check-uids", "--storage.path=" + data}
	out, code := runAdapter(t, check...)
	if code != 0 || !strings.Contains(out, "no problems found") || !regexp.MustCompile(`tagv +5 +5 +5 +5\n`).MatchString(out) {
		t.Fatalf("a store written by the adapter: exit %d\n%s", code, out)
	}
	gone := deleteReverse(t, data)
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
	if out, code = runAdapter(t, "check-uids", "--storage.path="+filepath.Join(data, "nowhere")); code != 1 || !strings.Contains(out, "no embedded store there") {
		t.Errorf("no store: exit %d\n%s", code, out)
	}
	if out, code = runAdapter(t, append(check, "--max-listed=0")...); code != 2 || !strings.Contains(out, "adapter check-uids:") {
		t.Errorf("bad flag: exit %d\n%s", code, out)
	}
}
