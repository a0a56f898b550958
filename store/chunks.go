package store

import (
	"fmt"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// samplesPerChunk is where Prometheus's head cuts an XOR chunk; chunks the
// read path cuts itself hold at most that many samples.
const samplesPerChunk = 120

// chunkBuilder assembles the chunks of one series from its rows in time
// order: stored chunks pass through (their bytes copied once, into the
// builder's arena, since rows do not outlive their batch) and loose samples
// wait in pending until a passed chunk or the series' end cuts them into new
// chunks. Full chunks are cut as soon as pending holds enough, so pending
// never exceeds one chunk's worth.
type chunkBuilder struct {
	arena   []byte
	refs    []chunkRef
	chunks  []Chunk
	pending []Sample
	xor     *chunkenc.XORChunk
}

// chunkRef is a chunk whose bytes are arena[off:end]; slices are taken only
// once the arena has stopped growing.
type chunkRef struct {
	mint, maxt int64
	n          int
	off, end   int
}

func (b *chunkBuilder) reset() {
	b.arena, b.refs, b.pending = b.arena[:0], b.refs[:0], b.pending[:0]
	clear(b.chunks)
	b.chunks = b.chunks[:0]
}

// addRow appends what d decoded from one row.
func (b *chunkBuilder) addRow(d *rowDecoder) error {
	loose := d.loose
	for _, c := range d.pass {
		// Loose samples before the passed chunk go out before it; none lies
		// within it (see rowDecoder.passable).
		i := 0
		for i < len(loose) && loose[i].T < c.MinT {
			i++
		}
		if err := b.addSamples(loose[:i], true); err != nil {
			return err
		}
		loose = loose[i:]
		off := len(b.arena)
		b.arena = append(b.arena, c.Data...)
		b.refs = append(b.refs, chunkRef{mint: c.MinT, maxt: c.MaxT, n: c.NumSamples(), off: off, end: len(b.arena)})
	}
	return b.addSamples(loose, false)
}

// addSamples queues samples and cuts every full chunk; flush also cuts the
// remainder.
func (b *chunkBuilder) addSamples(s []Sample, flush bool) error {
	for len(s) > 0 {
		n := min(samplesPerChunk-len(b.pending), len(s))
		b.pending = append(b.pending, s[:n]...)
		s = s[n:]
		if len(b.pending) == samplesPerChunk {
			if err := b.cut(); err != nil {
				return err
			}
		}
	}
	if flush && len(b.pending) > 0 {
		return b.cut()
	}
	return nil
}

// cut encodes pending into a new XOR chunk.
func (b *chunkBuilder) cut() error {
	if b.xor == nil {
		b.xor = chunkenc.NewXORChunk()
	}
	b.xor.Reset(append(b.xor.Bytes()[:0], 0, 0)) // an empty chunk is its 2-byte sample count
	app, err := b.xor.Appender()
	if err != nil {
		return fmt.Errorf("XOR chunk appender: %w", err)
	}
	for _, s := range b.pending {
		app.Append(0, s.T, s.V)
	}
	off := len(b.arena)
	b.arena = append(b.arena, b.xor.Bytes()...)
	p := b.pending
	b.refs = append(b.refs, chunkRef{mint: p[0].T, maxt: p[len(p)-1].T, n: len(p), off: off, end: len(b.arena)})
	b.pending = b.pending[:0]
	return nil
}

// finish cuts what is pending and returns the series' chunks, valid until
// the next reset.
func (b *chunkBuilder) finish() ([]Chunk, error) {
	if err := b.addSamples(nil, true); err != nil {
		return nil, err
	}
	for _, r := range b.refs {
		b.chunks = append(b.chunks, Chunk{
			MinTime: r.mint, MaxTime: r.maxt, Encoding: chunkenc.EncXOR, Samples: r.n,
			Data: b.arena[r.off:r.end:r.end],
		})
	}
	return b.chunks, nil
}
