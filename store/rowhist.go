package store

import (
	"fmt"
	"math"
	"slices"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/table"
)

// decodeHist is decode for a row holding histograms: raw cells of either
// kind and chunks of any encoding merge into one time line (a raw cell
// winning over a chunk sample of the same time, the first chunk among
// chunks), then split into loose floats and loose histograms. d.chunks is
// sorted already; d.raw ends up holding the raw cells' times, which is all
// passable needs of them.
func (d *rowDecoder) decodeHist(hourMillis int64, cells []table.Cell, mint, maxt int64, passThrough bool) error {
	clear(d.rawP)
	clear(d.points)
	d.raw, d.rawP, d.points = d.raw[:0], d.rawP[:0], d.points[:0]
	for i := range cells {
		c := &cells[i]
		if isChunkCell(c) {
			continue
		}
		p, err := cellcodec.DecodeRawPoint(hourMillis, c.Qualifier, c.Value)
		if err != nil {
			return fmt.Errorf("cell %d of row: %w", i, err)
		}
		if p.T >= mint && p.T <= maxt {
			d.rawP = append(d.rawP, p)
		}
	}
	slices.SortStableFunc(d.rawP, comparePointT)
	d.rawP = slices.CompactFunc(d.rawP, samePointT)
	for _, p := range d.rawP {
		d.raw = append(d.raw, Sample{T: p.T})
	}
	d.points = append(d.points, d.rawP...)
	reach := int64(math.MinInt64) // the latest MaxT of the chunks before i
	for i, c := range d.chunks {
		pass := passThrough && d.passable(i, reach, mint, maxt)
		reach = max(reach, c.MaxT)
		if pass {
			d.pass = append(d.pass, c)
			continue
		}
		if err := d.appendChunkPoints(c, mint, maxt); err != nil {
			return err
		}
	}
	slices.SortStableFunc(d.points, comparePointT)
	d.points = slices.CompactFunc(d.points, samePointT)
	d.loose = d.loose[:0]
	for _, p := range d.points {
		if p.IsHistogram() {
			d.looseH = append(d.looseH, p.Histogram())
		} else {
			d.loose = append(d.loose, Sample{T: p.T, V: p.V})
		}
	}
	return nil
}

// appendChunkPoints appends the samples of chunk c in [mint, maxt] to
// d.points.
func (d *rowDecoder) appendChunkPoints(c storedChunk, mint, maxt int64) error {
	if c.IsFloat() {
		var err error
		if d.loose, err = appendChunkSamples(d.loose[:0], c, mint, maxt); err != nil {
			return err
		}
		for _, s := range d.loose {
			d.points = append(d.points, cellcodec.Point{T: s.T, V: s.V})
		}
		return nil
	}
	start := len(d.looseH)
	hs, err := appendChunkHistograms(d.looseH, c, mint, maxt)
	if err != nil {
		return err
	}
	for _, h := range hs[start:] {
		d.points = append(d.points, cellcodec.Point{T: h.T, H: h.H, FH: h.FH})
	}
	clear(hs[start:])
	d.looseH = hs[:start]
	return nil
}

func comparePointT(a, b cellcodec.Point) int { return compareInt64(a.T, b.T) }
func samePointT(a, b cellcodec.Point) bool   { return a.T == b.T }
