package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/seriesrules"
	"github.com/prom-hbase/prom-hbase/table"
)

// writer holds the buffers of one Write, reused through Store.writers so
// that a write with warm UID caches allocates nothing per sample.
type writer struct {
	uids  []uint64 // per series: metric UID, then tag key and value UIDs
	fills []fill   // cache misses: where in uids their answers go
	batch labels2uid.Batch
	tags  []rowkey.TagPair
	sid   []byte
	buf   []byte    // row keys, qualifiers and values of every cell
	refs  []cellRef // the cells as offsets into buf, while buf grows
	// runs and sorted are sortByRow's scratch.
	runs   []rowRun
	sorted []cellRef
	cells  []table.Cell
	// refused marks the series left without a UID (the kind's space is used
	// up); nil when none is.
	refused []bool
}

type fill struct {
	pos    int // in writer.uids
	kind   labels2uid.Kind
	i      int // in batch.Names[kind]
	series int // in the batch written
	label  int // in its labels
}

// cellRef is one cell in writer.buf: its row key is buf[row:rowEnd], its
// qualifier the RawQualifierLen bytes at q, its value from there to end.
type cellRef struct {
	row, rowEnd, q, end uint32
	t                   int64
}

func (w *writer) reset() {
	w.uids = w.uids[:0]
	w.fills = w.fills[:0]
	// nil, not emptied: nil is how the write path tells a batch without
	// refused series (an empty slice read as one panicked the next write
	// through a pooled writer after a refusal).
	w.refused = nil
	w.batch.Reset()
	w.buf = w.buf[:0]
	w.refs = w.refs[:0]
	clear(w.cells) // drop references into buf
	w.cells = w.cells[:0]
}

// Write stores every sample of batch in one put. It validates the whole
// batch first: an invalid series fails the batch with an error wrapping
// ErrInvalidInput, and nothing of it is written. Labels with an empty value
// are dropped, as Prometheus treats them as absent.
func (s *Store) Write(ctx context.Context, batch []SeriesIn) error {
	w, refusedErr, err := s.beginWrite(ctx, batch, s.validate)
	if err != nil {
		return err
	}
	defer s.putWriter(w)
	s.appendBatch(w, batch)
	if len(w.refs) == 0 {
		return refusedErr
	}
	w.sortByRow()
	w.cellsFromRefs()
	// The compactor's to-do marks go first (compact_todo.go).
	if err := s.noteDirty(ctx, w.cells); err != nil {
		return err
	}
	if err := s.data.Put(ctx, w.cells); err != nil {
		return fmt.Errorf("write %d samples: %w", len(w.cells), err)
	}
	return refusedErr
}

// appendBatch appends to w the raw cells of the series of batch that have
// their UIDs (w.refused says which do not).
func (s *Store) appendBatch(w *writer, batch []SeriesIn) {
	pos := 0
	for i := range batch {
		if w.refused != nil && w.refused[i] {
			pos = skipUIDs(&batch[i], pos)
			continue
		}
		pos = s.appendCells(w, &batch[i], pos)
	}
}

// beginWrite checks every series of batch with check, then takes a writer
// and resolves the batch's UIDs into it. refused describes the series left
// without a UID (nil when none is); the caller puts w back.
func (s *Store) beginWrite(ctx context.Context, batch []SeriesIn, check func(*SeriesIn) error) (w *writer, refused, err error) {
	for i := range batch {
		if err := check(&batch[i]); err != nil {
			return nil, nil, err
		}
	}
	w = s.writers.Get().(*writer)
	w.reset()
	if err := s.resolve(ctx, w, batch); err != nil {
		s.putWriter(w)
		return nil, nil, err
	}
	return w, s.refusedError(w, batch), nil
}

