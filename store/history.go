package store

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// historyGroupRows bounds the hour rows of one read-then-write step of
// WriteHistory: one multi-get, one put of marks, one put of cells. It keeps
// each step short (it must land within Config.WriteTimeout) and its memory
// bounded (about 2 MB of chunk cells at 15 s scrapes). A var for tests.
var historyGroupRows = 4096

// WriteHistory stores batch like Write, for history that predates remote
// write (an importer's Prometheus blocks or OpenTSDB tables): closed hours
// go into the data table directly as the chunk cells the compactor would
// have made of them, so that the compactor never rewrites them.
//
// Validation and UIDs are Write's: an invalid series fails the call with an
// error wrapping ErrInvalidInput and nothing of the call is written; a
// series that needs a UID of an exhausted kind is refused with a
// *RefusedError (it wraps ErrInvalidInput) while the rest is written. Each
// series' Samples and Histograms must each be sorted by time (an unsorted
// slice is invalid input) and may span any number of hours; a series may
// come more than once in a call. At one timestamp the later sample wins
// (later in its slice, or in a later entry of the series), and a histogram
// wins over a float of the same entry. Samples older than the retention
// (Config.Retention, counted from now) are dropped, as the table's TTL
// would hide them at once; HistoryStats counts them.
//
// An hour is closed, as the compactor has it, once its end plus
// Config.CompactGrace has passed; later hours go as raw cells with their
// compaction marks, as Write writes them. Each closed series-hour's row is
// read first. Into an empty row the hour's samples go as chunk cells cut as
// the compactor cuts them (XOR for floats, histogram and float-histogram
// chunks with their hints; a histogram no chunk gives back exactly stays a
// raw cell, as the compactor leaves it), with no mark: there is nothing to
// compact. In a row that holds cells (remote write got there first, or an
// earlier call), a sample stored with the same value, bit for bit, is not
// written again; one at a new timestamp goes in chunk cells when the row
// holds only chunks and the new ones overlap none of them (an hour split
// across calls), else as a raw cell; one whose stored value differs goes
// as a raw cell, which every read prefers to chunk cells. Raw cells get
// marks, so the next compactor pass folds the row into one set of chunks.
// So the last write of a timestamp wins, as everywhere in the store, and
// no sample is doubled or lost. As with Write, a value changed while a
// compactor is between reading that sample's raw cell and deleting it may
// resolve to the earlier value (DESIGN.md section 5, "Known limit").
//
// It returns nil only when every cell is durable. A failed or killed call
// leaves some rows written and others not; calling it again with the same
// batch completes it, and a call repeated after success writes nothing in
// closed hours. Rows are read and written back in steps of at most 4,096
// rows, each within Config.WriteTimeout: an empty row found by the read may
// meanwhile receive remote-write samples, which the compactor folds only
// after its quiet period, so after the step's chunks have landed. Calls for
// different series may run at once, but two calls must not write the same
// series-hour at the same time: both could find the row empty, and a chunk
// cell of one could replace the other's. Memory is bounded by the batch.
func (s *Store) WriteHistory(ctx context.Context, batch []SeriesIn) error {
	w, refusedErr, err := s.beginWrite(ctx, batch, s.validateHistory)
	if err != nil {
		return err
	}
	defer s.putWriter(w)
	h := s.histories.Get().(*historyWriter)
	defer s.putHistoryWriter(h)
	h.reset()
	now := s.now()
	horizon := int64(math.MinInt64)
	if s.cfg.Retention > 0 {
		horizon = now.Add(-s.cfg.Retention).UnixMilli()
	}
	openFrom := rowkey.HourMillis(openHourFrom(now, s.cfg.CompactGrace))
	pos := 0
	for i := range batch {
		if w.refused != nil && w.refused[i] {
			pos = skipUIDs(&batch[i], pos)
			continue
		}
		pos = h.addSeries(s, w, batch, i, pos, horizon, openFrom)
	}
	// In key order, a series given more than once has its entries for an
	// hour side by side, in batch order; and reads go region by region.
	slices.SortStableFunc(h.rows, func(a, b historyRow) int { return bytes.Compare(h.key(a), h.key(b)) })
	for start := 0; start < len(h.rows); {
		end := min(start+historyGroupRows, len(h.rows))
		for end < len(h.rows) && bytes.Equal(h.key(h.rows[end]), h.key(h.rows[end-1])) {
			end++
		}
		if err := s.writeHistoryRows(ctx, w, h, batch, h.rows[start:end]); err != nil {
			return err
		}
		start = end
	}
	s.history.add(&h.stats)
	return refusedErr
}

