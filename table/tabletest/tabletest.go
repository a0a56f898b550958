// Package tabletest is the conformance suite of the table interface: every
// backend runs it, and passing it is what makes a backend interchangeable.
//
// It checks only what package table promises, through the interface alone: no
// clock injection, no backend internals. Tables get unique names, so it also
// runs against a long-lived shared HBase.
package tabletest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

// Run runs every conformance test against the backend newDB opens (each call
// may return the same DB; tests create tables with unique names, so it also
// works on a long-lived HBase).
func Run(t *testing.T, newDB func(t testing.TB) table.DB) {
	s := &suite{newDB: newDB, prefix: "tabletest_" + randomHex(4)}
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *suite)
	}{
		{"Catalog", testCatalog},
		{"EnsureTableRace", testEnsureTableRace},
		{"PutGet", testPutGet},
		{"Overwrite", testOverwrite},
		{"ConcurrentWriters", testConcurrentWriters},
		{"BinaryKeys", testBinaryKeys},
		{"LongKeys", testLongKeys},
		{"Timestamps", testTimestamps},
		{"Delete", testDelete},
		{"PutAfterDelete", testPutAfterDelete},
		{"Scan", testScan},
		{"ScanCancel", testScanCancel},
		{"ScanRanges", testScanRanges},
		{"KeyFilter", testKeyFilter},
		{"QualifierPrefixes", testQualifierPrefixes},
		{"QualifierPrefixesAddedFamily", testQualifierPrefixesAddedFamily},
		{"Increment", testIncrement},
		{"CheckAndPut", testCheckAndPut},
		{"CheckAndPutBatch", testCheckAndPutBatch},
		{"CheckAndPutBatchRetry", testCheckAndPutBatchRetry},
		{"DeleteVersions", testDeleteVersions},
		{"CheckAndDeleteBatch", testCheckAndDeleteBatch},
		{"FirstCellAfterDeleteVersions", testFirstCellAfterDeleteVersions},
		{"TTL", testTTL},
		{"Describe", testDescribe},
		{"AlterFamily", testAlterFamily},
		{"AddFamily", testAddFamily},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Tests run side by side: on HBase most of the time goes to waiting
			// for CreateTable, which overlaps well.
			t.Parallel()
			tc.fn(t, s)
		})
	}
}

type suite struct {
	newDB  func(t testing.TB) table.DB
	prefix string
	n      atomic.Int64
}

// Families of the tables the tests create, unless a test says otherwise.
const (
	famA = "a"
	famB = "b"
)

func (s *suite) tableName(t testing.TB) string {
	name := strings.NewReplacer("/", "_", " ", "_", "#", "_").Replace(t.Name())
	return fmt.Sprintf("%s_%d_%s", s.prefix, s.n.Add(1), name)
}

// newTable creates a table with families a and b (or the ones given) and
// returns it with its database.
func (s *suite) newTable(t testing.TB, families ...table.FamilySpec) (table.DB, table.Table) {
	t.Helper()
	if len(families) == 0 {
		families = []table.FamilySpec{{Name: famA}, {Name: famB}}
	}
	return s.createTable(t, table.TableSpec{Name: s.tableName(t), Families: families})
}

