package hbase

import (
	"context"
	"testing"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// BenchmarkCheckAndPutBatch writes 1000 rows conditionally in one call, as
// the UID assignment of a burst of new series does: one Multi per server, a
// RegionAction with its condition per row. Every put wins (fresh rows).
func BenchmarkCheckAndPutBatch(b *testing.B) {
	c := benchClient(b)
	table := testTable(b, c, benchSplits()...)
	ctx := context.Background()
	puts := make([]CondMutation, benchRowsPerPut)
	for i := range puts {
		puts[i] = CondMutation{
			Mutation: &hrpc.Mutation{Type: hrpc.MutationPut, Cells: []hrpc.MutationCell{{
				Family: []byte("f"), Qualifier: []byte("id"), Timestamp: hrpc.LatestTimestamp, Type: hrpc.TypePut, Value: make([]byte, 8)}}},
			Family: []byte("f"), Qualifier: []byte("id"),
		}
	}
	b.ResetTimer()
	meter := startMeter()
	for n := 0; n < b.N; n++ {
		for i := range puts {
			puts[i].Mutation.Row = benchRow(nil, n*benchRowsPerPut+i)
		}
		written, err := c.CheckAndMutateBatch(ctx, table, puts)
		if err != nil {
			b.Fatal(err)
		}
		for i, w := range written {
			if !w {
				b.Fatalf("put %d of round %d lost on a fresh row", i, n)
			}
		}
	}
	b.StopTimer()
	meter.report(b, b.N*benchRowsPerPut)
}
