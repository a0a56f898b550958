package labels2uid

import (
	"context"
	"fmt"
	"testing"

	"github.com/prom-hbase/prom-hbase/table/testdb"
)

// BenchmarkAssignNew assigns the strings of one Prometheus-sized request of
// 10,000 new series: 10,000 pod names, 100 instances, 10 jobs and metric
// names, 5 label names; 10,115 new strings a batch, every batch new. It
// reports new strings per second; on HBase (PROMHBASE_TEST_ZK set) it is the
// cold-start figure of BENCHMARKS.md without the HTTP layer.
func BenchmarkAssignNew(b *testing.B) {
	for _, be := range testdb.Backends("labels2uid") {
		b.Run(be.Name, func(b *testing.B) {
			db, prefix := be.Open(b)
			tbl := uidTable(b, db, prefix+"uid")
			r, err := New(context.Background(), tbl, Config{})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var batch Batch
			strs := 0
			round := 0
			for b.Loop() {
				batch.Reset()
				for i := range 10000 {
					batch.Add(TagV, fmt.Sprintf("r%d-pod-%05d", round, i))
				}
				for i := range 100 {
					batch.Add(TagV, fmt.Sprintf("r%d-10.0.0.%d:9100", round, i))
				}
				for i := range 10 {
					batch.Add(Metric, fmt.Sprintf("r%d_metric_%d_total", round, i))
				}
				for i := range 5 {
					batch.Add(TagK, fmt.Sprintf("r%d_label_%d", round, i))
				}
				round++
				strs += batch.Len()
				if err := r.GetOrAssign(ctx, &batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(strs)/b.Elapsed().Seconds(), "strings/s")
		})
	}
}