// sortByRow puts w.refs in row key order, keeping the order of the cells of
// one row (the last of equal cells still wins). HBase inserts a Multi's
// cells into its memstore, a skip list, one after another: in key order each
// insert walks the path the one before it left in the CPU's caches, where a
// request's series, salted into every bucket, would send each insert down
// another. Measured (BENCHMARKS.md, "Ingest at 200 samples per request:
// cells in row order"): HBase 25-28 % less CPU per sample at 200 samples a
// request, for the adapter a sort of about 200 x 8 comparisons.
func (w *writer) sortByRow() {
	buf, refs := w.buf, w.refs
	// The cells of one row come in runs (a series' samples of one hour):
	// sorting the runs costs a comparison per series, not per sample.
	w.runs = w.runs[:0]
	for i := 0; i < len(refs); {
		j := i + 1
		for j < len(refs) && refs[j].row == refs[i].row {
			j++
		}
		r := rowRun{cells: uint64(i)<<32 | uint64(j)}
		r.k0, r.k1, r.k2 = keyPrefix(buf[refs[i].row:refs[i].rowEnd])
		w.runs = append(w.runs, r)
		i = j
	}
	slices.SortFunc(w.runs, func(a, b rowRun) int {
		if a.k0 != b.k0 {
			return cmp.Compare(a.k0, b.k0)
		}
		if a.k1 != b.k1 {
			return cmp.Compare(a.k1, b.k1)
		}
		if a.k2 != b.k2 {
			return cmp.Compare(a.k2, b.k2)
		}
		ra, rb := &refs[a.cells>>32], &refs[b.cells>>32]
		if c := compareRest(buf[ra.row:ra.rowEnd], buf[rb.row:rb.rowEnd]); c != 0 {
			return c
		}
		return cmp.Compare(a.cells, b.cells) // equal rows keep their order
	})
	w.sorted = w.sorted[:0]
	for _, r := range w.runs {
		w.sorted = append(w.sorted, refs[r.cells>>32:uint32(r.cells)]...)
	}
	w.refs, w.sorted = w.sorted, w.refs
}

// rowRun is the cells of one row, w.refs[cells>>32 : cells&(1<<32-1)]. k0,
// k1 and k2 are the row key's first 24 bytes (keyPrefix): salt, metric,
// hour and the first two tag pairs decide most comparisons as integer
// compares, where a byte comparison of the keys in buf was a call and a
// cache miss each; rows of equal prefixes (the same row, when a write
// carries several samples of a series as runs of their own, as Prometheus
// sends them) compare the rest of their keys (compareRest). Four words, so
// that both runs of a comparison travel in registers: with the row's key
// bounds in it too (seven fields), it sorted at half the speed.
type rowRun struct {
	k0, k1, k2 uint64
	cells      uint64
}

// compareRest orders two row keys whose first 24 bytes (zero-padded) are
// equal, as bytes.Compare orders them.
func compareRest(a, b []byte) int {
	if len(a) <= 24 && len(b) <= 24 {
		// The shorter key is the longer one's first bytes (the padding
		// equals its zero bytes).
		return cmp.Compare(len(a), len(b))
	}
	// Past the prefix; a key of 24 bytes or fewer has nothing left and
	// is, again, the other's first bytes.
	return bytes.Compare(a[min(len(a), 24):], b[min(len(b), 24):])
}

// keyPrefix is the first 24 bytes of key as three big-endian integers, zero
// past its end: they order two keys as bytes.Compare does wherever they
// differ, and equal ones leave it to compareRest.
func keyPrefix(key []byte) (k0, k1, k2 uint64) {
	var b [24]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:16]), binary.BigEndian.Uint64(b[16:])
}

// cellsFromRefs sets w.cells to the raw cells of w.refs, aliasing w.buf.
func (w *writer) cellsFromRefs() {
	if cap(w.cells) < len(w.refs) {
		w.cells = make([]table.Cell, len(w.refs))
	}
	w.cells = w.cells[:len(w.refs)]
	buf := w.buf
	for i, r := range w.refs {
		v := r.q + cellcodec.RawQualifierLen
		w.cells[i] = table.Cell{
			Row:       buf[r.row:r.rowEnd:r.rowEnd],
			Family:    FamilyRaw,
			Qualifier: buf[r.q:v:v],
			Timestamp: r.t,
			Value:     buf[v:r.end:r.end],
		}
	}
}

// maxPooledCells bounds the writers kept for reuse: the buffers of one huge
// batch are left to the garbage collector rather than held for ever.
const maxPooledCells = 1 << 16

func (s *Store) putWriter(w *writer) {
	if cap(w.cells) <= maxPooledCells && cap(w.refs) <= maxPooledCells && cap(w.sorted) <= maxPooledCells {
		s.writers.Put(w)
	}
}

