package tabletest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

func testPutGet(t *testing.T, s *suite) {
	_, tb := s.newTable(t)
	ts := recentTS()
	// Put out of order, over two rows and two families, in one batch.
	put(t, tb,
		cell("r2", famB, "q2", ts, "r2b2"),
		cell("r1", famB, "q1", ts, "r1b1"),
		cell("r2", famA, "q9", ts, "r2a9"),
		cell("r2", famA, "q1", ts+1, "r2a1"),
		cell("r1", famA, "", ts, "r1a-empty-qualifier"),
		cell("r2", famB, "q1", ts, "r2b1"),
	)
	r1 := rowsOf(cell("r1", famA, "", ts, "r1a-empty-qualifier"), cell("r1", famB, "q1", ts, "r1b1"))
	r2 := rowsOf(
		cell("r2", famA, "q1", ts+1, "r2a1"), cell("r2", famA, "q9", ts, "r2a9"),
		cell("r2", famB, "q1", ts, "r2b1"), cell("r2", famB, "q2", ts, "r2b2"),
	)
	rows := get(t, tb, "", []byte("r2"), []byte("missing"), []byte("r1"), []byte("r"), []byte("r2"))
	if len(rows[1].Cells) != 0 || len(rows[3].Cells) != 0 {
		t.Errorf("Get of missing rows returned cells:%s", rowsString(rows))
	}
	checkRows(t, "Get in the order asked", []table.Row{rows[0], rows[2], rows[4]}, []table.Row{r2[0], r1[0], r2[0]})

	// Family restriction.
	rows = get(t, tb, famB, []byte("r1"), []byte("r2"))
	checkRows(t, "Get of family b", rows, rowsOf(
		cell("r1", famB, "q1", ts, "r1b1"),
		cell("r2", famB, "q1", ts, "r2b1"), cell("r2", famB, "q2", ts, "r2b2"),
	))
	rows = get(t, tb, famA, []byte("r1"))
	checkRows(t, "Get of family a", rows, rowsOf(cell("r1", famA, "", ts, "r1a-empty-qualifier")))

	if rows, err := tb.Get(t.Context(), "", nil); err != nil || len(rows) != 0 {
		t.Errorf("Get of no keys: %d rows, %v", len(rows), err)
	}
	if err := tb.Put(t.Context(), nil); err != nil {
		t.Errorf("Put of no cells: %v", err)
	}

	// A big value, and a value and qualifier of every byte.
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	put(t, tb,
		table.Cell{Row: []byte("big"), Family: famA, Qualifier: []byte("q"), Timestamp: ts, Value: big},
		table.Cell{Row: []byte("bytes"), Family: famA, Qualifier: all, Timestamp: ts, Value: all},
		table.Cell{Row: []byte("empty"), Family: famA, Qualifier: []byte("q"), Timestamp: ts, Value: nil},
	)
	rows = get(t, tb, "", []byte("big"), []byte("bytes"), []byte("empty"))
	if len(rows[0].Cells) != 1 || !bytes.Equal(rows[0].Cells[0].Value, big) {
		t.Errorf("Get of a 1 MiB value: %d cells, value intact: %v", len(rows[0].Cells), len(rows[0].Cells) == 1 && bytes.Equal(rows[0].Cells[0].Value, big))
	}
	checkRows(t, "Get of all byte values", rows[1:2], rowsOf(table.Cell{Row: []byte("bytes"), Family: famA, Qualifier: all, Timestamp: ts, Value: all}))
	checkRows(t, "Get of an empty value", rows[2:3], rowsOf(table.Cell{Row: []byte("empty"), Family: famA, Qualifier: []byte("q"), Timestamp: ts}))
}

func testOverwrite(t *testing.T, s *suite) {
	_, tb := s.newTable(t)
	ts := recentTS()
	put(t, tb, cell("r", famA, "q", ts, "one"), cell("r", famA, "p", ts, "keep"))
	put(t, tb, cell("r", famA, "q", ts, "two"))
	checkRows(t, "Get after overwrite at the same timestamp", get(t, tb, "", []byte("r")),
		rowsOf(cell("r", famA, "p", ts, "keep"), cell("r", famA, "q", ts, "two")))

	// One version per cell: the later write wins, with backend timestamps.
	for _, v := range []string{"x", "y", "z"} {
		put(t, tb, table.Cell{Row: []byte("s"), Family: famA, Qualifier: []byte("q"), Timestamp: table.LatestTimestamp, Value: []byte(v)})
	}
	rows := get(t, tb, "", []byte("s"))
	if len(rows[0].Cells) != 1 || string(rows[0].Cells[0].Value) != "z" {
		t.Errorf("Get after three writes at the latest timestamp: want one cell holding %q:%s", "z", rowsString(rows))
	}
}

