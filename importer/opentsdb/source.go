package opentsdb

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/importer"
)

// Source reads an OpenTSDB data table and its UID table. It is safe for
// concurrent use: units may be read in parallel.
type Source struct {
	tb      tables
	opts    Options
	layout  keyLayout
	dict    *dictionary
	metrics []string  // OpenTSDB names of the metrics to import, sorted
	buffers sync.Pool // *buffers of iterators closed

	mu    sync.Mutex
	stats Stats // of the iterators closed
}

var _ importer.Source = (*Source)(nil)

// New reads the UID table and checks the name mapping. The client stays the
// caller's.
func New(ctx context.Context, c *hbase.Client, opts Options) (*Source, error) {
	return newSource(ctx, clientTables{c}, opts)
}

func newSource(ctx context.Context, tb tables, opts Options) (*Source, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	d, err := loadDictionary(ctx, tb, o)
	if err != nil {
		return nil, err
	}
	s := &Source{tb: tb, opts: o, layout: o.layout(), dict: d}
	if len(o.Metrics) == 0 {
		for name := range d.metricUID {
			s.metrics = append(s.metrics, name)
		}
	} else {
		for _, name := range o.Metrics {
			if _, ok := d.metricUID[name]; !ok {
				return nil, fmt.Errorf("opentsdb: no metric %q in %s", name, o.UIDTable)
			}
			s.metrics = append(s.metrics, name)
		}
	}
	slices.Sort(s.metrics)
	s.metrics = slices.Compact(s.metrics)
	if c := collisions(s.metrics, MetricName); len(c) > 0 {
		return nil, fmt.Errorf("opentsdb: metrics map to one Prometheus name, which would merge their series: %s "+
			"(import one of each at a time with the metric list, or rename in OpenTSDB)", strings.Join(c, "; "))
	}
	return s, nil
}

// Stats returns the counts of what the units closed so far read and
// skipped.
func (s *Source) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Close logs what was skipped. The HBase client stays open.
func (s *Source) Close() error {
	st := s.Stats()
	skipped := st.Annotations + st.Histograms + st.Unknown + st.Corrupt
	log := s.opts.Logger.Info
	if skipped > 0 {
		log = s.opts.Logger.Warn
	}
	log("opentsdb source done", "rows", st.Rows, "columns", st.Columns,
		"compacted_columns", st.Compacted, "append_columns", st.Appends,
		"samples", st.Samples, "duplicates_dropped", st.Duplicates,
		"skipped_annotations", st.Annotations, "skipped_histograms", st.Histograms,
		"skipped_unknown_columns", st.Unknown, "skipped_corrupt", st.Corrupt)
	return nil
}

const idPrefix = "opentsdb:"

// unitID names a unit: its metric and span, nothing that changes between
// runs.
func unitID(metric string, mint, maxt int64) string {
	return idPrefix + metric + ":" + strconv.FormatInt(mint, 10) + "-" + strconv.FormatInt(maxt, 10)
}

// unitMetric is the OpenTSDB metric of a unit ID: what comes before the
// last ':' (a metric may hold ':' with tsd.core.tag.allow_specialchars; the
// bounds never do).
func unitMetric(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, idPrefix)
	i := strings.LastIndexByte(rest, ':')
	if !ok || i <= 0 {
		return "", false
	}
	return rest[:i], true
}

// Open iterates over the rows of a unit's metric and hours, in every salt
// bucket, yielding one series per row.
func (s *Source) Open(ctx context.Context, u importer.Unit) (importer.SeriesIterator, error) {
	metric, ok := unitMetric(u.ID)
	if !ok {
		return nil, fmt.Errorf("opentsdb: %q is not a unit of this source", u.ID)
	}
	uid, ok := s.dict.metricUID[metric]
	if !ok {
		return nil, fmt.Errorf("opentsdb: unit %s: no metric %q in %s", u.ID, metric, s.opts.UIDTable)
	}
	if u.MinTime > u.MaxTime || u.MaxTime < 0 {
		return emptyIter{}, nil
	}
	return newSeriesIter(ctx, s, u, uid, s.opts.MetricPrefix+MetricName(metric)), nil
}
