package hbase

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// TestScanStopInclusiveAtRegionEnd: a Scanner whose Stop is inclusive and
// equal to a region's end key goes on into the next region, whose first
// row the stop row is (as Java's client, ConnectionUtils.noMoreResultsForScan,
// stops at a region's end only for an exclusive stop row); a scan of one
// row, Start equal to an inclusive Stop, returns it. Both were lost when
// the Scanner ended wherever a region's end reached the stop row.
func TestScanStopInclusiveAtRegionEnd(t *testing.T) {
	c := testClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	table := fmt.Sprintf("stopincl-%d", time.Now().UnixNano()%1e9)
	if err := c.CreateTable(ctx, table, []hrpc.Family{{Name: "f"}}, [][]byte{[]byte("m")}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := c.DisableTable(ctx, table); err == nil {
			_ = c.DeleteTable(ctx, table)
		}
	}()
	var muts []*hrpc.Mutation
	for _, r := range []string{"a", "k", "m", "z"} {
		muts = append(muts, put(r, "f", "q", "v"))
	}
	if err := c.MutateBatch(ctx, table, muts); err != nil {
		t.Fatal(err)
	}
	scan := func(s *hrpc.Scan) []string {
		sc := c.Scan(ctx, table, s, ScanOptions{})
		defer sc.Close()
		var got []string
		for sc.Next() {
			got = append(got, string(sc.At().Key))
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := scan(&hrpc.Scan{Start: []byte("k"), Stop: []byte("m"), StopInclusive: true}); fmt.Sprint(got) != "[k m]" {
		t.Errorf("scan [k, m] across the region boundary at m: %q, want [k m]", got)
	}
	if got := scan(&hrpc.Scan{Start: []byte("m"), Stop: []byte("m"), StopInclusive: true}); fmt.Sprint(got) != "[m]" {
		t.Errorf("scan [m, m]: %q, want [m]", got)
	}
}