// HistoryStats counts what WriteHistory did with the samples of the calls
// that succeeded since the store was opened.
type HistoryStats struct {
	// Chunked samples were written in chunk cells.
	Chunked int64
	// Raw samples were written as raw cells: open hours, rows that held
	// cells already, and histograms that no chunk gives back exactly.
	Raw int64
	// Unchanged samples were stored already with the same value.
	Unchanged int64
	// Expired samples were older than the retention and dropped.
	Expired int64
}

// HistoryStats returns the counts of WriteHistory so far.
func (s *Store) HistoryStats() HistoryStats { return s.history.load() }

type historyCounters struct{ chunked, raw, unchanged, expired atomic.Int64 }

func (c *historyCounters) add(st *HistoryStats) {
	c.chunked.Add(st.Chunked)
	c.raw.Add(st.Raw)
	c.unchanged.Add(st.Unchanged)
	c.expired.Add(st.Expired)
}

func (c *historyCounters) load() HistoryStats {
	return HistoryStats{Chunked: c.chunked.Load(), Raw: c.raw.Load(), Unchanged: c.unchanged.Load(), Expired: c.expired.Load()}
}

// validateHistory is validate plus the order WriteHistory needs.
func (s *Store) validateHistory(in *SeriesIn) error {
	if err := s.validate(in); err != nil {
		return err
	}
	for i := 1; i < len(in.Samples); i++ {
		if in.Samples[i].T < in.Samples[i-1].T {
			return invalid(in.Labels, fmt.Sprintf("samples not sorted by time: sample %d at %d after %d", i, in.Samples[i].T, in.Samples[i-1].T))
		}
	}
	for i := 1; i < len(in.Histograms); i++ {
		if in.Histograms[i].T < in.Histograms[i-1].T {
			return invalid(in.Labels, fmt.Sprintf("histograms not sorted by time: histogram %d at %d after %d", i, in.Histograms[i].T, in.Histograms[i-1].T))
		}
	}
	return nil
}

// historyWriter holds the buffers of one WriteHistory call beyond those of
// its writer (UIDs, raw cells), reused through Store.histories.
type historyWriter struct {
	rows    []historyRow
	keyBuf  []byte   // the rows' keys
	keys    [][]byte // one step's keys of closed rows
	points  []cellcodec.Point
	stored  []cellcodec.Point
	fresh   []cellcodec.Point
	changed []cellcodec.Point
	spans   [][2]int64 // a row's chunk cells' [MinT, MaxT]
	plan    compactPlan
	cells   []table.Cell
	stats   HistoryStats
}

// historyRow is one series-hour of one entry of the batch: the hour's
// samples are batch[series].Samples[f0:f1] and .Histograms[h0:h1].
type historyRow struct {
	series         int
	hourMillis     int64
	f0, f1, h0, h1 int
	key0, key1     int // the row key in keyBuf
	open           bool
}

func (h *historyWriter) key(r historyRow) []byte { return h.keyBuf[r.key0:r.key1:r.key1] }

func (h *historyWriter) reset() {
	h.rows, h.keyBuf, h.stats = h.rows[:0], h.keyBuf[:0], HistoryStats{}
}

// maxPooledHistoryRows bounds the history writers kept for reuse, as
// maxPooledCells does the writers.
const maxPooledHistoryRows = 1 << 16

func (s *Store) putHistoryWriter(h *historyWriter) {
	if cap(h.rows) > maxPooledHistoryRows {
		return
	}
	clear(h.keys)
	clear(h.points)
	clear(h.stored)
	clear(h.fresh)
	clear(h.changed)
	h.plan.reset()
	clear(h.plan.keep)
	clear(h.plan.hists)
	clear(h.cells)
	s.histories.Put(h)
}

