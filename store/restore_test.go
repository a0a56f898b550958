package store

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/labels2uid"
)

// snapshots runs HBase's own snapshot commands (scripts/hbase.sh snapshots:
// the Admin API the HBase shell calls) on the test HBase.
func snapshots(t *testing.T, zk string, cmds ...string) {
	t.Helper()
	out, err := exec.Command("../scripts/hbase.sh", append([]string{"snapshots", zk}, cmds...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("hbase.sh snapshots %v: %v\n%s", cmds, err, out)
	}
}

// TestRestoreFromSnapshots is the drill of docs/operations.md ("Backup and
// restore") with HBase's snapshots: the data table first, then the
// compaction and UID tables, while a compactor folds hours in between, as
// it will in production. The restored data table then holds raw cells whose
// marks the restored compaction table no longer has, and reads miss them;
// `adapter check --data --fix` marks them, every sample written before the
// data table's snapshot reads back, and the compactors fold them again.
func TestRestoreFromSnapshots(t *testing.T) {
	zk := hbasetest.ZK(t)
	db, prefix := openHBase(t)
	ctx := context.Background()
	s, clock := clockedStore(t, db, Config{TablePrefix: prefix})
	base := 1_700_000_000_000 / hour * hour
	var batch []SeriesIn
	for i := range 20 {
		in := SeriesIn{Labels: lbls("__name__", "up", "job", fmt.Sprint("job-", i%3), "instance", fmt.Sprint("host-", i))}
		for j := range 8 { // two hours at 15 minutes
			in.Samples = append(in.Samples, Sample{T: base + int64(j)*hour/4, V: float64(i*100 + j)})
		}
		batch = append(batch, in)
	}
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	q := Query{Start: base, End: base + 2*hour, Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "__name__", "up")}}
	want := collect(t, s.Select(ctx, q))
	if n := strings.Count(want, ":"); n != 160 {
		t.Fatalf("written: %d samples read, want 160", n)
	}

	id := fmt.Sprintf("%x", time.Now().UnixNano())
	tables := map[string]string{"data": prefix + DataTableSuffix, "compact": prefix + CompactTableSuffix, "uid": prefix + UIDTableSuffix}
	snapshots(t, zk, "snapshot", tables["data"], "data-"+id)
	// The compactor folds both hours: their raw cells and marks go.
	clock.advance(time.Hour)
	st, err := clockedCompactor(t, s, clock).Pass(ctx)
	if err != nil || st.RawCellsDeleted != 160 {
		t.Fatalf("compaction pass: %+v, %v; want 160 raw cells folded", st, err)
	}
	snapshots(t, zk, "snapshot", tables["compact"], "compact-"+id, "snapshot", tables["uid"], "uid-"+id)
	snapshots(t, zk,
		"restore", "data-"+id, tables["data"], "restore", "compact-"+id, tables["compact"], "restore", "uid-"+id, tables["uid"],
		"delete", "data-"+id, "delete", "compact-"+id, "delete", "uid-"+id)

	// A store opened after the restore, as an adapter started then.
	s2 := openStore(t, db, Config{TablePrefix: prefix})
	if got := collect(t, s2.Select(ctx, q)); got == want {
		t.Fatalf("the restored raw cells read without their marks: the drill stages nothing")
	}
	res, err := CheckTables(ctx, db, prefix, true, labels2uid.CheckOptions{Fix: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unmarked) == 0 || !res.MarksFixed || res.Harmful() != 0 || res.RawRows != 40 {
		t.Fatalf("check after the restore: %d raw rows, unmarked %v, %d harmful, findings %v", res.RawRows, res.Unmarked, res.Harmful(), res.Findings)
	}
	if got := collect(t, s2.Select(ctx, q)); got != want {
		t.Errorf("after the check's fix:\n%s\nwant\n%s", got, want)
	}
	// The compactors fold the marked hours again, once their marks are
	// quiet, and the samples read the same.
	clock.advance(time.Hour)
	st, err = clockedCompactor(t, s2, clock).Pass(ctx)
	if err != nil || st.RawCellsDeleted != 160 {
		t.Fatalf("compaction pass after the restore: %+v, %v; want 160 raw cells folded", st, err)
	}
	if got := collect(t, s2.Select(ctx, q)); got != want {
		t.Errorf("folded again:\n%s\nwant\n%s", got, want)
	}
}
