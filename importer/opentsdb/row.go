package opentsdb

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/store"
)

// Stats counts what a source read and what it left out.
type Stats struct {
	Rows       int64 // data rows read
	Columns    int64 // columns read, of every kind
	Compacted  int64 // compacted columns among them
	Appends    int64 // append columns among them
	Samples    int64 // samples yielded
	Duplicates int64 // points dropped for a later write at the same millisecond
	OutOfRange int64 // points outside the unit's time range (rows straddle its edges)
	// Skipped columns: annotations, OpenTSDB histograms, unknown extended
	// types, and with Options.SkipCorrupt columns OpenTSDB cannot read.
	Annotations, Histograms, Unknown, Corrupt int64
}

func (s *Stats) add(o *Stats) {
	s.Rows += o.Rows
	s.Columns += o.Columns
	s.Compacted += o.Compacted
	s.Appends += o.Appends
	s.Samples += o.Samples
	s.Duplicates += o.Duplicates
	s.OutOfRange += o.OutOfRange
	s.Annotations += o.Annotations
	s.Histograms += o.Histograms
	s.Unknown += o.Unknown
	s.Corrupt += o.Corrupt
}

// rowDecoder turns a data row's columns into samples in time order, one per
// millisecond. It reuses its buffers from row to row.
type rowDecoder struct {
	skipCorrupt bool
	pts         []point
	stats       Stats // this decoder's, added to the source's when its iterator closes
}

// decode appends the samples of a row with base time base (seconds) that
// lie in [mint, maxt] (ms) to dst.
func (d *rowDecoder) decode(dst []store.Sample, base int64, cells []hrpc.Cell, mint, maxt int64) ([]store.Sample, error) {
	d.stats.Rows++
	pts := d.pts[:0]
	for _, c := range cells {
		d.stats.Columns++
		n := len(pts)
		var kind columnKind
		var err error
		pts, kind, err = appendColumn(pts, base, c.Qualifier, c.Value, c.Timestamp, n)
		if err != nil {
			if !d.skipCorrupt {
				d.pts = pts
				return dst, fmt.Errorf("column %x: %w", c.Qualifier, err)
			}
			d.stats.Corrupt++
			pts = pts[:n]
			continue
		}
		switch kind {
		case kindCompacted:
			d.stats.Compacted++
		case kindAppend:
			d.stats.Appends++
		case kindAnnotation:
			d.stats.Annotations++
		case kindHistogram:
			d.stats.Histograms++
		case kindUnknown:
			d.stats.Unknown++
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
			d.stats.Duplicates++
			continue
		}
		if p.T < mint || p.T > maxt {
			d.stats.OutOfRange++
			continue
		}
		dst = append(dst, store.Sample{T: p.T, V: p.V})
	}
	d.stats.Samples += int64(len(dst) - n0)
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
