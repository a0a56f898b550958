package cellcodec

import (
	"encoding/binary"
	"fmt"

	"github.com/prometheus/prometheus/model/histogram"
)

// Counter-reset hints beside a histogram chunk. chunkenc's iterator reports
// the chunk header's hint for a chunk's first sample (UnknownCounterReset
// unless a gauge chunk) and NotCounterReset for the rest, while senders
// write other hints: Prometheus's remote write sends UnknownCounterReset
// for every scraped sample. A chunk that had to give every hint back
// exactly would hold one such sample. So a histogram chunk cell keeps the
// hints its chunk cannot say beside it, and the sample reads (Select,
// compaction) restore them: the store stays bit-exact while a streamed
// read passes the chunk on as Prometheus's own TSDB would hold it.
//
// The value of a histogram chunk cell is uvarint(len(chunk)), the chunk as
// chunkenc writes it, then the hints, a mode byte:
//
//	0  every hint is what the chunk reads
//	1  every sample's hint is UnknownCounterReset
//	2  uvarint k, then k (uvarint sample index, ascending; hint byte)
//
// A hint goes beside a chunk only where it means what the chunk says for
// PromQL: a first sample's hint (the header carries a reset), or
// UnknownCounterReset where the chunk reads NotCounterReset (chunkenc
// appends a sample without a cut only when it finds no reset against the
// previous one). Anywhere else (a CounterReset hint after the first
// sample, gauge against counter) the chunk is cut.

const (
	hintsExact      = 0
	hintsAllUnknown = 1
	hintsList       = 2
)

// hintStorable reports whether a sample written with hint want may sit in
// a chunk that reads it back as got, want kept beside the chunk.
func hintStorable(want, got histogram.CounterResetHint, first bool) bool {
	switch {
	case want == got:
		return true
	case want == histogram.GaugeType || got == histogram.GaugeType:
		return false
	case first:
		return true
	}
	return want == histogram.UnknownCounterReset
}

// appendHints appends the hints trailer for samples whose chunk reads the
// hints got.
func appendHints(dst []byte, want []HistogramSample, got []histogram.CounterResetHint) []byte {
	exact, allUnknown, k := true, true, 0
	for i, s := range want {
		h := s.hint()
		if h != got[i] {
			exact = false
			k++
		}
		if h != histogram.UnknownCounterReset {
			allUnknown = false
		}
	}
	switch {
	case exact:
		return append(dst, hintsExact)
	case allUnknown:
		return append(dst, hintsAllUnknown)
	}
	dst = append(dst, hintsList)
	dst = binary.AppendUvarint(dst, uint64(k))
	for i, s := range want {
		if h := s.hint(); h != got[i] {
			dst = binary.AppendUvarint(dst, uint64(i))
			dst = append(dst, byte(h))
		}
	}
	return dst
}

func (s HistogramSample) hint() histogram.CounterResetHint {
	if s.H != nil {
		return s.H.CounterResetHint
	}
	if s.FH != nil {
		return s.FH.CounterResetHint
	}
	return histogram.UnknownCounterReset
}

func (s HistogramSample) setHint(h histogram.CounterResetHint) {
	if s.H != nil {
		s.H.CounterResetHint = h
	} else if s.FH != nil {
		s.FH.CounterResetHint = h
	}
}

// applyHints sets the hints of samples, the n samples of one chunk decoded
// in order (all of them: indexes count from the chunk's first), from the
// trailer.
func applyHints(samples []HistogramSample, trailer []byte) error {
	if len(trailer) == 0 {
		return fmt.Errorf("%w: histogram chunk without hints", ErrMalformedCell)
	}
	switch trailer[0] {
	case hintsExact:
		if len(trailer) != 1 {
			return fmt.Errorf("%w: %d bytes after the hints", ErrMalformedCell, len(trailer)-1)
		}
	case hintsAllUnknown:
		if len(trailer) != 1 {
			return fmt.Errorf("%w: %d bytes after the hints", ErrMalformedCell, len(trailer)-1)
		}
		for _, s := range samples {
			s.setHint(histogram.UnknownCounterReset)
		}
	case hintsList:
		return applyHintList(samples, trailer[1:])
	default:
		return fmt.Errorf("%w: hints mode %d", ErrMalformedCell, trailer[0])
	}
	return nil
}

func applyHintList(samples []HistogramSample, b []byte) error {
	k, n := binary.Uvarint(b)
	if n <= 0 || k > uint64(len(samples)) {
		return fmt.Errorf("%w: hint list of %d for %d samples", ErrMalformedCell, k, len(samples))
	}
	b = b[n:]
	prev := -1
	for range k {
		i, n := binary.Uvarint(b)
		if n <= 0 || len(b) < n+1 || i >= uint64(len(samples)) || int(i) <= prev {
			return fmt.Errorf("%w: hint list entry out of order or range", ErrMalformedCell)
		}
		h := histogram.CounterResetHint(b[n])
		if h > histogram.GaugeType {
			return fmt.Errorf("%w: unknown hint %d", ErrMalformedCell, h)
		}
		samples[i].setHint(h)
		prev, b = int(i), b[n+1:]
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d bytes after the hints", ErrMalformedCell, len(b))
	}
	return nil
}

// AppendHistogramChunkValue appends the value of a histogram chunk cell:
// the chunk framed by its length, then its hints trailer (as
// NextHistogramChunk returns them).
func AppendHistogramChunkValue(dst, chunk, hints []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(chunk)))
	dst = append(dst, chunk...)
	return append(dst, hints...)
}

// splitHistogramChunkValue splits a histogram chunk cell's value into the
// chunk and its hints trailer.
func splitHistogramChunkValue(v []byte) (chunk, hints []byte, err error) {
	l, n := binary.Uvarint(v)
	if n <= 0 || l > uint64(len(v)-n) {
		return nil, nil, fmt.Errorf("%w: histogram chunk length prefix", ErrMalformedCell)
	}
	return v[n : n+int(l)], v[n+int(l):], nil
}
