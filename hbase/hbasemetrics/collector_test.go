package hbasemetrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/prom-hbase/prom-hbase/hbase"
)

// TestCollector: every reason is exported from the start, at zero, so a
// rate() over it works before the first relocation.
func TestCollector(t *testing.T) {
	c := hbase.New(hbase.Config{ZooKeeper: "127.0.0.1:1"})
	defer c.Close()
	want := `# HELP promhbase_hbase_retries_total Attempts of HBase calls repeated after a retryable error.
# TYPE promhbase_hbase_retries_total counter
promhbase_hbase_retries_total 0
`
	if err := testutil.CollectAndCompare(NewCollector(c), strings.NewReader(want), "promhbase_hbase_retries_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(NewCollector(c), "promhbase_hbase_relocations_total"); n != len(hbase.Reasons()) {
		t.Fatalf("%d relocation series, want one per reason (%d)", n, len(hbase.Reasons()))
	}
	wantHist := `# HELP promhbase_hbase_write_multi_calls Write calls (batched puts and deletes) each Multi RPC of mutations carried: above 1 when concurrent calls for one region server shared a Multi (--hbase.coalesce-writes).
# TYPE promhbase_hbase_write_multi_calls histogram
promhbase_hbase_write_multi_calls_bucket{le="1"} 0
promhbase_hbase_write_multi_calls_bucket{le="2"} 0
promhbase_hbase_write_multi_calls_bucket{le="4"} 0
promhbase_hbase_write_multi_calls_bucket{le="8"} 0
promhbase_hbase_write_multi_calls_bucket{le="16"} 0
promhbase_hbase_write_multi_calls_bucket{le="32"} 0
promhbase_hbase_write_multi_calls_bucket{le="64"} 0
promhbase_hbase_write_multi_calls_bucket{le="+Inf"} 0
promhbase_hbase_write_multi_calls_sum 0
promhbase_hbase_write_multi_calls_count 0
`
	if err := testutil.CollectAndCompare(NewCollector(c), strings.NewReader(wantHist), "promhbase_hbase_write_multi_calls"); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.CollectAndLint(NewCollector(c))
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// TestMultiCallsBuckets: the client's per-bucket counts become cumulative
// buckets, the last one +Inf.
func TestMultiCallsBuckets(t *testing.T) {
	st := hbase.Stats{CallsInMultis: 3*1 + 1*2 + 2*7 + 1*100}
	copy(st.CallsPerMulti[:], []uint64{3, 1, 0, 2, 0, 0, 0, 1})
	var m dto.Metric
	if err := multiCalls(st).Write(&m); err != nil {
		t.Fatal(err)
	}
	h := m.GetHistogram()
	if h.GetSampleCount() != 7 || h.GetSampleSum() != 119 {
		t.Fatalf("count %d sum %v, want 7 and 119", h.GetSampleCount(), h.GetSampleSum())
	}
	want := map[float64]uint64{1: 3, 2: 4, 4: 4, 8: 6, 16: 6, 32: 6, 64: 6}
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCount() != want[b.GetUpperBound()] {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want[b.GetUpperBound()])
		}
	}
	if len(h.GetBucket()) != len(want) {
		t.Errorf("%d buckets, want %d", len(h.GetBucket()), len(want))
	}
}
