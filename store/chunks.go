package store

import (
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/cellcodec"
)

// samplesPerChunk is where Prometheus's head cuts an XOR chunk; chunks the
// read path cuts itself hold at most that many samples. Loose histograms
// are cut at most that many at a time too, so that pending stays bounded.
const samplesPerChunk = 120

// chunkBuilder assembles the chunks of one series from its rows in time
// order: stored chunks pass through (their bytes copied once, into the
// builder's arena, since rows do not outlive their batch) and loose samples
// wait in pending (floats) or pendingH (histograms) until a passed chunk,
// a switch of kind or the series' end cuts them into new chunks. Full
// chunks are cut as soon as pending holds enough, so pending never exceeds
// one chunk's worth. At most one of pending and pendingH holds samples.
type chunkBuilder struct {
	arena    []byte
	refs     []chunkRef
	chunks   []Chunk
	pending  []Sample
	pendingH []HistogramSample
}

// chunkRef is a chunk whose bytes are arena[off:end]; slices are taken only
// once the arena has stopped growing.
type chunkRef struct {
	mint, maxt int64
	n          int
	off, end   int
	enc        chunkenc.Encoding
}

func (b *chunkBuilder) reset() {
	b.arena, b.refs, b.pending = b.arena[:0], b.refs[:0], b.pending[:0]
	clear(b.pendingH)
	b.pendingH = b.pendingH[:0]
	clear(b.chunks)
	b.chunks = b.chunks[:0]
}

// release empties the builder for another query: what it keeps is its own
// arena and slices, and no reference into the rows it was given.
func (b *chunkBuilder) release() {
	b.reset()
	clear(b.chunks[:cap(b.chunks)])
	clear(b.pendingH[:cap(b.pendingH)])
}

// addRow appends what d decoded from one row.
func (b *chunkBuilder) addRow(d *rowDecoder) error {
	loose, looseH := d.loose, d.looseH
	for _, c := range d.pass {
		// Loose samples before the passed chunk go out before it; none lies
		// within it (see rowDecoder.passable).
		i, j := 0, 0
		for i < len(loose) && loose[i].T < c.MinT {
			i++
		}
		for j < len(looseH) && looseH[j].T < c.MinT {
			j++
		}
		if err := b.addMerged(loose[:i], looseH[:j], true); err != nil {
			return err
		}
		loose, looseH = loose[i:], looseH[j:]
		off := len(b.arena)
		b.arena = append(b.arena, c.Data...)
		b.refs = append(b.refs, chunkRef{mint: c.MinT, maxt: c.MaxT, n: c.NumSamples(), off: off, end: len(b.arena), enc: c.Encoding})
	}
	return b.addMerged(loose, looseH, false)
}

// addMerged adds floats and histograms, disjoint in time and each sorted,
// in time order, run by run; flush cuts what remains pending.
func (b *chunkBuilder) addMerged(fs []Sample, hs []HistogramSample, flush bool) error {
	for len(fs) > 0 || len(hs) > 0 {
		var err error
		if len(hs) == 0 || (len(fs) > 0 && fs[0].T < hs[0].T) {
			i := 1
			for i < len(fs) && (len(hs) == 0 || fs[i].T < hs[0].T) {
				i++
			}
			err = b.addSamples(fs[:i])
			fs = fs[i:]
		} else {
			j := 1
			for j < len(hs) && (len(fs) == 0 || hs[j].T < fs[0].T) {
				j++
			}
			err = b.addHistograms(hs[:j])
			hs = hs[j:]
		}
		if err != nil {
			return err
		}
	}
	if flush {
		return b.flush()
	}
	return nil
}

func (b *chunkBuilder) flush() error {
	if len(b.pending) > 0 {
		b.cut()
	}
	return b.cutHistograms()
}

// addSamples queues floats and cuts every full chunk.
func (b *chunkBuilder) addSamples(s []Sample) error {
	if err := b.cutHistograms(); err != nil {
		return err
	}
	for len(s) > 0 {
		if len(b.pending) == 0 && len(s) >= samplesPerChunk {
			// A whole chunk's worth is cut where it lies (a dense cell's
			// samples, mostly), without the copy into pending.
			b.cutFrom(s[:samplesPerChunk])
			s = s[samplesPerChunk:]
			continue
		}
		n := min(samplesPerChunk-len(b.pending), len(s))
		b.pending = append(b.pending, s[:n]...)
		s = s[n:]
		if len(b.pending) == samplesPerChunk {
			b.cut()
		}
	}
	return nil
}

// addHistograms queues histograms, cutting them once a chunk's worth waits.
func (b *chunkBuilder) addHistograms(hs []HistogramSample) error {
	if len(b.pending) > 0 {
		b.cut()
	}
	for len(hs) > 0 {
		n := min(samplesPerChunk-len(b.pendingH), len(hs))
		b.pendingH = append(b.pendingH, hs[:n]...)
		hs = hs[n:]
		if len(b.pendingH) == samplesPerChunk {
			if err := b.cutHistograms(); err != nil {
				return err
			}
		}
	}
	return nil
}

// cutHistograms cuts every pending histogram into chunks that give each
// back exactly but for the hints the chunk format cannot say (see
// cellcodec.NextHistogramChunk; a streamed read sends the chunk alone, as
// Prometheus's TSDB would hold it); one that fits in no such chunk (a
// staleness marker with more than its Sum) goes out alone in a chunk, as
// close as the format allows.
func (b *chunkBuilder) cutHistograms() error {
	p := b.pendingH
	for len(p) > 0 {
		enc, data, _, n := cellcodec.NextHistogramChunk(p)
		if n == 0 {
			var err error
			if enc, data, err = cellcodec.OneHistogramChunk(p[0]); err != nil {
				return err
			}
			n = 1
		}
		off := len(b.arena)
		b.arena = append(b.arena, data...)
		b.refs = append(b.refs, chunkRef{mint: p[0].T, maxt: p[n-1].T, n: n, off: off, end: len(b.arena), enc: enc})
		p = p[n:]
	}
	clear(b.pendingH)
	b.pendingH = b.pendingH[:0]
	return nil
}

// cut encodes pending into a new XOR chunk, straight into the arena
// (cellcodec.AppendXORChunk writes what chunkenc's appender would, several
// times faster and without allocating: every loose sample of a streamed read
// goes through here).
func (b *chunkBuilder) cut() {
	b.cutFrom(b.pending)
	b.pending = b.pending[:0]
}

// cutFrom encodes p (1 to samplesPerChunk samples, ascending) into a new
// XOR chunk.
func (b *chunkBuilder) cutFrom(p []Sample) {
	off := len(b.arena)
	b.arena = cellcodec.AppendXORChunk(b.arena, p)
	b.refs = append(b.refs, chunkRef{mint: p[0].T, maxt: p[len(p)-1].T, n: len(p), off: off, end: len(b.arena), enc: chunkenc.EncXOR})
}

// finish cuts what is pending and returns the series' chunks, valid until
// the next reset.
func (b *chunkBuilder) finish() ([]Chunk, error) {
	if err := b.flush(); err != nil {
		return nil, err
	}
	for _, r := range b.refs {
		b.chunks = append(b.chunks, Chunk{
			MinTime: r.mint, MaxTime: r.maxt, Encoding: r.enc, Samples: r.n,
			Data: b.arena[r.off:r.end:r.end],
		})
	}
	return b.chunks, nil
}
