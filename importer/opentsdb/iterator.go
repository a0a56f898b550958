package opentsdb

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/importer"
	"github.com/prom-hbase/prom-hbase/store"
)

// seriesIter reads a unit's rows bucket by bucket, a batch of rows at a
// time: it decodes the batch, looks up the batch's tag values not cached
// with one call, then yields the batch's rows as series.
type seriesIter struct {
	ctx        context.Context
	src        *Source
	metric     []byte // UID
	name       string // Prometheus metric name
	mint, maxt int64
	first      int64 // base times of the unit's rows
	last       int64
	bucket     int
	sc         rowScanner
	dec        rowDecoder

	*buffers
	next int

	cur  store.SeriesIn
	lbls []labels.Label
	err  error
	done bool
}

// buffers are an iterator's batch, kept for the next iterator when it
// closes (Source.buffers): a unit's iterator then allocates nothing.
type buffers struct {
	rows    []pendingRow   // the batch
	samples []store.Sample // the batch's samples, rows' slices of it
	keys    []byte         // the batch's row keys, rows' slices of it
	values  map[string]string
	uids    [][]byte
	points  []point // the decoder's
}

type pendingRow struct {
	key             []byte // a copy: the scan's answers are not held
	tags            []byte // tagk, tagv UIDs: the key's end
	samples         []store.Sample
	sampleTo, keyTo int
}

// batchSamples caps the samples decoded at once (with RowsPerBatch): a row
// at millisecond resolution may hold far more than 3600.
const batchSamples = 1 << 18

func newSeriesIter(ctx context.Context, s *Source, u importer.Unit, metric []byte, name string) *seriesIter {
	b, _ := s.buffers.Get().(*buffers)
	if b == nil {
		b = &buffers{values: map[string]string{}}
	}
	it := &seriesIter{ctx: ctx, src: s, metric: metric, name: name, mint: u.MinTime, maxt: u.MaxTime,
		bucket: -1, buffers: b, dec: rowDecoder{skipCorrupt: s.opts.SkipCorrupt, pts: b.points}}
	it.first, it.last = baseRange(u.MinTime, u.MaxTime)
	return it
}

// Next advances to the next row that has samples in the unit's range.
func (it *seriesIter) Next() bool {
	for it.err == nil && it.buffers != nil {
		if it.next < len(it.rows) {
			r := &it.rows[it.next]
			it.next++
			if err := it.setSeries(r); err != nil {
				if !it.src.opts.SkipCorrupt {
					it.err = fmt.Errorf("opentsdb: row %x: %w", r.key, err)
					return false
				}
				it.dec.stats.Corrupt++
				continue
			}
			return true
		}
		if it.done {
			return false
		}
		it.err = it.fill()
	}
	return false
}

func (it *seriesIter) At() store.SeriesIn { return it.cur }
func (it *seriesIter) Err() error         { return it.err }

// Close stops the scan and adds the iterator's counts to the source's;
// the last series' slices are no longer valid: its buffers serve the next
// iterator.
func (it *seriesIter) Close() error {
	if it.sc != nil {
		it.sc.Close()
		it.sc = nil
	}
	it.done = true
	if it.buffers != nil {
		it.points, it.rows = it.dec.pts, it.rows[:0]
		it.src.buffers.Put(it.buffers)
		it.buffers = nil
	}
	it.src.mu.Lock()
	it.src.stats.add(&it.dec.stats)
	it.src.mu.Unlock()
	it.dec.stats = Stats{}
	return nil
}

