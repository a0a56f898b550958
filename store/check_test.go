package store

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/table"
)

// TestCheckTablesData stages a UID table restored from a snapshot older than
// the data table's: the newest tag value's mappings are gone and its
// counter is behind. Without the data rows the UID table looks sound;
// with them, the unnamed UID and the counter are found, and the counter is
// advanced, so that no later assignment reuses the UID.
func TestCheckTablesData(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix})
		base := 1_700_000_000_000 / hour * hour
		if err := s.Write(ctx, []SeriesIn{
			{Labels: lbls("__name__", "up", "job", "a"), Samples: []Sample{{T: base, V: 1}, {T: base + hour, V: 2}}},
			{Labels: lbls("__name__", "up", "job", "b"), Samples: []Sample{{T: base, V: 3}}},
		}); err != nil {
			t.Fatal(err)
		}
		uidTbl, err := db.Table(ctx, prefix+UIDTableSuffix)
		if err != nil {
			t.Fatal(err)
		}
		// Which of "a" and "b" got tag value UID 2 is open: forget that one.
		rows, err := uidTbl.Get(ctx, labels2uid.FamilyName, [][]byte{{0, 0, 0, 2}})
		if err != nil || len(rows[0].Cells) != 1 {
			t.Fatalf("reverse row of tag value 2: %v, %v", rows, err)
		}
		lost := rows[0].Cells[0].Value
		counter := binary.BigEndian.AppendUint64(nil, 1)
		if err := uidTbl.Delete(ctx, []table.Cell{
			{Row: []byte{0, 0, 0, 2}, Family: labels2uid.FamilyName, Qualifier: []byte("tagv")},
			{Row: lost, Family: labels2uid.FamilyID, Qualifier: []byte("tagv")},
		}); err != nil {
			t.Fatal(err)
		}
		if err := uidTbl.Put(ctx, []table.Cell{{Row: []byte{0}, Family: labels2uid.FamilyID, Qualifier: []byte("tagv"), Timestamp: table.LatestTimestamp, Value: counter}}); err != nil {
			t.Fatal(err)
		}

		res, err := CheckTables(ctx, db, prefix, false, labels2uid.CheckOptions{})
		if err != nil || res.Unfixed() != 0 || res.DataRows != 0 {
			t.Fatalf("the UID table alone: %v, %d harmful, %d data rows, findings %v", err, res.Unfixed(), res.DataRows, res.Findings)
		}
		res, err = CheckTables(ctx, db, prefix, true, labels2uid.CheckOptions{Fix: true})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range res.Findings {
			got = append(got, f.String())
		}
		want := []string{`tagv UID in data rows without a name: "" -> 2`, `tagv UID above the counter: "" -> 2: the tagv counter is 1`}
		if res.DataRows != 3 || res.BadDataKeys != 0 || len(got) != 2 || !strings.HasPrefix(got[0], want[0]) || !strings.HasPrefix(got[1], want[1]) ||
			res.Fixed[labels2uid.AboveCounter] != 1 || res.Unfixed() != 1 {
			t.Fatalf("with the data rows: %d rows (%d bad), findings %q, want 3 rows and ones beginning %q, the counter fixed", res.DataRows, res.BadDataKeys, got, want)
		}
		// A new value now gets UID 3, not the 2 that the data rows use.
		if err := s.Write(ctx, []SeriesIn{{Labels: lbls("__name__", "up", "job", "c"), Samples: []Sample{{T: base, V: 4}}}}); err != nil {
			t.Fatal(err)
		}
		rows, err = uidTbl.Get(ctx, labels2uid.FamilyID, [][]byte{[]byte("c")})
		if err != nil || len(rows[0].Cells) != 1 || string(rows[0].Cells[0].Value) != "\x00\x00\x00\x03" {
			t.Fatalf("forward row of the new value: %v, %v; want UID 3", rows, err)
		}
	})
}

// TestCheckTablesMarks stages a compaction table restored from a snapshot
// older than the data table's: raw cells whose marks are gone, which reads
// skip. The check finds their bucket-hours, and its fix makes them read.
func TestCheckTablesMarks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix})
		base := 1_700_000_000_000 / hour * hour
		up := mustMatcher(t, labels.MatchEqual, "__name__", "up")
		if err := s.Write(ctx, []SeriesIn{
			{Labels: lbls("__name__", "up", "job", "a"), Samples: []Sample{{T: base, V: 1}, {T: base + hour, V: 2}}},
			{Labels: lbls("__name__", "up", "job", "b"), Samples: []Sample{{T: base, V: 3}}},
		}); err != nil {
			t.Fatal(err)
		}
		q := Query{Start: base, End: base + 2*hour, Matchers: []*labels.Matcher{up}}
		want := collect(t, s.Select(ctx, q))
		if strings.Count(want, ":") != 3 {
			t.Fatalf("before: %s", want)
		}
		res, err := CheckTables(ctx, db, prefix, true, labels2uid.CheckOptions{})
		if err != nil || res.Harmful() != 0 || res.RawRows != 3 || len(res.Unmarked) != 0 {
			t.Fatalf("a store as written: %v, %d harmful, %d raw rows, unmarked %v", err, res.Harmful(), res.RawRows, res.Unmarked)
		}

		compact, err := db.Table(ctx, prefix+CompactTableSuffix)
		if err != nil {
			t.Fatal(err)
		}
		var marks []table.Cell
		sc := compact.Scan(ctx, table.ScanOptions{})
		for sc.Next() {
			for _, c := range sc.At().Cells { // valid until Next: copied
				marks = append(marks, table.Cell{Row: slices.Clone(c.Row), Family: c.Family, Qualifier: slices.Clone(c.Qualifier)})
			}
		}
		sc.Close()
		if err := sc.Err(); err != nil || len(marks) == 0 {
			t.Fatalf("marks: %d, %v", len(marks), err)
		}
		if err := compact.Delete(ctx, marks); err != nil {
			t.Fatal(err)
		}
		if got := collect(t, s.Select(ctx, q)); got == want {
			t.Fatalf("the marks deleted, the samples still read:\n%s", got)
		}

		res, err = CheckTables(ctx, db, prefix, true, labels2uid.CheckOptions{Fix: true})
		if err != nil {
			t.Fatal(err)
		}
		// Series a's bucket for both hours, and b's for the first hour
		// unless it is a's.
		if n := len(res.Unmarked); n < 2 || n > 3 || !res.MarksFixed || res.Harmful() != 0 {
			t.Fatalf("with the marks deleted: unmarked %v (fixed %v), %d harmful", res.Unmarked, res.MarksFixed, res.Harmful())
		}
		if got := collect(t, s.Select(ctx, q)); got != want {
			t.Errorf("after the fix:\n%s\nwant\n%s", got, want)
		}
		if res, err = CheckTables(ctx, db, prefix, true, labels2uid.CheckOptions{}); err != nil || len(res.Unmarked) != 0 {
			t.Errorf("checked again: %v, unmarked %v", err, res.Unmarked)
		}
	})
}
