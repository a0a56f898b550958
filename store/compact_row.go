package store

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/table"
)

// compactPlan is what compacting a batch of hour rows writes and deletes,
// in this order: the new chunk cells, then, row by row in one deletion
// each, the old chunk cells they replace and the raw cells they fold in.
// The chunks go in one call; the deletions wait in pendingDeletes, with
// those of the next batches, and then go in one call. Killed between the
// two the rows read the same: until the raw cells go they win over any
// chunk, and an old chunk beside a new one agrees with it wherever no raw
// cell overrides both.
type compactPlan struct {
	puts      []table.Cell          // new chunk cells
	delChunks []table.Cell          // old chunk cells no new one overwrites
	delRaw    []table.Cell          // exactly the raw cells read: qualifier and version
	rows      int                   // rows that change
	bytes     int                   // qualifier and value bytes of puts
	layouts   [len(cellLayouts)]int // puts by cellLayout
	fences    []rowFence            // each changed row's share of puts, and its condition
	xorOnly   bool                  // floats as XOR chunks only (Config.FloatChunks)
	// maxCellBytes bounds a chunk cell's value (0: MaxChunkCellBytes);
	// tests set it low.
	maxCellBytes int

	// scratch
	samples []Sample
	chunks  []cellcodec.Chunk
	packed  []cellcodec.Chunk // a float run's chunks, before they are packed
	// xorCells are a float run's XOR cells, each a Chunk whose Data is the
	// cell's value.
	xorCells []cellcodec.Chunk
	points   []cellcodec.Point
	hists    []HistogramSample
	keep     []cellcodec.Point // samples no chunk gives back exactly: they stay raw
	keptRaw  []bool            // per keep: a raw cell holds it already
	// xorBuf is where a chunk is encoded before it is copied out at its
	// size: the encoder reserves room for the longest chunk its samples
	// could make, some 2 KB for 120, and a planned cell lives until its
	// batch is written.
	xorBuf []byte
}

// rowFence is one row's share of a plan's puts, puts[from:to], and of its
// deletions, delChunks[chunksFrom:chunksTo] and delRaw[rawFrom:rawTo], and
// the cell that guards them: the row's fence cell in FamilyFence
// (cellcodec/fence.go), the last of the puts, counting one more fold.
// The puts are written only while it holds expected, what the row held
// there when read (nil when it held none; Compactor.putFenced); the
// deletions go only while it holds wrote, the value the puts wrote there
// (Compactor.flushDeletes). So a fold by another compactor in between,
// whatever cells it changed, refuses both.
type rowFence struct {
	from, to             int
	chunksFrom, chunksTo int
	rawFrom, rawTo       int
	expected, wrote      []byte
}

// fenceQualifier is the fence cell's qualifier, shared by every put of it
// and every condition on it (never written to: its capacity is its length,
// so an append copies).
var fenceQualifier = slices.Clip(cellcodec.AppendFenceQualifier(nil))

func (p *compactPlan) reset() {
	clear(p.puts)
	clear(p.delChunks)
	clear(p.delRaw)
	clear(p.fences)
	p.puts, p.delChunks, p.delRaw, p.fences = p.puts[:0], p.delChunks[:0], p.delRaw[:0], p.fences[:0]
	p.rows, p.bytes, p.layouts = 0, 0, [len(cellLayouts)]int{}
}

