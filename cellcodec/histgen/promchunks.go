package histgen

import (
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// PromChunkBytes is the size of n integer histograms in histogram chunks as
// Prometheus's head cuts them (a new chunk at the target size once the
// minimum count is in, or where its appender asks for one): what a store's
// compacted histograms are measured against. at returns the i-th sample.
func PromChunkBytes(n int, at func(i int) (t int64, h *histogram.Histogram)) int {
	total := 0
	c := chunkenc.NewHistogramChunk()
	app, _ := c.Appender()
	for i := range n {
		if i > 0 && c.NumSamples() >= chunkenc.MinSamplesPerHistogramChunk && len(c.Bytes()) >= chunkenc.TargetBytesPerHistogramChunk {
			total += len(c.Bytes())
			c = chunkenc.NewHistogramChunk()
			app, _ = c.Appender()
		}
		t, h := at(i)
		nc, _, a, _ := app.AppendHistogram(nil, 0, t, h.Copy(), false)
		if nc != nil {
			total += len(c.Bytes())
			c = nc.(*chunkenc.HistogramChunk)
		}
		app = a
	}
	return total + len(c.Bytes())
}