// resolve fills w.uids with the UIDs of every label of batch: from the cache
// where it can, then all misses of the batch in one labels2uid round.
func (s *Store) resolve(ctx context.Context, w *writer, batch []SeriesIn) error {
	var series, label int
	miss := func(kind labels2uid.Kind, name string) uint64 {
		if uid, ok := s.uids.Cached(kind, name); ok {
			return uid
		}
		w.fills = append(w.fills, fill{pos: len(w.uids), kind: kind, i: w.batch.Add(kind, name), series: series, label: label})
		return 0
	}
	for i := range batch {
		if batch[i].ID != nil {
			continue // resolved by an earlier write
		}
		series = i
		ls := batch[i].Labels
		metric := ""
		label = -1
		for j, l := range ls {
			if l.Name == model.MetricNameLabel {
				metric, label = l.Value, j
				break
			}
		}
		w.uids = append(w.uids, miss(labels2uid.Metric, metric))
		for j, l := range ls {
			if l.Name == model.MetricNameLabel || l.Value == "" {
				continue
			}
			label = j
			w.uids = append(w.uids, miss(labels2uid.TagK, l.Name))
			w.uids = append(w.uids, miss(labels2uid.TagV, l.Value))
		}
	}
	if len(w.fills) == 0 {
		return nil
	}
	if err := s.uids.GetOrAssign(ctx, &w.batch); err != nil {
		return fmt.Errorf("resolve label UIDs: %w", err)
	}
	for _, f := range w.fills {
		w.uids[f.pos] = w.batch.UIDs[f.kind][f.i]
		if w.batch.Exhausted(f.kind, f.i) {
			if w.refused == nil {
				w.refused = make([]bool, len(batch))
			}
			w.refused[f.series] = true
		}
	}
	return nil
}

// refusedError describes the series of batch that resolve left without a
// UID, or is nil when there are none.
func (s *Store) refusedError(w *writer, batch []SeriesIn) error {
	if w.refused == nil {
		return nil
	}
	e := &RefusedError{}
	for i, r := range w.refused {
		if r {
			e.Series++
			e.Samples += len(batch[i].Samples)
			e.Histograms += len(batch[i].Histograms)
		}
	}
	for _, f := range w.fills {
		if !w.batch.Exhausted(f.kind, f.i) {
			continue
		}
		ls := batch[f.series].Labels
		name := model.MetricNameLabel
		if f.label >= 0 {
			name = ls[f.label].Name
		}
		e.Err = s.uids.ExhaustedError(f.kind)
		e.First = fmt.Sprintf("series %s: label %q needs a new %s UID: %v", seriesString(ls), name, f.kind, e.Err)
		break
	}
	return e
}

// skipUIDs returns the position after the UIDs of a series, as appendCells
// does, without appending its cells.
func skipUIDs(in *SeriesIn, pos int) int {
	if in.ID != nil {
		return pos // resolve took none
	}
	pos++ // metric
	for _, l := range in.Labels {
		if l.Name != model.MetricNameLabel && l.Value != "" {
			pos += 2
		}
	}
	return pos
}

// appendCells appends the cells of one series, whose UIDs start at
// w.uids[pos], and returns the position of the next series' UIDs.
func (s *Store) appendCells(w *writer, in *SeriesIn, pos int) int {
	if len(in.Samples) == 0 && len(in.Histograms) == 0 {
		return skipUIDs(in, pos)
	}
	pos = s.seriesID(w, in, pos)
	var r rowCursor
	for _, smp := range in.Samples {
		off := r.cell(w, s, smp.T)
		w.buf = cellcodec.AppendRawValue(w.buf, smp.V)
		w.refs = append(w.refs, cellRef{row: r.start, rowEnd: r.end, q: off, end: uint32(len(w.buf)), t: smp.T})
	}
	for _, hs := range in.Histograms {
		off := r.cell(w, s, hs.T)
		if hs.H != nil {
			w.buf = cellcodec.AppendHistogramValue(w.buf, hs.H)
		} else {
			w.buf = cellcodec.AppendFloatHistogramValue(w.buf, hs.FH)
		}
		w.refs = append(w.refs, cellRef{row: r.start, rowEnd: r.end, q: off, end: uint32(len(w.buf)), t: hs.T})
	}
	return pos
}

// seriesID sets w.sid to the series ID of a series, its own ID or the one
// its UIDs make (from w.uids[pos]; and sets in.ID to a copy when asked to
// report it), and returns the position of the next series' UIDs.
func (s *Store) seriesID(w *writer, in *SeriesIn, pos int) int {
	if in.ID != nil {
		w.sid = append(w.sid[:0], in.ID...)
		return pos
	}
	pos = s.sidFromUIDs(w, in, pos)
	if in.ReportID {
		in.ID = bytes.Clone(w.sid)
	}
	return pos
}