// createTable creates the table spec describes (its name is the caller's)
// and returns it with its database.
func (s *suite) createTable(t testing.TB, spec table.TableSpec) (table.DB, table.Table) {
	t.Helper()
	db := s.newDB(t)
	if err := db.CreateTable(t.Context(), spec); err != nil {
		t.Fatalf("CreateTable(%q): %v", spec.Name, err)
	}
	tb, err := db.Table(t.Context(), spec.Name)
	if err != nil {
		t.Fatalf("Table(%q): %v", spec.Name, err)
	}
	return db, tb
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func put(t testing.TB, tb table.Table, cells ...table.Cell) {
	t.Helper()
	if err := tb.Put(t.Context(), cells); err != nil {
		t.Fatalf("Put: %v", err)
	}
}

func get(t testing.TB, tb table.Table, family string, keys ...[]byte) []table.Row {
	t.Helper()
	rows, err := tb.Get(t.Context(), family, keys)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if len(rows) != len(keys) {
		t.Fatalf("Get of %d keys returned %d rows", len(keys), len(rows))
	}
	for i, r := range rows {
		if len(r.Cells) > 0 && !bytes.Equal(r.Key, keys[i]) {
			t.Fatalf("Get: row %d has key %q, asked for %q", i, r.Key, keys[i])
		}
	}
	return rows
}

// scanAll drains a scanner, copying each row since the scanner may reuse
// their memory.
func scanAll(t testing.TB, sc table.Scanner) []table.Row {
	t.Helper()
	defer sc.Close()
	var rows []table.Row
	for sc.Next() {
		rows = append(rows, cloneRow(sc.At()))
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if err := sc.Close(); err != nil {
		t.Fatalf("Scanner.Close: %v", err)
	}
	return rows
}

func scan(t testing.TB, tb table.Table, opts table.ScanOptions) []table.Row {
	t.Helper()
	return scanAll(t, tb.Scan(t.Context(), opts))
}

func cloneRow(r table.Row) table.Row {
	c := table.Row{Key: bytes.Clone(r.Key), Cells: make([]table.Cell, len(r.Cells))}
	for i, cell := range r.Cells {
		c.Cells[i] = table.Cell{
			Row:       bytes.Clone(cell.Row),
			Family:    cell.Family,
			Qualifier: bytes.Clone(cell.Qualifier),
			Timestamp: cell.Timestamp,
			Value:     bytes.Clone(cell.Value),
		}
	}
	return c
}

func cellString(c table.Cell) string {
	return fmt.Sprintf("%q/%s:%q@%d=%q", c.Row, c.Family, c.Qualifier, c.Timestamp, c.Value)
}

func rowsString(rows []table.Row) string {
	var sb strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&sb, "\n  row %q:", r.Key)
		for _, c := range r.Cells {
			sb.WriteString(" " + cellString(c))
		}
	}
	return sb.String()
}

func cellEqual(a, b table.Cell) bool {
	return bytes.Equal(a.Row, b.Row) && a.Family == b.Family && bytes.Equal(a.Qualifier, b.Qualifier) &&
		a.Timestamp == b.Timestamp && bytes.Equal(a.Value, b.Value)
}

func rowsEqual(a, b []table.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].Key, b[i].Key) || len(a[i].Cells) != len(b[i].Cells) {
			return false
		}
		for j := range a[i].Cells {
			if !cellEqual(a[i].Cells[j], b[i].Cells[j]) {
				return false
			}
		}
	}
	return true
}

func checkRows(t testing.TB, what string, got, want []table.Row) {
	t.Helper()
	if !rowsEqual(got, want) {
		t.Errorf("%s:\ngot:%s\nwant:%s", what, rowsString(got), rowsString(want))
	}
}

// rowsOf groups cells, given in the expected order, into rows.
func rowsOf(cells ...table.Cell) []table.Row {
	var rows []table.Row
	for _, c := range cells {
		if len(rows) == 0 || !bytes.Equal(rows[len(rows)-1].Key, c.Row) {
			rows = append(rows, table.Row{Key: c.Row})
		}
		rows[len(rows)-1].Cells = append(rows[len(rows)-1].Cells, c)
	}
	return rows
}

func keyOnly(rows []table.Row) []table.Row {
	out := make([]table.Row, len(rows))
	for i, r := range rows {
		out[i] = cloneRow(r)
		for j := range out[i].Cells {
			out[i].Cells[j].Value = nil
		}
	}
	return out
}

// recentTS is an explicit timestamp well inside any retention the tests use:
// one minute ago, in milliseconds.
func recentTS() int64 { return time.Now().Add(-time.Minute).UnixMilli() }

func cell(row, family, qualifier string, ts int64, value string) table.Cell {
	return table.Cell{Row: []byte(row), Family: family, Qualifier: []byte(qualifier), Timestamp: ts, Value: []byte(value)}
}
