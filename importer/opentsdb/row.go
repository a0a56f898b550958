package opentsdb

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/store"
)

// Stats counts what a source read and what it left out. Its fields are
// updated atomically; read them with Load.
type Stats struct {
	Rows       atomic.Int64 // data rows read
	Columns    atomic.Int64 // columns read, of every kind
	Compacted  atomic.Int64 // compacted columns among them
	Appends    atomic.Int64 // append columns among them
	Samples    atomic.Int64 // samples yielded
	Duplicates atomic.Int64 // points dropped for a later write at the same millisecond
	OutOfRange atomic.Int64 // points outside the unit's time range (rows straddle its edges)
	// Skipped columns: annotations, OpenTSDB histograms, unknown extended
	// types, and with Options.SkipCorrupt columns OpenTSDB cannot read.
	Annotations atomic.Int64
	Histograms  atomic.Int64
	Unknown     atomic.Int64
	Corrupt     atomic.Int64
}

// rowStats is one iterator's share of Stats, added to the source's at
// Close: counting per point must not touch shared cache lines.
type rowStats struct {
	rows, columns, compacted, appends, samples, duplicates, outOfRange int64
	annotations, histograms, unknown, corrupt                          int64
}

func (s *Stats) add(r *rowStats) {
	s.Rows.Add(r.rows)
	s.Columns.Add(r.columns)
	s.Compacted.Add(r.compacted)
	s.Appends.Add(r.appends)
	s.Samples.Add(r.samples)
	s.Duplicates.Add(r.duplicates)
	s.OutOfRange.Add(r.outOfRange)
	s.Annotations.Add(r.annotations)
	s.Histograms.Add(r.histograms)
	s.Unknown.Add(r.unknown)
	s.Corrupt.Add(r.corrupt)
}

// rowDecoder turns a data row's columns into samples in time order, one per
// millisecond. It reuses its buffers from row to row.
type rowDecoder struct {
	skipCorrupt bool
	pts         []point
	stats       rowStats
}

// decode appends the samples of a row with base time base (seconds) that
// lie in [mint, maxt] (ms) to dst.
func (d *rowDecoder) decode(dst []store.Sample, base int64, cells []hrpc.Cell, mint, maxt int64) ([]store.Sample, error) {
	d.stats.rows++
	pts := d.pts[:0]
	for _, c := range cells {
		d.stats.columns++
		n := len(pts)
		var kind columnKind
		var err error
		pts, kind, err = appendColumn(pts, base, c.Qualifier, c.Value, c.Timestamp, n)
		if err != nil {
			if !d.skipCorrupt {
				d.pts = pts
				return dst, fmt.Errorf("column %x: %w", c.Qualifier, err)
			}
			d.stats.corrupt++
			pts = pts[:n]
			continue
		}
		switch kind {
		case kindCompacted:
			d.stats.compacted++
		case kindAppend:
			d.stats.appends++
		case kindAnnotation:
			d.stats.annotations++
		case kindHistogram:
			d.stats.histograms++
		case kindUnknown:
			d.stats.unknown++
		}
	}
	d.pts = pts
	n0 := len(dst)
	if !inOrder(pts) {
		// Most recent write last among equal times, so that it is kept.
		slices.SortFunc(pts, func(a, b point) int {
			return cmp.Or(cmp.Compare(a.T, b.T), cmp.Compare(a.ver, b.ver), cmp.Compare(a.seq, b.seq))
		})
	}
	for i, p := range pts {
		if i+1 < len(pts) && pts[i+1].T == p.T {
			d.stats.duplicates++
			continue
		}
		if p.T < mint || p.T > maxt {
			d.stats.outOfRange++
			continue
		}
		dst = append(dst, store.Sample{T: p.T, V: p.V})
	}
	d.stats.samples += int64(len(dst) - n0)
	return dst, nil
}

// inOrder tells whether times strictly increase: then there is nothing to
// sort nor to drop, the case of every compacted row.
func inOrder(pts []point) bool {
	for i := 1; i < len(pts); i++ {
		if pts[i].T <= pts[i-1].T {
			return false
		}
	}
	return true
}
