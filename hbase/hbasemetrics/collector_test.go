package hbasemetrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

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
	problems, err := testutil.CollectAndLint(NewCollector(c))
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}
