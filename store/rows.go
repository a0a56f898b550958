package store

import (
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/table"
)

// rowDecoder splits the cells of one hour row into the stored chunks that can
// go out as they are and the loose samples that cannot: raw cells (late
// samples beside a chunk, or an hour not compacted yet) and the samples of
// chunks cut by the query's range or overlapped by raw cells. Loose samples
// come out sorted by time without duplicates, a raw cell winning over a chunk
// sample of the same time, being the later write.
type rowDecoder struct {
	raw    []Sample
	chunks []storedChunk
	pass   []storedChunk // chunks passed through, by time
	loose  []Sample

	// A row holding histograms (raw or chunked) takes the general path
	// (rowhist.go): its loose float and histogram samples are disjoint in
	// time, each sorted.
	hist   bool
	rawP   []cellcodec.Point
	points []cellcodec.Point
	looseH []HistogramSample
}

// release drops the decoder's references into the rows it decoded (chunks'
// bytes are the rows'), up to its buffers' capacity, before it goes back to
// the pool; the buffers' lengths are decode's to reset.
func (d *rowDecoder) release() {
	clear(d.chunks[:cap(d.chunks)])
	clear(d.pass[:cap(d.pass)])
	clear(d.looseH[:cap(d.looseH)])
	clear(d.rawP[:cap(d.rawP)])
	clear(d.points[:cap(d.points)])
}

// decode splits row, whose hour starts at hourMillis, for the range
// [mint, maxt]. With passThrough false every chunk is decoded (a SAMPLES
// read). The results are valid until the next call.
func (d *rowDecoder) decode(hourMillis int64, cells []table.Cell, mint, maxt int64, passThrough bool) error {
	d.raw, d.chunks, d.pass, d.loose = d.raw[:0], d.chunks[:0], d.pass[:0], d.loose[:0]
	clear(d.looseH)
	d.looseH, d.hist = d.looseH[:0], false
	rawSorted := true
	for i := range cells {
		c := &cells[i]
		if isChunkCell(c) {
			n := len(d.chunks)
			var err error
			if d.chunks, err = appendCellChunks(d.chunks, hourMillis, c, mint, maxt); err != nil {
				return fmt.Errorf("cell %d of row: %w", i, err)
			}
			for _, cc := range d.chunks[n:] {
				d.hist = d.hist || !cc.IsFloat()
			}
			continue
		}
		if isHistogramCell(c) {
			d.hist = true
			continue
		}
		s, err := decodeRawCell(hourMillis, c)
		if err != nil {
			return fmt.Errorf("cell %d of row: %w", i, err)
		}
		if s.T < mint || s.T > maxt {
			continue
		}
		if n := len(d.raw); n > 0 && s.T <= d.raw[n-1].T {
			rawSorted = false
		}
		d.raw = append(d.raw, s)
	}
	if !rawSorted {
		// A backend returns cells in qualifier order; this is a safety net.
		slices.SortStableFunc(d.raw, compareSampleT)
		d.raw = slices.CompactFunc(d.raw, sameSampleT)
	}
	slices.SortStableFunc(d.chunks, func(a, b storedChunk) int { return compareInt64(a.MinT, b.MinT) })
	if d.hist {
		return d.decodeHist(hourMillis, cells, mint, maxt, passThrough)
	}
	d.loose = append(d.loose, d.raw...)
	// Each block appended is strictly ascending (raw sorted above, a chunk's
	// samples checked by its decoder), so loose needs sorting only where a
	// block does not start after the one before: raw samples among a
	// chunk's, or chunks overlapping. The common row (a dense cell, or XOR
	// chunks cut by the range) is then never sorted.
	sorted := true
	reach := int64(math.MinInt64) // the latest MaxT of the chunks before i
	for i, c := range d.chunks {
		pass := passThrough && d.passable(i, reach, mint, maxt)
		reach = max(reach, c.MaxT)
		if pass {
			d.pass = append(d.pass, c)
			continue
		}
		before := len(d.loose)
		var err error
		if d.loose, err = appendChunkSamples(d.loose, c, mint, maxt); err != nil {
			return err
		}
		if before > 0 && len(d.loose) > before && d.loose[before].T <= d.loose[before-1].T {
			sorted = false
		}
	}
	if !sorted {
		// Raw samples come first, so the stable sort keeps them ahead of
		// chunk samples of the same time and the compaction drops the latter.
		slices.SortStableFunc(d.loose, compareSampleT)
		d.loose = slices.CompactFunc(d.loose, sameSampleT)
	}
	return nil
}

// passable reports whether the i-th chunk can go out untouched: an XOR
// chunk (a dense cell is decoded, and cut anew like raw samples) wholly
// inside the range that no raw sample and no other chunk of the row
// overlaps. The chunks are sorted by MinT, and reach is the latest MaxT of
// those before i: any of them may overlap it, not only the one just before, as between a refold's
// two steps, when an old chunk of the whole hour lies beside the new ones
// that cut it in two.
func (d *rowDecoder) passable(i int, reach, mint, maxt int64) bool {
	c := d.chunks[i]
	if c.Encoding != chunkenc.EncXOR || c.MinT < mint || c.MaxT > maxt || c.NumSamples() == 0 {
		return false
	}
	if reach >= c.MinT {
		return false
	}
	if i+1 < len(d.chunks) && d.chunks[i+1].MinT <= c.MaxT {
		return false
	}
	j, _ := slices.BinarySearchFunc(d.raw, c.MinT, func(s Sample, t int64) int { return compareInt64(s.T, t) })
	return j == len(d.raw) || d.raw[j].T > c.MaxT
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareSampleT(a, b Sample) int { return compareInt64(a.T, b.T) }
func sameSampleT(a, b Sample) bool   { return a.T == b.T }