// fill reads and decodes the next batch of rows, moving on to the next
// salt bucket when one ends, and looks up the batch's tag values.
func (it *seriesIter) fill() error {
	it.rows, it.samples, it.keys, it.next = it.rows[:0], it.samples[:0], it.keys[:0], 0
	clear(it.values)
	for len(it.rows) < it.src.opts.RowsPerBatch && len(it.samples) < batchSamples {
		if it.sc == nil {
			if it.bucket+1 >= it.src.layout.buckets {
				it.done = true
				break
			}
			it.bucket++
			start, stop := it.src.layout.rowRange(it.bucket, it.metric, it.first, it.last)
			it.sc = it.src.tb.scan(it.ctx, it.src.opts.DataTable,
				&hrpc.Scan{Start: start, Stop: stop, Families: [][]byte{familyData}},
				hbase.ScanOptions{BytesPerCall: it.src.opts.scanBytes})
		}
		if !it.sc.Next() {
			err := it.sc.Err()
			it.sc.Close()
			it.sc = nil
			if err != nil {
				return fmt.Errorf("opentsdb: scanning %s: %w", it.src.opts.DataTable, err)
			}
			continue
		}
		if err := it.decodeRow(it.sc.At()); err != nil {
			return err
		}
	}
	// The rows' slices are taken only now: the arenas may have moved.
	s, k := 0, 0
	for i := range it.rows {
		r := &it.rows[i]
		r.samples, r.key = it.samples[s:r.sampleTo:r.sampleTo], it.keys[k:r.keyTo:r.keyTo]
		r.tags = r.key[it.src.layout.tagsAt():]
		s, k = r.sampleTo, r.keyTo
	}
	return it.lookupValues()
}

func (it *seriesIter) decodeRow(row hbase.Row) error {
	l := it.src.layout
	base, _, err := l.parse(row.Key)
	if err != nil {
		if it.src.opts.SkipCorrupt {
			it.dec.stats.Corrupt++
			return nil
		}
		return fmt.Errorf("opentsdb: %w", err)
	}
	if cap(it.samples)-len(it.samples) < hour {
		it.samples = slices.Grow(it.samples, max(hour, len(it.samples))) // doubling
	}
	n := len(it.samples)
	it.samples, err = it.dec.decode(it.samples, base, row.Cells, it.mint, it.maxt)
	if err != nil {
		return fmt.Errorf("opentsdb: row %x: %w", row.Key, err)
	}
	if len(it.samples) == n {
		return nil // annotations only, or nothing in range
	}
	it.keys = append(it.keys, row.Key...)
	it.rows = append(it.rows, pendingRow{sampleTo: len(it.samples), keyTo: len(it.keys)})
	return nil
}

// lookupValues gets the batch's tag values into it.values.
func (it *seriesIter) lookupValues() error {
	l := it.src.layout
	it.uids = it.uids[:0]
	for _, r := range it.rows {
		for i := l.tagk; i < len(r.tags); i += l.tagk + l.tagv {
			it.uids = append(it.uids, r.tags[i:i+l.tagv])
		}
	}
	return it.src.dict.tagValues(it.ctx, it.src.tb, it.src.opts.UIDTable, it.uids, it.values)
}

// setSeries makes the row the current series: its labels sorted by name.
func (it *seriesIter) setSeries(r *pendingRow) error {
	l, d := it.src.layout, it.src.dict
	lbls := append(it.lbls[:0], labels.Label{Name: model.MetricNameLabel, Value: it.name})
	for i := 0; i < len(r.tags); i += l.tagk + l.tagv {
		k, v := r.tags[i:i+l.tagk], r.tags[i+l.tagk:i+l.tagk+l.tagv]
		name, ok := d.tagk[string(k)]
		if !ok {
			return fmt.Errorf("tag key UID %x not in %s", k, it.src.opts.UIDTable)
		}
		value, ok := it.values[string(v)]
		if !ok {
			return fmt.Errorf("tag value UID %x not in %s", v, it.src.opts.UIDTable)
		}
		lbls = append(lbls, labels.Label{Name: name, Value: value})
	}
	slices.SortFunc(lbls, func(a, b labels.Label) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(lbls); i++ {
		if lbls[i].Name == lbls[i-1].Name {
			return fmt.Errorf("two tags map to label %q", lbls[i].Name)
		}
	}
	it.lbls = lbls
	it.cur = store.SeriesIn{Labels: lbls, Samples: r.samples}
	return nil
}

type emptyIter struct{}

func (emptyIter) Next() bool         { return false }
func (emptyIter) At() store.SeriesIn { return store.SeriesIn{} }
func (emptyIter) Err() error         { return nil }
func (emptyIter) Close() error       { return nil }