// addSeries lists the hour rows of batch[i], whose UIDs start at
// w.uids[pos], leaving out samples before horizon; it returns the position
// of the next series' UIDs.
func (h *historyWriter) addSeries(s *Store, w *writer, batch []SeriesIn, i, pos int, horizon, openFrom int64) int {
	in := &batch[i]
	if len(in.Samples) == 0 && len(in.Histograms) == 0 {
		return skipUIDs(in, pos)
	}
	pos = s.seriesID(w, in, pos)
	f0, _ := slices.BinarySearchFunc(in.Samples, horizon, func(s Sample, t int64) int { return compareInt64(s.T, t) })
	h0, _ := slices.BinarySearchFunc(in.Histograms, horizon, func(s HistogramSample, t int64) int { return compareInt64(s.T, t) })
	h.stats.Expired += int64(f0 + h0)
	for f0 < len(in.Samples) || h0 < len(in.Histograms) {
		t := int64(math.MaxInt64)
		if f0 < len(in.Samples) {
			t = in.Samples[f0].T
		}
		if h0 < len(in.Histograms) {
			t = min(t, in.Histograms[h0].T)
		}
		hour, _, _ := rowkey.BaseHour(t) // validated
		r := historyRow{series: i, hourMillis: rowkey.HourMillis(hour), f0: f0, f1: f0, h0: h0, h1: h0, key0: len(h.keyBuf)}
		end := r.hourMillis + cellcodec.HourMillis
		for r.f1 < len(in.Samples) && in.Samples[r.f1].T < end {
			r.f1++
		}
		for r.h1 < len(in.Histograms) && in.Histograms[r.h1].T < end {
			r.h1++
		}
		h.keyBuf = s.layout.AppendRowKey(h.keyBuf, w.sid, hour)
		r.key1, r.open = len(h.keyBuf), r.hourMillis >= openFrom
		h.rows = append(h.rows, r)
		f0, h0 = r.f1, r.h1
	}
	return pos
}

// writeHistoryRows is one step: it reads the closed rows, plans their cells
// and writes them with the open rows' raw cells, marks first.
func (s *Store) writeHistoryRows(ctx context.Context, w *writer, h *historyWriter, batch []SeriesIn, rows []historyRow) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
	defer cancel()
	entries := len(rows)
	clear(h.keys)
	h.keys = h.keys[:0]
	for i, r := range rows {
		if !r.open && (i == 0 || !bytes.Equal(h.key(r), h.key(rows[i-1]))) {
			h.keys = append(h.keys, h.key(r))
		}
	}
	var stored []table.Row
	if len(h.keys) > 0 {
		var err error
		// Every family: raw cells may wait in FamilyRaw.
		if stored, err = s.data.Get(ctx, "", h.keys); err != nil {
			return fmt.Errorf("read %d hour rows before writing history: %w", len(h.keys), err)
		}
	}
	w.buf, w.refs = w.buf[:0], w.refs[:0]
	h.plan.reset()
	st := h.stats
	for len(rows) > 0 {
		r := rows[0]
		key := h.key(r)
		rows = h.rowPoints(batch, rows)
		if r.open {
			appendRawPoints(w, key, r.hourMillis, h.points)
			st.Raw += int64(len(h.points))
			continue
		}
		row := stored[0]
		stored = stored[1:]
		s.planHistoryRow(w, h, &st, key, r.hourMillis, row.Cells)
	}
	w.cellsFromRefs()
	if err := s.noteDirty(ctx, w.cells); err != nil {
		return err
	}
	h.cells = append(append(h.cells[:0], w.cells...), h.plan.puts...)
	if len(h.cells) > 0 {
		if err := s.data.Put(ctx, h.cells); err != nil {
			return fmt.Errorf("write history: %d cells of %d entries' hour rows: %w", len(h.cells), entries, err)
		}
	}
	h.stats = st
	return nil
}