// sidFromUIDs sets w.sid to the series ID that the UIDs of in, from
// w.uids[pos] on, make, and returns the position of the next series' UIDs.
func (s *Store) sidFromUIDs(w *writer, in *SeriesIn, pos int) int {
	metric := w.uids[pos]
	pos++
	w.tags = w.tags[:0]
	for _, l := range in.Labels {
		if l.Name == model.MetricNameLabel || l.Value == "" {
			continue
		}
		w.tags = append(w.tags, rowkey.TagPair{K: w.uids[pos], V: w.uids[pos+1]})
		pos += 2
	}
	rowkey.SortTags(w.tags)
	w.sid = s.layout.AppendSeriesID(w.sid[:0], metric, w.tags)
	return pos
}

// rowCursor is the row key of the cells being appended for one series.
type rowCursor struct {
	hour       uint32
	start, end uint32
	ok         bool
}

// cell appends, after the row key if the hour changed, the raw qualifier of
// a sample at t, and returns where the qualifier starts.
func (r *rowCursor) cell(w *writer, s *Store, t int64) uint32 {
	hour, off, _ := rowkey.BaseHour(t) // validated
	if !r.ok || hour != r.hour {
		// Samples out of order across an hour boundary repeat the row
		// key; the backend merges them into one row.
		r.start = uint32(len(w.buf))
		w.buf = s.layout.AppendRowKey(w.buf, w.sid, hour)
		r.end = uint32(len(w.buf))
		r.hour, r.ok = hour, true
	}
	q := uint32(len(w.buf))
	w.buf = cellcodec.AppendRawQualifier(w.buf, off)
	return q
}

// validate checks one series against the shared series rules (seriesrules:
// the same the HTTP layer applies, with the store's limits) and that its
// timestamps fit the row key. The error names the series and the rule.
func (s *Store) validate(in *SeriesIn) error {
	if v := CheckRules(in, len(in.Histograms), s.cfg.limits()); v != nil {
		return invalid(in.Labels, v.Rule)
	}
	for _, smp := range in.Samples {
		if _, _, err := rowkey.BaseHour(smp.T); err != nil {
			return invalid(in.Labels, fmt.Sprintf("sample timestamp %d outside what the store can hold (1970 to 2106)", smp.T))
		}
	}
	for i := range in.Histograms {
		if err := validateHistogram(in.Histograms[i]); err != nil {
			return invalid(in.Labels, fmt.Sprintf("histogram sample %d: %v", i, err))
		}
	}
	return nil
}

// CheckRules checks a series of a write against the shared series rules
// under lim, as carrying its samples and histograms (the HTTP layer counts
// one more for a histogram it could not decode): every rule, or, for a
// series with an ID, only those on what it carries, its labels having
// passed them when the ID was reported. The HTTP layer and the store both
// check with it, each under its own limits.
func CheckRules(in *SeriesIn, histograms int, lim seriesrules.Limits) *seriesrules.Violation {
	if in.ID != nil {
		return seriesrules.CheckSamples(len(in.Samples), histograms)
	}
	return seriesrules.CheckSeries(in.Labels, len(in.Samples), histograms, lim)
}

func invalid(ls []labels.Label, rule string) error {
	return fmt.Errorf("%w: series %s: %s", ErrInvalidInput, seriesString(ls), rule)
}

// seriesString formats labels as received, unsorted and invalid ones too.
func seriesString(ls []labels.Label) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q=%q", l.Name, l.Value)
	}
	b.WriteByte('}')
	return b.String()
}

// WriteMetadata stores the metadata of metric families in the UID table's
// meta family, last write wins.
func (s *Store) WriteMetadata(ctx context.Context, md []Metadata) error {
	cells := make([]table.Cell, 0, 3*len(md))
	for _, m := range md {
		if v := seriesrules.CheckMetadata(m.MetricFamilyName, m.Help, m.Unit); v != nil {
			return fmt.Errorf("%w: %s", ErrInvalidInput, v.Rule)
		}
		row := []byte(m.MetricFamilyName)
		for _, f := range [...]struct{ q, v string }{{"type", m.Type}, {"unit", m.Unit}, {"help", m.Help}} {
			cells = append(cells, table.Cell{Row: row, Family: FamilyMeta, Qualifier: []byte(f.q), Timestamp: table.LatestTimestamp, Value: []byte(f.v)})
		}
	}
	if len(cells) == 0 {
		return nil
	}
	if err := s.uid.Put(ctx, cells); err != nil {
		return fmt.Errorf("write metadata of %d metric families: %w", len(md), err)
	}
	return nil
}
