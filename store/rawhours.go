package store

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/uid"
)

// A read takes FamilyRaw only for the (bucket, metric, hour)s that the
// compaction table marks, and FamilyData alone elsewhere: a scan or get that
// names one family never opens the other's files, so once an hour is folded
// the delete markers its raw cells left (until HBase's major compaction)
// cost reads nothing.
//
// It misses no sample acknowledged before the query began: the write path
// puts the mark before the samples, and the compactor deletes a mark only
// after it folded into FamilyData every raw cell written under it (its
// quiet period outlasts every write a process makes under a mark it
// trusts). A mark read by the query either still stands, and the query
// reads both families, or is gone, and its samples are in FamilyData. A
// compaction under way between the two reads changes nothing: raw cells
// and the chunks holding them read the same (compact_row.go).

// rawHour is a (salt bucket, metric, base hour) whose rows may hold raw
// cells in FamilyRaw.
type rawHour struct {
	hour   uint32
	metric uint64
	salt   byte
}

// rawHours are the marked (bucket, metric, hour)s of a query; nil when none.
type rawHours map[rawHour]struct{}

func (r rawHours) has(salt byte, metric uint64, hour uint32) bool {
	_, ok := r[rawHour{hour, metric, salt}]
	return ok
}

// anyBefore reports whether r marks an hour of metric before hour.
func (r rawHours) anyBefore(metric uint64, hour uint32) bool {
	for rh := range r {
		if rh.metric == metric && rh.hour < hour {
			return true
		}
	}
	return false
}

// findRawHours reads the marks of the compaction table rows of hours
// startHour to endHour, keeping those of metrics. The table holds rows only
// for hours not compacted yet, and, per row, a cell per marked metric and
// writing process.
func (s *Store) findRawHours(ctx context.Context, metrics map[uint64]bool, startHour, endHour uint32) (rawHours, error) {
	if s.todo == nil || len(metrics) == 0 {
		return nil, nil
	}
	// The rows of endHour are its key followed by a bucket byte: the first
	// key past them all is the last one's with a byte appended.
	stop := append(todoKey(endHour, 0xff), 0)
	sc := s.todo.t.Scan(ctx, table.ScanOptions{
		Start: todoKey(startHour, 0), Stop: stop, Family: familyCompact,
		// A row holds the marks of every metric written in its hour; only
		// the query's travel.
		QualifierPrefixes: s.markPrefixes(metrics),
	})
	defer sc.Close()
	var out rawHours
	for sc.Next() {
		row := sc.At()
		hour, salt, ok := parseTodoKey(row.Key)
		if !ok {
			continue
		}
		for _, c := range row.Cells {
			kind, m, ok := parseMark(c.Qualifier, s.layout.MetricWidth)
			if !ok || kind != markPrefix || !metrics[m] {
				// The lease, a mark of raw cells in FamilyData, another metric.
				continue
			}
			if out == nil {
				out = rawHours{}
			}
			out[rawHour{hour, m, salt}] = struct{}{}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the compaction table's marks: %w", err)
	}
	return out, nil
}

// maxMarkPrefixes bounds the metrics whose marks a query's scan names: a
// query of more metrics (one without a metric name matcher) wants most of
// every row anyway, and takes them all rather than send thousands of
// prefixes.
const maxMarkPrefixes = 256

// markPrefixes are the qualifier prefixes of the marks of metrics, sorted;
// nil (every mark) for more than maxMarkPrefixes metrics.
func (s *Store) markPrefixes(metrics map[uint64]bool) [][]byte {
	if len(metrics) > maxMarkPrefixes {
		return nil
	}
	out := make([][]byte, 0, len(metrics))
	for m := range metrics {
		q := append(make([]byte, 0, 1+s.layout.MetricWidth), markPrefix)
		out = append(out, uid.Append(q, m, s.layout.MetricWidth))
	}
	slices.SortFunc(out, bytes.Compare)
	return out
}

// metricSet is the set of the plan's metric UIDs.
func (p *queryPlan) metricSet() map[uint64]bool {
	out := map[uint64]bool{}
	for _, g := range p.groups {
		for _, m := range g {
			out[m.uid] = true
		}
	}
	return out
}

// splitRaw cuts ranges (sorted, disjoint, each the key range of metric's
// rows of hours startHour..endHour in one bucket) into the parts to read of
// FamilyData alone and the parts, one per marked hour, to read of every
// family. Both come out sorted and disjoint.
func (s *Store) splitRaw(ranges []table.RowRange, metric uint64, startHour, endHour uint32, raw rawHours) (data, all []table.RowRange) {
	if len(raw) == 0 {
		return ranges, nil
	}
	var hours []uint32
	for _, r := range ranges {
		salt := s.rangeSalt(r.Start)
		hours = hours[:0]
		for rh := range raw {
			if rh.metric == metric && rh.salt == salt && rh.hour >= startHour && rh.hour <= endHour {
				hours = append(hours, rh.hour)
			}
		}
		if len(hours) == 0 {
			data = append(data, r)
			continue
		}
		slices.Sort(hours)
		cur := r.Start
		for _, h := range hours {
			hr := s.layout.AppendScanRanges(nil, metric, h, h)[salt]
			if bytes.Compare(cur, hr.Start) < 0 {
				data = append(data, table.RowRange{Start: cur, Stop: hr.Start})
			}
			all = append(all, table.RowRange(hr))
			cur = hr.Stop
		}
		if bytes.Compare(cur, r.Stop) < 0 {
			data = append(data, table.RowRange{Start: cur, Stop: r.Stop})
		}
	}
	return data, all
}

// rangeSalt is the salt bucket of a data table key (0 unsalted).
func (s *Store) rangeSalt(key []byte) byte {
	if s.layout.SaltWidth() == 1 && len(key) > 0 {
		return key[0]
	}
	return 0
}
