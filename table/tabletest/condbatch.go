package tabletest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

// saltedSpec is a table of families a and b pre-split like a salted layout:
// rows start with a bucket byte, one region per bucket on HBase.
func (s *suite) saltedSpec(t testing.TB, buckets int) table.TableSpec {
	spec := table.TableSpec{Name: s.tableName(t), Families: []table.FamilySpec{{Name: famA}, {Name: famB}}}
	for b := 1; b < buckets; b++ {
		spec.SplitKeys = append(spec.SplitKeys, []byte{byte(b)})
	}
	return spec
}

func saltedRow(i, buckets int) string { return fmt.Sprintf("%c\x00row%04d", byte(i%buckets), i) }

// condCase is one conditional put and what it must do.
type condCase struct {
	put   table.CondPut
	wins  bool
	after string // the lock cell's value afterwards ("" for absent)
}

func testCheckAndPutBatch(t *testing.T, s *suite) {
	const buckets, rows = 4, 240
	_, tb := s.createTable(t, s.saltedSpec(t, buckets))
	ctx := t.Context()
	ts := recentTS()
	// Row i's lock cell, before the batch: absent when i%3 == 0, "held"
	// otherwise. The batch puts, by i%5: 0 and 1 expect absence, 2 and 3
	// expect "held", 4 expects "other". Each writes lock=mine and data=i.
	var setup []table.Cell
	cases := make([]condCase, rows)
	for i := range rows {
		row := saltedRow(i, buckets)
		absent := i%3 == 0
		if !absent {
			setup = append(setup, cell(row, famA, "lock", ts, "held"))
		}
		var expected []byte
		switch i % 5 {
		case 2, 3:
			expected = []byte("held")
		case 4:
			expected = []byte("other")
		}
		c := condCase{wins: (expected == nil && absent) || (string(expected) == "held" && !absent), after: "held"}
		switch {
		case c.wins:
			c.after = "mine"
		case absent:
			c.after = ""
		}
		c.put = table.CondPut{Row: []byte(row), Family: famA, Qualifier: []byte("lock"), Expected: expected,
			Put: []table.Cell{cell(row, famA, "lock", ts, "mine"), cell(row, famB, "data", ts, fmt.Sprint(i))}}
		cases[i] = c
	}
	put(t, tb, setup...)
	puts := make([]table.CondPut, rows)
	for i := range cases {
		puts[i] = cases[i].put
	}
	written, err := tb.CheckAndPutBatch(ctx, puts)
	if err != nil {
		t.Fatalf("CheckAndPutBatch of %d: %v", rows, err)
	}
	if len(written) != rows {
		t.Fatalf("CheckAndPutBatch of %d returned %d outcomes", rows, len(written))
	}
	checkCondOutcomes(t, tb, cases, written)

	if w, err := tb.CheckAndPutBatch(ctx, nil); err != nil || len(w) != 0 {
		t.Errorf("CheckAndPutBatch of nothing: %v, %v", w, err)
	}
	if _, err := tb.CheckAndPutBatch(ctx, []table.CondPut{{Row: []byte("r"), Family: famA, Qualifier: []byte("q"),
		Put: []table.Cell{cell("other-row", famA, "q", ts, "v")}}}); err == nil {
		t.Errorf("CheckAndPutBatch with a cell outside its row: no error")
	}
}

// checkCondOutcomes compares what each conditional put reported and left
// with what it should have.
func checkCondOutcomes(t *testing.T, tb table.Table, cases []condCase, written []bool) {
	t.Helper()
	keys := make([][]byte, len(cases))
	for i := range cases {
		keys[i] = cases[i].put.Row
	}
	got := get(t, tb, "", keys...)
	bad := 0
	for i, c := range cases {
		lock, data := "", ""
		for _, cl := range got[i].Cells {
			switch {
			case cl.Family == famA && string(cl.Qualifier) == "lock":
				lock = string(cl.Value)
			case cl.Family == famB && string(cl.Qualifier) == "data":
				data = string(cl.Value)
			}
		}
		wantData := ""
		if c.wins {
			wantData = string(c.put.Put[1].Value)
		}
		if written[i] != c.wins || lock != c.after || data != wantData {
			if bad++; bad <= 5 {
				t.Errorf("put %d (row %q, expected %q): written %v, lock %q, data %q; want %v, %q, %q",
					i, c.put.Row, c.put.Expected, written[i], lock, data, c.wins, c.after, wantData)
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d puts wrong in all", bad)
	}
}

// testCheckAndPutBatchRetry sends a batch twice, as a caller retrying after
// an error would: the second time nothing is written, and every cell holds
// what the first meant to write, which is how the caller recognises its
// own earlier success.
func testCheckAndPutBatchRetry(t *testing.T, s *suite) {
	const buckets, rows = 3, 60
	_, tb := s.createTable(t, s.saltedSpec(t, buckets))
	ctx := t.Context()
	ts := recentTS()
	puts := make([]table.CondPut, rows)
	for i := range puts {
		row := saltedRow(i, buckets)
		var expected []byte
		if i%2 == 1 {
			expected = []byte("v0")
			put(t, tb, cell(row, famA, "id", ts, "v0"))
		}
		puts[i] = table.CondPut{Row: []byte(row), Family: famA, Qualifier: []byte("id"), Expected: expected,
			Put: []table.Cell{cell(row, famA, "id", ts, fmt.Sprintf("v1-%d", i))}}
	}
	for attempt := range 2 {
		written, err := tb.CheckAndPutBatch(ctx, puts)
		if err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		for i, w := range written {
			if w != (attempt == 0) {
				t.Fatalf("attempt %d: put %d written = %v", attempt, i, w)
			}
		}
		for i, r := range get(t, tb, famA, keysOf(puts)...) {
			if len(r.Cells) != 1 || !bytes.Equal(r.Cells[0].Value, puts[i].Put[0].Value) {
				t.Fatalf("attempt %d: row %q holds%s, want %q", attempt, puts[i].Row, rowsString([]table.Row{r}), puts[i].Put[0].Value)
			}
		}
	}
}

func keysOf(puts []table.CondPut) [][]byte {
	keys := make([][]byte, len(puts))
	for i := range puts {
		keys[i] = puts[i].Row
	}
	return keys
}