func testBinaryKeys(t *testing.T, s *suite) {
	_, tb := s.newTable(t)
	ts := recentTS()
	// Prefixes of one another, with 0x00 and 0xFF around.
	keys := []string{
		"\x00", "\x00\x00", "\x00\x01", "\x00\xff", "\x01",
		"a", "a\x00", "a\x00\x00", "a\x00\x01", "a\x00\xff", "a\x01", "a\n", "a\xff", "a\xff\x00", "a\xff\xff",
		"ab", "b", "\x7f", "\x80", "\xfe", "\xff", "\xff\x00", "\xff\xff", "\xff\xff\xff",
	}
	var cells []table.Cell
	for _, k := range keys {
		cells = append(cells, cell(k, famA, "\x00q\xff", ts, k))
	}
	put(t, tb, cells...)
	slices.Sort(keys) // Go compares strings bytewise
	want := func(start, stop string) []table.Row {
		var cells []table.Cell
		for _, k := range keys {
			if k >= start && (stop == "" || k < stop) {
				cells = append(cells, cell(k, famA, "\x00q\xff", ts, k))
			}
		}
		return rowsOf(cells...)
	}
	checkRows(t, "Scan of binary keys", scan(t, tb, table.ScanOptions{}), want("", ""))
	for _, k := range keys {
		checkRows(t, "Get of binary key", get(t, tb, "", []byte(k)), want(k, k+"\x00"))
	}
	// Ranges whose bounds fall between and on binary keys.
	for _, r := range [][2]string{{"a\x00", "a\xff"}, {"\x00\x00", "\x00\xff\x00"}, {"a", "a\x00\x00"}, {"\xff", ""}, {"\x00", "\x00\x00\x00"}} {
		opts := table.ScanOptions{Start: []byte(r[0])}
		if r[1] != "" {
			opts.Stop = []byte(r[1])
		}
		checkRows(t, fmt.Sprintf("Scan [%q, %q)", r[0], r[1]), scan(t, tb, opts), want(r[0], r[1]))
	}
}

func testTimestamps(t *testing.T, s *suite) {
	_, tb := s.newTable(t)
	explicit := recentTS() - 12345
	before := time.Now().Add(-time.Minute).UnixMilli()
	put(t, tb,
		cell("r", famA, "explicit", explicit, "e"),
		table.Cell{Row: []byte("r"), Family: famA, Qualifier: []byte("latest"), Timestamp: table.LatestTimestamp, Value: []byte("l")},
	)
	// The backend's clock may differ a little from ours; a minute either way
	// tells "stamped now" from a wrong or missing stamp.
	after := time.Now().Add(time.Minute).UnixMilli()
	for _, rows := range [][]table.Row{get(t, tb, "", []byte("r")), scan(t, tb, table.ScanOptions{}), scan(t, tb, table.ScanOptions{KeyOnly: true})} {
		if len(rows) != 1 || len(rows[0].Cells) != 2 {
			t.Fatalf("want one row of two cells:%s", rowsString(rows))
		}
		if c := rows[0].Cells[0]; c.Timestamp != explicit {
			t.Errorf("cell written with timestamp %d came back with %d", explicit, c.Timestamp)
		}
		if c := rows[0].Cells[1]; c.Timestamp < before || c.Timestamp > after {
			t.Errorf("cell written with LatestTimestamp came back with %d, not the backend's now (about %d)", c.Timestamp, (before+after)/2)
		}
	}
}

func testDelete(t *testing.T, s *suite) {
	_, tb := s.newTable(t)
	ts := recentTS()
	var cells []table.Cell
	// r3 is a prefix of r3\x00 and r3a, which must outlive it.
	for _, r := range []string{"r1", "r2", "r3", "r3\x00", "r3a", "r4"} {
		cells = append(cells,
			cell(r, famA, "q1", ts, "v"), cell(r, famA, "q2", ts, "v"),
			cell(r, famB, "q1", ts, "v"), cell(r, famB, "q2", ts, "v"))
	}
	put(t, tb, cells...)
	err := tb.Delete(t.Context(), []table.Cell{
		{Row: []byte("r1"), Family: famA, Qualifier: []byte("q1")}, // one column
		{Row: []byte("r2"), Family: famB},                          // one family
		{Row: []byte("r3")},                                        // the whole row
		{Row: []byte("missing")},                                   // nothing to delete
		{Row: []byte("r4"), Family: famA, Qualifier: []byte("absent")},
	})
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	want := rowsOf(
		cell("r1", famA, "q2", ts, "v"), cell("r1", famB, "q1", ts, "v"), cell("r1", famB, "q2", ts, "v"),
		cell("r2", famA, "q1", ts, "v"), cell("r2", famA, "q2", ts, "v"),
		cell("r3\x00", famA, "q1", ts, "v"), cell("r3\x00", famA, "q2", ts, "v"),
		cell("r3\x00", famB, "q1", ts, "v"), cell("r3\x00", famB, "q2", ts, "v"),
		cell("r3a", famA, "q1", ts, "v"), cell("r3a", famA, "q2", ts, "v"),
		cell("r3a", famB, "q1", ts, "v"), cell("r3a", famB, "q2", ts, "v"),
		cell("r4", famA, "q1", ts, "v"), cell("r4", famA, "q2", ts, "v"),
		cell("r4", famB, "q1", ts, "v"), cell("r4", famB, "q2", ts, "v"),
	)
	checkRows(t, "Scan after Delete", scan(t, tb, table.ScanOptions{}), want)
	rows := get(t, tb, "", []byte("r3"), []byte("r1"))
	if len(rows[0].Cells) != 0 {
		t.Errorf("Get of a deleted row:%s", rowsString(rows[:1]))
	}
	checkRows(t, "Get after Delete", rows[1:], want[:1])
	if err := tb.Delete(t.Context(), nil); err != nil {
		t.Errorf("Delete of no cells: %v", err)
	}
}

