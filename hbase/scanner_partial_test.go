package hbase

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// TestScanByteLimitBeforeDeletedCells reads rows of one live cell followed
// by deleted ones (as OpenTSDB leaves a row it compacted) with a byte limit
// per call that the server reaches inside the deleted cells: it flags the
// live cell's result as partial, finds nothing more of that row in the next
// call, and goes on with the next row, whose cells must not join it.
func TestScanByteLimitBeforeDeletedCells(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c)
	ctx := testCtx(t)
	const rows, deleted = 20, 50
	var puts, dels []*hrpc.Mutation
	for i := range rows {
		p := &hrpc.Mutation{Type: hrpc.MutationPut, Row: []byte(rowKey(i))}
		d := &hrpc.Mutation{Type: hrpc.MutationDelete, Row: []byte(rowKey(i))}
		for j := range deleted + 1 {
			q := []byte(fmt.Sprintf("q%03d", j))
			p.Cells = append(p.Cells, hrpc.MutationCell{Family: []byte("f"), Qualifier: q,
				Timestamp: hrpc.LatestTimestamp, Type: hrpc.TypePut, Value: bytes.Repeat([]byte{byte(i)}, 100)})
			if j > 0 {
				d.Cells = append(d.Cells, hrpc.MutationCell{Family: []byte("f"), Qualifier: q,
					Timestamp: hrpc.LatestTimestamp, Type: hrpc.TypeDeleteColumn})
			}
		}
		puts, dels = append(puts, p), append(dels, d)
	}
	for _, muts := range [][]*hrpc.Mutation{puts, dels} {
		if err := c.MutateBatch(ctx, table, muts); err != nil {
			t.Fatal(err)
		}
	}
	for _, limit := range []int{100, 1000, 4000} {
		sc := c.Scan(ctx, table, &hrpc.Scan{}, ScanOptions{BytesPerCall: limit})
		n := 0
		for sc.Next() {
			r := sc.At()
			if string(r.Key) != rowKey(n) || len(r.Cells) != 1 || string(r.Cells[0].Row) != rowKey(n) || r.Cells[0].Value[0] != byte(n) {
				t.Fatalf("%d bytes a call: row %d is %q with %d cells", limit, n, r.Key, len(r.Cells))
			}
			n++
		}
		if err := sc.Err(); err != nil || n != rows {
			t.Fatalf("%d bytes a call: %d rows, %v", limit, n, err)
		}
		sc.Close()
	}
}
