package store

import (
	"bytes"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/table"
)

// compactPlan is what compacting a batch of hour rows writes and deletes,
// in this order, each step one call: the new chunk cells, then the old
// chunk cells they replace, then the raw cells they fold in. Killed between
// any two steps the rows read the same: until the raw cells go they win over
// any chunk, and an old chunk beside a new one agrees with it wherever no
// raw cell overrides both.
type compactPlan struct {
	puts      []table.Cell // new chunk cells
	delChunks []table.Cell // old chunk cells no new one overwrites
	delRaw    []table.Cell // exactly the raw cells read: qualifier and version
	rows      int          // rows that change
	bytes     int          // qualifier and value bytes of puts

	samples []Sample // scratch
	chunks  []cellcodec.Chunk
}

func (p *compactPlan) reset() {
	clear(p.puts)
	clear(p.delChunks)
	clear(p.delRaw)
	p.puts, p.delChunks, p.delRaw = p.puts[:0], p.delChunks[:0], p.delRaw[:0]
	p.rows, p.bytes = 0, 0
}

// addRow plans the compaction of one hour row (key, its cells as read, the
// hour's first millisecond). A row without raw cells whose chunks do not
// overlap is left alone: it is compacted already. On error (a malformed
// cell) nothing of the row is planned.
func (p *compactPlan) addRow(key []byte, hourMillis int64, cells []table.Cell) error {
	raw := 0
	p.chunks = p.chunks[:0]
	overlap := false
	for i := range cells {
		c := &cells[i]
		if !cellcodec.IsChunkQualifier(c.Qualifier) {
			raw++
			continue
		}
		ch, err := cellcodec.DecodeChunk(hourMillis, c.Qualifier, c.Value)
		if err != nil {
			return err
		}
		// Cells come in qualifier order, hence by MinT.
		if n := len(p.chunks); n > 0 && ch.MinT <= p.chunks[n-1].MaxT {
			overlap = true
		}
		p.chunks = append(p.chunks, ch)
	}
	if raw == 0 && !overlap {
		return nil
	}
	var err error
	p.samples, err = cellcodec.AppendRowSamples(p.samples[:0], hourMillis, tableCells(cells), math.MinInt64, math.MaxInt64)
	if err != nil {
		return err
	}
	nPuts := len(p.puts)
	n := cellcodec.ChunkCount(len(p.samples))
	for k := range n {
		part := p.samples[len(p.samples)*k/n : len(p.samples)*(k+1)/n]
		lo, hi := part[0].T-hourMillis, part[len(part)-1].T-hourMillis
		q := cellcodec.AppendChunkQualifier(nil, chunkenc.EncXOR, uint32(lo), uint32(hi))
		v, err := cellcodec.AppendChunkValue(nil, part)
		if err != nil {
			p.puts = p.puts[:nPuts]
			return fmt.Errorf("encode chunk: %w", err)
		}
		p.puts = append(p.puts, table.Cell{Row: key, Family: FamilyData, Qualifier: q, Timestamp: hourMillis + hi, Value: v})
		p.bytes += len(q) + len(v)
	}
	newPuts := p.puts[nPuts:]
	for i := range cells {
		c := &cells[i]
		del := table.Cell{Row: key, Family: FamilyData, Qualifier: c.Qualifier, Timestamp: c.Timestamp}
		if !cellcodec.IsChunkQualifier(c.Qualifier) {
			p.delRaw = append(p.delRaw, del)
			continue
		}
		// A new chunk cell with the same qualifier and version has replaced
		// this one already; deleting that version would delete the new one.
		if !overwrites(newPuts, c) {
			p.delChunks = append(p.delChunks, del)
		}
	}
	p.rows++
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
