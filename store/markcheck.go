package store

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// BucketHour names the data rows of one metric in one salt bucket and hour:
// what a compaction mark covers.
type BucketHour struct {
	Salt   byte
	Metric uint64
	Hour   uint32
}

func (b BucketHour) String() string {
	return fmt.Sprintf("metric UID %d, bucket %d, hour %s", b.Metric, b.Salt, time.Unix(int64(b.Hour), 0).UTC().Format(time.RFC3339))
}

// checkMarks finds the bucket-hours whose rows hold raw cells (FamilyRaw)
// that no compaction mark covers: reads take FamilyRaw only where a mark
// says so, and the compactor folds only marked hours, so such samples stay
// unread for good. Tables restored from snapshots leave them: no order of
// per-table snapshots keeps the data table's raw cells and the compaction
// table's marks in step. With fix it writes the missing marks; the
// compactors fold those hours after their quiet period.
//
// It reads the raw family's row keys first, then the marks; a bucket-hour
// found unmarked is read again, marks first, then rows, and reported only
// if it still holds raw cells: the compactor deletes a mark only after the
// raw cells it covered, so a fold between the two scans is not reported.
func checkMarks(ctx context.Context, db table.DB, prefix string, l rowkey.Layout, fix bool, logger *slog.Logger) (rawRows int, unmarked []BucketHour, err error) {
	data, err := db.Table(ctx, prefix+DataTableSuffix)
	if err != nil {
		return 0, nil, fmt.Errorf("open the data table: %w", err)
	}
	raw := map[BucketHour]struct{}{}
	sc := data.Scan(ctx, table.ScanOptions{Family: FamilyRaw, KeyOnly: true, FirstCellOnly: true, RowsPerCall: 4096})
	for sc.Next() {
		rawRows++
		key := sc.At().Key
		k, err := l.Parse(key)
		if err != nil {
			continue // counted by the UID check's scan of every key
		}
		raw[BucketHour{Salt: k.Salt, Metric: k.Metric, Hour: k.BaseHour}] = struct{}{}
	}
	sc.Close()
	if err := sc.Err(); err != nil {
		return rawRows, nil, fmt.Errorf("scan the raw family's row keys: %w", err)
	}
	if len(raw) == 0 {
		return rawRows, nil, nil
	}
	compact, err := db.Table(ctx, prefix+CompactTableSuffix)
	if err != nil {
		return rawRows, nil, fmt.Errorf("open the compaction table: %w", err)
	}
	marked, err := readMarks(ctx, compact, l, nil)
	if err != nil {
		return rawRows, nil, err
	}
	var suspects []BucketHour
	for bh := range raw {
		if !marked[bh] {
			suspects = append(suspects, bh)
		}
	}
	if len(suspects) == 0 {
		return rawRows, nil, nil
	}
	if marked, err = readMarks(ctx, compact, l, suspects); err != nil {
		return rawRows, nil, err
	}
	for _, bh := range suspects {
		if marked[bh] {
			continue
		}
		still, err := hasRows(ctx, data, l.BucketHourRange(bh.Salt, bh.Metric, bh.Hour))
		if err != nil {
			return rawRows, nil, err
		}
		if still {
			unmarked = append(unmarked, bh)
		}
	}
	slices.SortFunc(unmarked, cmpBucketHour)
	if fix && len(unmarked) > 0 {
		if err := writeMarks(ctx, compact, l, unmarked); err != nil {
			return rawRows, unmarked, err
		}
		logger.Info("marked bucket-hours whose raw cells no mark covered; the compactors fold them after their quiet period", "count", len(unmarked))
	}
	return rawRows, unmarked, nil
}

func cmpBucketHour(a, b BucketHour) int {
	switch {
	case a.Hour != b.Hour:
		return int(int64(a.Hour) - int64(b.Hour))
	case a.Salt != b.Salt:
		return int(a.Salt) - int(b.Salt)
	case a.Metric < b.Metric:
		return -1
	case a.Metric > b.Metric:
		return 1
	}
	return 0
}

// readMarks reads the marks of the compaction table (of the rows of only,
// when given; all of it otherwise) as the bucket-hours they cover. Legacy
// marks, for raw cells in FamilyData, do not cover FamilyRaw.
func readMarks(ctx context.Context, compact table.Table, l rowkey.Layout, only []BucketHour) (map[BucketHour]bool, error) {
	marked := map[BucketHour]bool{}
	add := func(row table.Row) {
		hour, salt, ok := parseTodoKey(row.Key)
		if !ok {
			return
		}
		for _, c := range row.Cells {
			if kind, metric, ok := parseMark(c.Qualifier, l.MetricWidth); ok && kind == markPrefix {
				marked[BucketHour{Salt: salt, Metric: metric, Hour: hour}] = true
			}
		}
	}
	if only != nil {
		keys := make([][]byte, len(only))
		for i, bh := range only {
			keys[i] = todoKey(bh.Hour, bh.Salt)
		}
		rows, err := compact.Get(ctx, familyCompact, keys)
		if err != nil {
			return nil, fmt.Errorf("read %d rows of compaction marks: %w", len(keys), err)
		}
		for _, r := range rows {
			add(r)
		}
		return marked, nil
	}
	sc := compact.Scan(ctx, table.ScanOptions{Family: familyCompact})
	defer sc.Close()
	for sc.Next() {
		add(sc.At())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scan the compaction marks: %w", err)
	}
	return marked, nil
}

// hasRows says whether any row of r holds a raw cell.
func hasRows(ctx context.Context, data table.Table, r rowkey.Range) (bool, error) {
	sc := data.Scan(ctx, table.ScanOptions{Start: r.Start, Stop: r.Stop, Family: FamilyRaw, KeyOnly: true, FirstCellOnly: true, RowsPerCall: 1})
	defer sc.Close()
	found := sc.Next()
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("read raw rows again: %w", err)
	}
	return found, nil
}

// writeMarks marks the bucket-hours as a writer would, under a process ID
// of their own.
func writeMarks(ctx context.Context, compact table.Table, l rowkey.Layout, bhs []BucketHour) error {
	td := &todoList{t: compact, id: newProcessID(), prefix: l.HeaderWidth(), salt: l.SaltWidth(), metric: l.MetricWidth}
	ts := td.clock.next(time.Now().UnixMilli())
	marks := make([]table.Cell, len(bhs))
	buf := make([]byte, 0, len(bhs)*td.markLen())
	for i, bh := range bhs {
		marks[i], buf = td.appendMark(buf, l.BucketHourRange(bh.Salt, bh.Metric, bh.Hour).Start, ts)
	}
	if err := compact.Put(ctx, marks); err != nil {
		return fmt.Errorf("write %d compaction marks: %w", len(marks), err)
	}
	return nil
}
