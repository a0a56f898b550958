package store

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/cellcodec"
)

// compactMetrics are the compactor's metrics; their names are what the
// dashboards query, so they never change.
type compactMetrics struct {
	seriesHours  prometheus.Counter
	rawDeleted   prometheus.Counter
	bytesWritten prometheus.Counter
	cells        *prometheus.CounterVec // by cellLayouts
	errors       prometheus.Counter
	passes       prometheus.Counter
	rawSweeps    prometheus.Counter
	lag          prometheus.Gauge
}

func newCompactMetrics(reg prometheus.Registerer) (*compactMetrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &compactMetrics{
		seriesHours:  counter("promhbase_compactor_series_hours_total", "Hour rows of a series compacted (rewritten as chunk cells)."),
		rawDeleted:   counter("promhbase_compactor_raw_cells_deleted_total", "Raw sample cells folded into chunk cells and deleted."),
		bytesWritten: counter("promhbase_compactor_bytes_written_total", "Bytes of chunk cells written (qualifiers and values)."),
		cells: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_compactor_cells_written_total",
			Help: "Chunk cells written, by layout: xor (one XOR chunk), packed (an hour's XOR chunks), dense (an hour's floats as decimal mantissas; --storage.float-chunks), histogram (a histogram chunk).",
		}, []string{"layout"}),
		errors:    counter("promhbase_compactor_errors_total", "Bucket-hours whose compaction failed, passes that could not read the compaction table, and raw-family sweeps that could not be asked for."),
		passes:    counter("promhbase_compactor_passes_total", "Compaction passes started."),
		rawSweeps: counter("promhbase_compactor_raw_sweeps_total", "Sweeps of the raw family asked for, to drop the raw cells the passes deleted (--compactor.raw-sweep-interval): major compactions of it on HBase, flushes of the memtable on the embedded store."),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "promhbase_compactor_lag_seconds",
			Help: "Age of the oldest closed hour not yet compacted, since it closed (hour end + grace), as of the last pass; 0 when none. Backfilled history raises it until compacted.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, l := range cellLayouts {
		m.cells.WithLabelValues(l) // each layout shows from the start, at 0
	}
	for _, c := range []prometheus.Collector{m.seriesHours, m.rawDeleted, m.bytesWritten, m.cells, m.errors, m.passes, m.rawSweeps, m.lag} {
		if err := reg.Register(c); err != nil {
			if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
				return nil, fmt.Errorf("compactor metrics: one compactor per registry: %w", err)
			}
			return nil, fmt.Errorf("compactor metrics: %w", err)
		}
	}
	return m, nil
}

// cellLayouts name the chunk cells' layouts in promhbase_compactor_cells_written_total,
// indexed by cellLayout.
var cellLayouts = [...]string{"xor", "packed", "dense", "histogram"}

// cellLayout is the index in cellLayouts of a chunk cell of encoding enc.
func cellLayout(enc chunkenc.Encoding) int {
	switch enc {
	case chunkenc.EncXOR:
		return 0
	case cellcodec.EncPackedXOR:
		return 1
	case cellcodec.EncDenseFloat:
		return 2
	}
	return 3
}