// addRow plans the compaction of one hour row (key, its cells as read, the
// hour's first millisecond). A row without raw cells whose chunks do not
// overlap is left alone: it is compacted already. On error (a malformed
// cell) nothing of the row is planned.
func (p *compactPlan) addRow(key []byte, hourMillis int64, cells []table.Cell) error {
	raw := 0
	p.chunks = p.chunks[:0]
	for i := range cells {
		c := &cells[i]
		if !cellcodec.IsChunkQualifier(c.Qualifier) {
			raw++
			continue
		}
		var err error
		if p.chunks, err = cellcodec.AppendCellChunks(p.chunks, hourMillis, c.Qualifier, c.Value); err != nil {
			return err
		}
	}
	// Cells come in qualifier order: by encoding, then by MinT.
	slices.SortFunc(p.chunks, func(a, b cellcodec.Chunk) int { return compareInt64(a.MinT, b.MinT) })
	overlap := false
	for i := 1; i < len(p.chunks); i++ {
		overlap = overlap || p.chunks[i].MinT <= p.chunks[i-1].MaxT
	}
	if raw == 0 && !overlap {
		return nil
	}
	var err error
	p.points, err = cellcodec.AppendRowPoints(p.points[:0], hourMillis, tableCells(cells), math.MinInt64, math.MaxInt64)
	if err != nil {
		return err
	}
	nPuts := len(p.puts)
	p.keep = p.keep[:0]
	if err := p.addRuns(key, hourMillis, p.points); err != nil {
		p.puts = p.puts[:nPuts]
		return err
	}
	newPuts := p.puts[nPuts:]
	nChunks, nRaw := len(p.delChunks), len(p.delRaw)
	p.keptRaw = append(p.keptRaw[:0], make([]bool, len(p.keep))...)
	var fence *table.Cell
	for i := range cells {
		c := &cells[i]
		if c.Family == FamilyFence {
			// The row's fence: the new one overwrites it (same qualifier
			// and version).
			if cellcodec.IsFenceQualifier(c.Qualifier) {
				fence = c
			}
			continue
		}
		del := table.Cell{Row: key, Family: c.Family, Qualifier: c.Qualifier, Timestamp: c.Timestamp}
		if !cellcodec.IsChunkQualifier(c.Qualifier) {
			// A sample no chunk holds stays a raw cell, in FamilyData: reads
			// take FamilyRaw only while a mark lists the row's hour, and the
			// mark goes after this pass. One in FamilyRaw moves there
			// (putKeptFromChunks writes it). One in FamilyData stays, and is
			// overwritten in place when FamilyRaw holds a later write of it
			// (deleting its version would delete the overwrite).
			if k, ok := p.kept(hourMillis, c.Qualifier); ok && c.Family != FamilyRaw {
				p.keptRaw[k] = findCell(cells, FamilyRaw, c.Qualifier) == nil
				continue
			}
			p.delRaw = append(p.delRaw, del)
			continue
		}
		// A new chunk cell with the same qualifier and version has replaced
		// this one already; deleting that version would delete the new one.
		if !overwrites(newPuts, c) {
			p.delChunks = append(p.delChunks, del)
		}
	}
	p.putKeptFromChunks(key, hourMillis)
	if len(p.puts) == nPuts {
		// Every sample of a row that changes goes into a new chunk or stays
		// a raw cell that the row keeps; deletions with nothing written
		// would lose them, and would have no cell to guard them.
		if len(p.delChunks) > nChunks || len(p.delRaw) > nRaw {
			p.delChunks, p.delRaw = p.delChunks[:nChunks], p.delRaw[:nRaw]
			return fmt.Errorf("row %x: the fold writes nothing yet deletes cells", key)
		}
		p.rows++
		return nil
	}
	f := rowFence{from: nPuts, chunksFrom: nChunks, chunksTo: len(p.delChunks), rawFrom: nRaw, rawTo: len(p.delRaw)}
	if fence != nil {
		f.expected = fence.Value
	}
	next, err := cellcodec.AppendNextFence(nil, f.expected)
	if err != nil {
		p.puts, p.delChunks, p.delRaw = p.puts[:nPuts], p.delChunks[:nChunks], p.delRaw[:nRaw]
		return fmt.Errorf("row %x: %w", key, err)
	}
	f.wrote = next
	// The hour's last millisecond: the fence outlives every cell of the
	// row under the table's TTL, and each fold's overwrites the last's.
	p.puts = append(p.puts, table.Cell{Row: key, Family: FamilyFence, Qualifier: fenceQualifier,
		Timestamp: hourMillis + cellcodec.HourMillis - 1, Value: next})
	p.bytes += len(fenceQualifier) + len(next)
	f.to = len(p.puts)
	p.fences = append(p.fences, f)
	p.rows++
	return nil
}

// findCell returns the cell (family, qualifier) among cells, nil when
// there is none.
func findCell(cells []table.Cell, family string, qualifier []byte) *table.Cell {
	for i := range cells {
		if cells[i].Family == family && bytes.Equal(cells[i].Qualifier, qualifier) {
			return &cells[i]
		}
	}
	return nil
}

// addRuns plans the chunks of a row's points (sorted by time, without
// duplicates), run by run: floats into XOR chunks, histograms into
// histogram chunks; a histogram that no chunk gives back exactly is
// appended to p.keep. The compactor and WriteHistory cut hours with it.
func (p *compactPlan) addRuns(key []byte, hourMillis int64, pts []cellcodec.Point) error {
	for len(pts) > 0 {
		n := 1
		for n < len(pts) && pts[n].IsHistogram() == pts[0].IsHistogram() {
			n++
		}
		if pts[0].IsHistogram() {
			p.addHistogramRun(key, hourMillis, pts[:n])
		} else if err := p.addFloatRun(key, hourMillis, pts[:n]); err != nil {
			return err
		}
		pts = pts[n:]
	}
	return nil
}

func overwrites(puts []table.Cell, c *table.Cell) bool {
	for i := range puts {
		if puts[i].Timestamp == c.Timestamp && bytes.Equal(puts[i].Qualifier, c.Qualifier) {
			return true
		}
	}
	return false
}