// rowPoints sets h.points to the samples of the first row of rows and of
// the rows after it with the same key (a series given more than once; the
// later entry wins at equal timestamps), and returns the rows after those.
func (h *historyWriter) rowPoints(batch []SeriesIn, rows []historyRow) []historyRow {
	points := func(dst []cellcodec.Point, r historyRow) []cellcodec.Point {
		in := &batch[r.series]
		return appendHistoryPoints(dst, in.Samples[r.f0:r.f1], in.Histograms[r.h0:r.h1])
	}
	h.points = points(h.points[:0], rows[0])
	n := 1
	for ; n < len(rows) && bytes.Equal(h.key(rows[n]), h.key(rows[0])); n++ {
		h.fresh = points(h.fresh[:0], rows[n])
		h.changed = mergePoints(h.changed[:0], h.points, h.fresh)
		h.points, h.changed = h.changed, h.points
	}
	return rows[n:]
}

// mergePoints appends the points of a and b, each sorted by time without
// duplicates, in time order; b's wins at equal times.
func mergePoints(dst, a, b []cellcodec.Point) []cellcodec.Point {
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || (len(a) > 0 && a[0].T < b[0].T):
			dst, a = append(dst, a[0]), a[1:]
		default:
			if len(a) > 0 && a[0].T == b[0].T {
				a = a[1:]
			}
			dst, b = append(dst, b[0]), b[1:]
		}
	}
	return dst
}

// planHistoryRow plans the cells of h.points, the history samples of one
// closed row whose stored cells are cells: chunk cells into h.plan, raw
// cells into w (see WriteHistory).
func (s *Store) planHistoryRow(w *writer, h *historyWriter, st *HistoryStats, key []byte, hourMillis int64, cells []table.Cell) {
	if len(cells) == 0 {
		h.spans = h.spans[:0]
		h.chunk(w, st, key, hourMillis, h.points)
		return
	}
	var err error
	h.stored, err = cellcodec.AppendRowPoints(h.stored[:0], hourMillis, tableCells(cells), math.MinInt64, math.MaxInt64)
	if err != nil {
		// Reads fail on this row too; raw cells at least keep the history.
		s.cfg.Logger.Warn("history written as raw cells beside a malformed cell", "row", fmt.Sprintf("%x", key), "err", err)
		appendRawPoints(w, key, hourMillis, h.points)
		st.Raw += int64(len(h.points))
		return
	}
	h.fresh, h.changed = h.fresh[:0], h.changed[:0]
	j := 0
	for _, p := range h.points {
		for j < len(h.stored) && h.stored[j].T < p.T {
			j++
		}
		switch {
		case j == len(h.stored) || h.stored[j].T != p.T:
			h.fresh = append(h.fresh, p)
		case samePoint(p, h.stored[j]):
			st.Unchanged++
		default:
			h.changed = append(h.changed, p)
		}
	}
	if len(h.fresh) > 0 && h.onlyChunks(hourMillis, cells) {
		h.chunk(w, st, key, hourMillis, h.fresh)
	} else {
		appendRawPoints(w, key, hourMillis, h.fresh)
		st.Raw += int64(len(h.fresh))
	}
	appendRawPoints(w, key, hourMillis, h.changed)
	st.Raw += int64(len(h.changed))
}

// onlyChunks reports whether a row holds chunk cells only, none
// overlapping another, and keeps their spans in h.spans. Such a row is
// left alone by the compactor, so no compaction of it can be under way.
func (h *historyWriter) onlyChunks(hourMillis int64, cells []table.Cell) bool {
	h.spans = h.spans[:0]
	for i := range cells {
		c := &cells[i]
		if !cellcodec.IsChunkQualifier(c.Qualifier) {
			return false
		}
		var r cellcodec.CellChunks
		for r.Reset(hourMillis, c.Qualifier, c.Value); r.Next(); {
			h.spans = append(h.spans, [2]int64{r.At().MinT, r.At().MaxT})
		}
		if r.Err() != nil {
			return false
		}
	}
	slices.SortFunc(h.spans, func(a, b [2]int64) int { return compareInt64(a[0], b[0]) })
	for i := 1; i < len(h.spans); i++ {
		if h.spans[i][0] <= h.spans[i-1][1] {
			return false
		}
	}
	return true
}

