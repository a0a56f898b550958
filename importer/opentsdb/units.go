package opentsdb

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/importer"
)

// probeWorkers bounds the metrics whose extent is looked for at once.
const probeWorkers = 4

// Units lists, oldest first, one unit per metric and span between the
// metric's first and last row in the time range.
func (s *Source) Units(ctx context.Context) ([]importer.Unit, error) {
	type extent struct {
		first, last int64
		ok          bool
		err         error
	}
	ext := make([]extent, len(s.metrics))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(probeWorkers, len(s.metrics)) {
		wg.Go(func() {
			for i := range next {
				e := &ext[i]
				e.first, e.last, e.ok, e.err = s.extent(ctx, s.dict.metricUID[s.metrics[i]])
			}
		})
	}
	for i := range s.metrics {
		next <- i
	}
	close(next)
	wg.Wait()

	mint, maxt := s.opts.timeRange()
	span := int64(s.opts.SpanHours) * hour
	var units []importer.Unit
	for i, e := range ext {
		if e.err != nil {
			return nil, fmt.Errorf("opentsdb: finding the rows of metric %q: %w", s.metrics[i], e.err)
		}
		if !e.ok {
			continue
		}
		for start := e.first - e.first%span; start <= e.last; start += span {
			lo, hi := max(start*1000, mint), min((start+span)*1000-1, maxt)
			if lo > hi {
				continue
			}
			// The ID names the span, not its clipped bounds: a rerun whose
			// start a retention moved on finds the first span done too
			// (the importer keys the state by the options as given).
			id := unitID(s.metrics[i], start*1000, (start+span)*1000-1)
			units = append(units, importer.Unit{ID: id, MinTime: lo, MaxTime: hi})
		}
	}
	slices.SortFunc(units, func(a, b importer.Unit) int {
		return cmp.Or(cmp.Compare(a.MinTime, b.MinTime), cmp.Compare(a.ID, b.ID))
	})
	return units, nil
}

// baseRange is the range of row base times (seconds, hour-aligned) whose
// samples fall in [mint, maxt] (OpenTSDB writes offsets within the hour).
func baseRange(mint, maxt int64) (first, last int64) {
	first = max(mint/1000, 0)
	first -= first % hour
	last = min(maxt/1000, maxBase)
	last -= last % hour
	return first, last
}

// extent finds the base times of a metric's first and last rows in the
// time range, over every salt bucket: one probe for the first, a binary
// search of probes for the last.
func (s *Source) extent(ctx context.Context, metric []byte) (first, last int64, ok bool, err error) {
	lo, hi := baseRange(s.opts.timeRange())
	for b := range s.layout.buckets {
		f, found, err := s.probe(ctx, b, metric, lo, hi)
		if err != nil || !found {
			if err != nil {
				return 0, 0, false, err
			}
			continue
		}
		l, top := f, hi
		if ok && last > l {
			l = last // only a later last row matters
		}
		for l < top {
			mid := l + ((top-l)/hour+1)/2*hour
			b2, found, err := s.probe(ctx, b, metric, mid, top)
			if err != nil {
				return 0, 0, false, err
			}
			if found {
				l = b2
			} else {
				top = mid - hour
			}
		}
		if !ok || f < first {
			first = f
		}
		last = max(last, l)
		ok = true
	}
	return first, last, ok, nil
}

// probe returns the base time of the first row of metric in bucket whose
// base time is in [from, to].
func (s *Source) probe(ctx context.Context, bucket int, metric []byte, from, to int64) (int64, bool, error) {
	start, stop := s.layout.rowRange(bucket, metric, from, to)
	sc := s.tb.scan(ctx, s.opts.DataTable, &hrpc.Scan{
		Start: start, Stop: stop, Families: [][]byte{familyData}, CellsPerFamily: 1, Filter: hrpc.KeyOnlyFilter{},
	}, hbase.ScanOptions{RowsPerCall: 1})
	defer sc.Close()
	if !sc.Next() {
		return 0, false, sc.Err()
	}
	key := sc.At().Key
	at := s.layout.tagsAt()
	if len(key) < at {
		return 0, false, fmt.Errorf("row key %x shorter than %d bytes", key, at)
	}
	return int64(binary.BigEndian.Uint32(key[at-4:])), true, nil
}