func testConcurrentWriters(t *testing.T, s *suite) {
	_, tb := s.newTable(t)
	ts := recentTS()
	const writers, rowsEach = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			// Each writer's batch interleaves with the others' rows.
			var cells []table.Cell
			for i := range rowsEach {
				r := fmt.Sprintf("r%03d-%d", i, w)
				cells = append(cells, cell(r, famA, "q", ts, r), cell(r, famB, "q", ts, r))
			}
			if err := tb.Put(t.Context(), cells); err != nil {
				t.Errorf("writer %d: Put: %v", w, err)
			}
		})
	}
	wg.Wait()
	var want []table.Cell
	for i := range rowsEach {
		for w := range writers {
			r := fmt.Sprintf("r%03d-%d", i, w)
			want = append(want, cell(r, famA, "q", ts, r), cell(r, famB, "q", ts, r))
		}
	}
	checkRows(t, "Scan after concurrent Puts", scan(t, tb, table.ScanOptions{}), rowsOf(want...))
}

// testPutAfterDelete writes cells again after deleting them, with their old
// timestamps, as a late write of a sample whose raw cells were compacted
// away does. The write must show: Delete removes what is there, it does not
// forbid the future. (HBase needs NEW_VERSION_BEHAVIOR on the family for
// this; without it a delete marker hides older-stamped puts until a major
// compaction.)
func testPutAfterDelete(t *testing.T, s *suite) {
	// Re-writing deleted cells with their old timestamps is visible only in
	// families with NewVersionBehavior (HBase hides them until a major
	// compaction otherwise).
	_, tb := s.newTable(t, table.FamilySpec{Name: famA, NewVersionBehavior: true}, table.FamilySpec{Name: famB, NewVersionBehavior: true})
	ts := recentTS()
	put(t, tb, cell("r", famA, "q", ts, "v1"), cell("r", famB, "q", ts, "v1"), cell("s", famA, "q", ts, "v1"))
	err := tb.Delete(t.Context(), []table.Cell{
		{Row: []byte("r"), Family: famA, Qualifier: []byte("q")},
		{Row: []byte("r"), Family: famB},
		{Row: []byte("s")},
	})
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	checkRows(t, "Scan after Delete", scan(t, tb, table.ScanOptions{}), nil)
	again := []table.Cell{cell("r", famA, "q", ts, "v2"), cell("r", famB, "q", ts, "v2"), cell("s", famA, "q", ts, "v2")}
	put(t, tb, again...)
	checkRows(t, "Scan after writing deleted cells again", scan(t, tb, table.ScanOptions{}), rowsOf(again...))
}

// testLongKeys: rows keyed by long strings (a UID table's rows are label
// values) round-trip whatever their length and wherever their cell falls
// in a write: alone, or first, last or among others of one Put.
func testLongKeys(t *testing.T, s *suite) {
	_, tb := s.newTable(t)
	ts := recentTS()
	var keys []string
	for _, n := range []int{15, 16, 17, 63, 64, 65, 100, 255, 256, 257, 1000, 1023, 4000, 4096, 10000, 30000} {
		for i, fill := range []string{"v", "\x00", "a\x00b"} {
			k := fmt.Sprintf("%d-%d-", n, i)
			k += strings.Repeat(fill, (n-len(k))/len(fill)+1)[:n-len(k)]
			keys = append(keys, k)
		}
	}
	var cells []table.Cell
	for i, k := range keys {
		c := cell(k, famA, "q", ts, fmt.Sprint(i))
		cells = append(cells, c)
		put(t, tb, c)
	}
	slices.Sort(keys)
	var want []table.Cell
	for _, k := range keys {
		want = append(want, cells[slices.IndexFunc(cells, func(c table.Cell) bool { return string(c.Row) == k })])
	}
	checkRows(t, "Scan of long keys put one by one", scan(t, tb, table.ScanOptions{}), rowsOf(want...))
	for _, c := range want {
		checkRows(t, "Get of a long key", get(t, tb, "", c.Row), rowsOf(c))
	}
	// The same rows again in one Put, under another qualifier.
	_, tb2 := s.newTable(t)
	put(t, tb2, cells...)
	checkRows(t, "Scan of long keys put at once", scan(t, tb2, table.ScanOptions{}), rowsOf(want...))
}
