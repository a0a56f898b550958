package store

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
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
	cells []table.Cell
}

type fill struct {
	pos  int
	kind labels2uid.Kind
	i    int
}

type cellRef struct {
	row, rowEnd, q uint32
	t              int64
}

func (w *writer) reset() {
	w.uids = w.uids[:0]
	w.fills = w.fills[:0]
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
	for i := range batch {
		if err := s.validate(&batch[i]); err != nil {
			return err
		}
	}
	w := s.writers.Get().(*writer)
	defer s.putWriter(w)
	w.reset()

	if err := s.resolve(ctx, w, batch); err != nil {
		return err
	}
	pos := 0
	for i := range batch {
		pos = s.appendCells(w, &batch[i], pos)
	}
	if len(w.refs) == 0 {
		return nil
	}
	if cap(w.cells) < len(w.refs) {
		w.cells = make([]table.Cell, len(w.refs))
	}
	w.cells = w.cells[:len(w.refs)]
	buf := w.buf
	for i, r := range w.refs {
		w.cells[i] = table.Cell{
			Row:       buf[r.row:r.rowEnd:r.rowEnd],
			Family:    FamilyData,
			Qualifier: buf[r.q : r.q+cellcodec.RawQualifierLen : r.q+cellcodec.RawQualifierLen],
			Timestamp: r.t,
			Value:     buf[r.q+cellcodec.RawQualifierLen : r.q+cellcodec.RawQualifierLen+cellcodec.RawValueLen : r.q+cellcodec.RawQualifierLen+cellcodec.RawValueLen],
		}
	}
	if err := s.data.Put(ctx, w.cells); err != nil {
		return fmt.Errorf("write %d samples: %w", len(w.cells), err)
	}
	return nil
}

// maxPooledCells bounds the writers kept for reuse: the buffers of one huge
// batch are left to the garbage collector rather than held for ever.
const maxPooledCells = 1 << 16

func (s *Store) putWriter(w *writer) {
	if cap(w.cells) <= maxPooledCells && cap(w.refs) <= maxPooledCells {
		s.writers.Put(w)
	}
}

// resolve fills w.uids with the UIDs of every label of batch: from the cache
// where it can, then all misses of the batch in one labels2uid round.
func (s *Store) resolve(ctx context.Context, w *writer, batch []SeriesIn) error {
	miss := func(kind labels2uid.Kind, name string) uint64 {
		if uid, ok := s.uids.Cached(kind, name); ok {
			return uid
		}
		w.fills = append(w.fills, fill{pos: len(w.uids), kind: kind, i: w.batch.Add(kind, name)})
		return 0
	}
	for i := range batch {
		ls := batch[i].Labels
		metric := ""
		for _, l := range ls {
			if l.Name == model.MetricNameLabel {
				metric = l.Value
				break
			}
		}
		w.uids = append(w.uids, miss(labels2uid.Metric, metric))
		for _, l := range ls {
			if l.Name == model.MetricNameLabel || l.Value == "" {
				continue
			}
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
	}
	return nil
}

// appendCells appends the cells of one series, whose UIDs start at
// w.uids[pos], and returns the position of the next series' UIDs.
func (s *Store) appendCells(w *writer, in *SeriesIn, pos int) int {
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
	if len(in.Samples) == 0 {
		return pos
	}
	rowkey.SortTags(w.tags)
	w.sid = s.layout.AppendSeriesID(w.sid[:0], metric, w.tags)
	var (
		curHour          uint32
		rowStart, rowEnd uint32
		haveRow          bool
	)
	for _, smp := range in.Samples {
		hour, off, _ := rowkey.BaseHour(smp.T) // validated
		if !haveRow || hour != curHour {
			// Samples out of order across an hour boundary repeat the row
			// key; the backend merges them into one row.
			rowStart = uint32(len(w.buf))
			w.buf = s.layout.AppendRowKey(w.buf, w.sid, hour)
			rowEnd = uint32(len(w.buf))
			curHour, haveRow = hour, true
		}
		q := uint32(len(w.buf))
		w.buf = cellcodec.AppendRawQualifier(w.buf, off)
		w.buf = cellcodec.AppendRawValue(w.buf, smp.V)
		w.refs = append(w.refs, cellRef{row: rowStart, rowEnd: rowEnd, q: q, t: smp.T})
	}
	return pos
}

// validate checks one series against the rules of Prometheus 3 (label names
// any non-empty UTF-8, sorted and unique; values UTF-8) and the store's
// limits. The error names the series and the rule.
func (s *Store) validate(in *SeriesIn) error {
	ls := in.Labels
	if len(ls) > s.cfg.MaxLabels {
		return invalid(ls, fmt.Sprintf("%d labels, more than the limit of %d", len(ls), s.cfg.MaxLabels))
	}
	for i, l := range ls {
		switch {
		case l.Name == "":
			return invalid(ls, "empty label name")
		case i > 0 && l.Name <= ls[i-1].Name:
			if l.Name == ls[i-1].Name {
				return invalid(ls, fmt.Sprintf("duplicate label name %q", l.Name))
			}
			return invalid(ls, fmt.Sprintf("label names not sorted: %q after %q", l.Name, ls[i-1].Name))
		case !utf8.ValidString(l.Name):
			return invalid(ls, fmt.Sprintf("label name %q is not valid UTF-8", l.Name))
		case !utf8.ValidString(l.Value):
			return invalid(ls, fmt.Sprintf("value of label %q is not valid UTF-8", l.Name))
		case len(l.Name) > s.cfg.MaxLabelNameLength:
			return invalid(ls, fmt.Sprintf("label name of %d bytes, more than the limit of %d", len(l.Name), s.cfg.MaxLabelNameLength))
		case len(l.Value) > s.cfg.MaxLabelValueLength:
			return invalid(ls, fmt.Sprintf("value of label %q has %d bytes, more than the limit of %d", l.Name, len(l.Value), s.cfg.MaxLabelValueLength))
		case l.Name[0] == 0 || (l.Value != "" && l.Value[0] == 0):
			return invalid(ls, fmt.Sprintf("label %q: names and values beginning with a NUL byte are reserved", l.Name))
		}
	}
	for _, smp := range in.Samples {
		if _, _, err := rowkey.BaseHour(smp.T); err != nil {
			return invalid(ls, fmt.Sprintf("sample timestamp %d outside what the store can hold (1970 to 2106)", smp.T))
		}
	}
	return nil
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
		if m.MetricFamilyName == "" || m.MetricFamilyName[0] == 0 || !utf8.ValidString(m.MetricFamilyName) {
			return fmt.Errorf("%w: metadata of metric family %q: the name must be non-empty valid UTF-8 not beginning with NUL", ErrInvalidInput, m.MetricFamilyName)
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
