package remote

import (
	"fmt"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/prom-hbase/prom-hbase/store"
)

// seriesEncoder cuts the samples of a store without chunks into the chunks
// a streamed remote read sends, as Prometheus's own remote read does for a
// querier without chunks: one chunk kind at a time (XOR for floats,
// histogram or float histogram), a new chunk whenever the kind changes, at
// samplesPerChunk samples, and whenever a histogram cannot join the chunk
// (a counter reset or a schema change). Float and histogram samples are
// merged in time order.
//
// Its buffers are reused from series to series: the chunks returned are
// valid until the next call.
type seriesEncoder struct {
	chunks []store.Chunk
	xor    []*chunkenc.XORChunk // reusable XOR chunks, by index in chunks
	// Scratch copies of the histogram being appended: the chunk appender
	// may rewrite a histogram's spans, and the store's must stay as they
	// are.
	h  histogram.Histogram
	fh histogram.FloatHistogram
}

// encode returns the chunks of s.
func (e *seriesEncoder) encode(s store.Series) ([]store.Chunk, error) {
	e.chunks = e.chunks[:0]
	fs, hs := s.Samples, s.Histograms
	for len(fs) > 0 || len(hs) > 0 {
		if len(hs) == 0 || (len(fs) > 0 && fs[0].T < hs[0].T) {
			n := 1
			for n < len(fs) && n < samplesPerChunk && (len(hs) == 0 || fs[n].T < hs[0].T) {
				n++
			}
			if err := e.appendXOR(fs[:n]); err != nil {
				return nil, err
			}
			fs = fs[n:]
			continue
		}
		isFloat := hs[0].FH != nil
		n := 1
		for n < len(hs) && (hs[n].FH != nil) == isFloat && (len(fs) == 0 || hs[n].T < fs[0].T) {
			n++
		}
		if err := e.appendHistograms(hs[:n]); err != nil {
			return nil, err
		}
		hs = hs[n:]
	}
	return e.chunks, nil
}

// appendXOR encodes samples into the next reusable XOR chunk.
func (e *seriesEncoder) appendXOR(samples []store.Sample) error {
	i := len(e.chunks)
	for len(e.xor) <= i {
		e.xor = append(e.xor, chunkenc.NewXORChunk())
	}
	c := e.xor[i]
	c.Reset(append(c.Bytes()[:0], 0, 0)) // an empty chunk is its 2-byte sample count
	app, err := c.Appender()
	if err != nil {
		return fmt.Errorf("XOR chunk appender: %w", err)
	}
	for _, s := range samples {
		app.Append(0, s.T, s.V)
	}
	e.chunks = append(e.chunks, store.Chunk{
		MinTime:  samples[0].T,
		MaxTime:  samples[len(samples)-1].T,
		Encoding: chunkenc.EncXOR,
		Samples:  len(samples),
		Data:     c.Bytes(),
	})
	return nil
}

// appendHistograms encodes a run of histograms of one kind (all integer or
// all float) into as many chunks as they need. (New chunks each time: a
// store without chunks is the test double's case, not the production one.)
func (e *seriesEncoder) appendHistograms(run []store.HistogramSample) error {
	var (
		chk        chunkenc.Chunk
		app        chunkenc.Appender
		mint, maxt int64
		n          int
	)
	for _, hs := range run {
		if chk == nil || n == samplesPerChunk {
			e.appendChunk(chk, mint, maxt, n)
			var err error
			if chk, app, err = newHistogramChunk(hs.FH != nil); err != nil {
				return err
			}
			mint, n = hs.T, 0
		}
		var (
			next    chunkenc.Chunk
			recoded bool
			err     error
		)
		if hs.H != nil {
			hs.H.CopyTo(&e.h)
			next, recoded, app, err = app.AppendHistogram(nil, 0, hs.T, &e.h, false)
		} else {
			hs.FH.CopyTo(&e.fh)
			next, recoded, app, err = app.AppendFloatHistogram(nil, 0, hs.T, &e.fh, false)
		}
		if err != nil {
			return fmt.Errorf("encoding histogram at %d: %w", hs.T, err)
		}
		if next != nil {
			if !recoded { // cut: the histogram begins a chunk of its own
				e.appendChunk(chk, mint, maxt, n)
				mint, n = hs.T, 0
			}
			chk = next
		}
		maxt = hs.T
		n++
	}
	e.appendChunk(chk, mint, maxt, n)
	return nil
}

func newHistogramChunk(float bool) (chunkenc.Chunk, chunkenc.Appender, error) {
	var chk chunkenc.Chunk = chunkenc.NewHistogramChunk()
	if float {
		chk = chunkenc.NewFloatHistogramChunk()
	}
	app, err := chk.Appender()
	if err != nil {
		return nil, nil, fmt.Errorf("%s chunk appender: %w", chk.Encoding(), err)
	}
	return chk, app, nil
}

func (e *seriesEncoder) appendChunk(chk chunkenc.Chunk, mint, maxt int64, n int) {
	if chk == nil || n == 0 {
		return
	}
	e.chunks = append(e.chunks, store.Chunk{MinTime: mint, MaxTime: maxt, Encoding: chk.Encoding(), Samples: n, Data: chk.Bytes()})
}