// chunk plans pts (at timestamps the row does not hold) as chunk cells cut
// by the compactor's rules, unless one of them would overlap a stored chunk
// of h.spans: then they all go as raw cells, for the compactor to fold.
func (h *historyWriter) chunk(w *writer, st *HistoryStats, key []byte, hourMillis int64, pts []cellcodec.Point) {
	p := &h.plan
	n := len(p.puts)
	p.keep = p.keep[:0]
	err := p.addRuns(key, hourMillis, pts)
	var r cellcodec.CellChunks
	for _, c := range p.puts[n:] {
		for r.Reset(hourMillis, c.Qualifier, c.Value); err == nil && r.Next(); {
			if ch := r.At(); h.overlaps(ch.MinT, ch.MaxT) {
				err = fmt.Errorf("chunk [%d, %d] overlaps a stored one", ch.MinT, ch.MaxT)
			}
		}
		if err == nil {
			err = r.Err()
		}
	}
	if err != nil {
		clear(p.puts[n:])
		p.puts = p.puts[:n]
		appendRawPoints(w, key, hourMillis, pts)
		st.Raw += int64(len(pts))
		return
	}
	// As the compactor leaves them: raw cells without a mark, since a pass
	// would leave them as they are.
	p.keptRaw = slices.Grow(p.keptRaw[:0], len(p.keep))[:len(p.keep)]
	clear(p.keptRaw)
	p.putKeptFromChunks(key, hourMillis)
	st.Raw += int64(len(p.keep))
	st.Chunked += int64(len(pts) - len(p.keep))
}

// overlaps reports whether [mint, maxt] meets a span of h.spans.
func (h *historyWriter) overlaps(mint, maxt int64) bool {
	for _, sp := range h.spans {
		if sp[0] <= maxt && mint <= sp[1] {
			return true
		}
	}
	return false
}

// appendHistoryPoints merges the floats and histograms of one hour of a
// series, each sorted by time, into points sorted by time without
// duplicates: at one timestamp the later sample of a slice wins, and a
// histogram wins over a float.
func appendHistoryPoints(dst []cellcodec.Point, fs []Sample, hs []HistogramSample) []cellcodec.Point {
	for len(fs) > 0 || len(hs) > 0 {
		var p cellcodec.Point
		if len(hs) == 0 || (len(fs) > 0 && fs[0].T <= hs[0].T) {
			p = cellcodec.Point{T: fs[0].T, V: fs[0].V}
			fs = fs[1:]
		} else {
			p = cellcodec.Point{T: hs[0].T, H: hs[0].H, FH: hs[0].FH}
			hs = hs[1:]
		}
		if n := len(dst); n > 0 && dst[n-1].T == p.T {
			dst[n-1] = p
			continue
		}
		dst = append(dst, p)
	}
	return dst
}

// samePoint reports whether two points are the same sample, bit for bit.
func samePoint(a, b cellcodec.Point) bool {
	switch {
	case a.H != nil:
		return b.H != nil && cellcodec.SameHistogram(a.H, b.H)
	case a.FH != nil:
		return b.FH != nil && cellcodec.SameFloatHistogram(a.FH, b.FH)
	}
	return !b.IsHistogram() && math.Float64bits(a.V) == math.Float64bits(b.V)
}

// appendRawPoints appends to w the raw cells of pts in the row key, as the
// write path writes them.
func appendRawPoints(w *writer, key []byte, hourMillis int64, pts []cellcodec.Point) {
	if len(pts) == 0 {
		return
	}
	row := uint32(len(w.buf))
	w.buf = append(w.buf, key...)
	rowEnd := uint32(len(w.buf))
	for _, p := range pts {
		q := uint32(len(w.buf))
		w.buf = cellcodec.AppendRawQualifier(w.buf, uint32(p.T-hourMillis))
		switch {
		case p.H != nil:
			w.buf = cellcodec.AppendHistogramValue(w.buf, p.H)
		case p.FH != nil:
			w.buf = cellcodec.AppendFloatHistogramValue(w.buf, p.FH)
		default:
			w.buf = cellcodec.AppendRawValue(w.buf, p.V)
		}
		w.refs = append(w.refs, cellRef{row: row, rowEnd: rowEnd, q: q, end: uint32(len(w.buf)), t: p.T})
	}
}
