// Package hbasemetrics exposes an HBase client's counters to Prometheus. It
// owns the metric names only; what is counted, and why, is package hbase's.
package hbasemetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/prom-hbase/prom-hbase/hbase"
)

var (
	relocationsDesc = prometheus.NewDesc("promhbase_hbase_relocations_total",
		"Cached region or hbase:meta locations the HBase client dropped, by reason: region_moved (the server said "+
			"the region is not there), timeout (an attempt got no answer in time), server_down (the connection "+
			"failed or the server is stopping), stalled (the server sent nothing while calls waited), "+
			"meta_moved (hbase:meta's location read again).",
		[]string{"reason"}, nil)
	retriesDesc = prometheus.NewDesc("promhbase_hbase_retries_total",
		"Attempts of HBase calls repeated after a retryable error.", nil, nil)
	multiCallsDesc = prometheus.NewDesc("promhbase_hbase_write_multi_calls",
		"Write calls (batched puts and deletes) each Multi RPC of mutations carried: above 1 when concurrent "+
			"calls for one region server shared a Multi (--hbase.coalesce-writes).",
		nil, nil)
)

// Collector reads the client's counters at each scrape.
type Collector struct {
	c *hbase.Client
}

// NewCollector returns a collector for the client's counters.
func NewCollector(c *hbase.Client) *Collector { return &Collector{c: c} }

// Describe implements prometheus.Collector.
func (x *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- relocationsDesc
	ch <- retriesDesc
	ch <- multiCallsDesc
}

// Collect implements prometheus.Collector.
func (x *Collector) Collect(ch chan<- prometheus.Metric) {
	st := x.c.Stats()
	for _, r := range hbase.Reasons() {
		ch <- prometheus.MustNewConstMetric(relocationsDesc, prometheus.CounterValue, float64(st.RelocationsBy[r]), r.String())
	}
	ch <- prometheus.MustNewConstMetric(retriesDesc, prometheus.CounterValue, float64(st.Retries))
	ch <- multiCalls(st)
}

// multiCalls is the histogram of calls per Multi, its buckets cumulative.
func multiCalls(st hbase.Stats) prometheus.Metric {
	bounds := hbase.CallsPerMultiBounds()
	buckets := make(map[float64]uint64, len(bounds))
	var n uint64
	for b, count := range st.CallsPerMulti {
		n += count
		if b < len(bounds) {
			buckets[float64(bounds[b])] = n
		}
	}
	return prometheus.MustNewConstHistogram(multiCallsDesc, n, float64(st.CallsInMultis), buckets)
}
