package store

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// TableCheck is what CheckTables found.
type TableCheck struct {
	*labels2uid.CheckReport
	// DataRows is the number of data table rows read (with data), and
	// BadDataKeys the number of them whose key does not parse in the
	// tables' layout.
	DataRows, BadDataKeys int
	// RawRows is the number of data rows with raw cells (with data), and
	// Unmarked the bucket-hours of those that no compaction mark covers;
	// MarksFixed says they have been marked since.
	RawRows    int
	Unmarked   []BucketHour
	MarksFixed bool
}

// Harmful is the number of harmful problems left unrepaired.
func (c *TableCheck) Harmful() int {
	n := c.Unfixed() + c.BadDataKeys
	if !c.MarksFixed {
		n += len(c.Unmarked)
	}
	return n
}

// CheckTables checks the tables named by prefix, in the layout the UID
// table's schema row records: the UID table (labels2uid.Check), and with
// data the data table too: first every row key (keys only), for the UIDs
// the rows use, each of which must be named and below its kind's counter;
// then the rows with raw cells, each of which must be covered by a mark of
// the compaction table (checkMarks). It creates and alters nothing; with
// opts.Fix it writes what Check repairs and the missing marks.
func CheckTables(ctx context.Context, db table.DB, prefix string, data bool, opts labels2uid.CheckOptions) (*TableCheck, error) {
	name := prefix + UIDTableSuffix
	uidTbl, err := db.Table(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("open the UID table %s: %w", name, err)
	}
	l, err := recordedLayout(ctx, uidTbl)
	if err != nil {
		return nil, fmt.Errorf("the UID table %s: %w", name, err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	res := &TableCheck{}
	if data {
		// Before the UID table's scans: a data row is written after its
		// UIDs' mappings, so those scans find every UID gathered here.
		opts.InUse = &labels2uid.InUse{}
		if res.DataRows, res.BadDataKeys, err = gatherUIDs(ctx, db, prefix+DataTableSuffix, l, opts.InUse); err != nil {
			return nil, err
		}
		if res.RawRows, res.Unmarked, err = checkMarks(ctx, db, prefix, l, opts.Fix, opts.Logger); err != nil {
			return nil, err
		}
		res.MarksFixed = opts.Fix
	}
	widths := labels2uid.Widths{l.MetricWidth, l.TagKWidth, l.TagVWidth}
	if res.CheckReport, err = labels2uid.Check(ctx, uidTbl, widths, opts); err != nil {
		return nil, err
	}
	return res, nil
}

// recordedLayout is the row-key layout the schema row records.
func recordedLayout(ctx context.Context, uidTbl table.Table) (rowkey.Layout, error) {
	got, err := readSchema(ctx, uidTbl)
	if err != nil {
		return rowkey.Layout{}, err
	}
	return layoutOfSchema(got)
}

// gatherUIDs reads every row key of the data table and adds the UIDs each
// uses to in.
func gatherUIDs(ctx context.Context, db table.DB, name string, l rowkey.Layout, in *labels2uid.InUse) (rows, bad int, err error) {
	tbl, err := db.Table(ctx, name)
	if err != nil {
		return 0, 0, fmt.Errorf("open the data table %s: %w", name, err)
	}
	sc := tbl.Scan(ctx, table.ScanOptions{KeyOnly: true, FirstCellOnly: true, RowsPerCall: 4096})
	defer sc.Close()
	for sc.Next() {
		rows++
		k, err := l.Parse(sc.At().Key)
		if err != nil {
			bad++
			continue
		}
		in.Add(labels2uid.Metric, k.Metric)
		for i := range l.TagCount(k) {
			p := l.TagAt(k, i)
			in.Add(labels2uid.TagK, p.K)
			in.Add(labels2uid.TagV, p.V)
		}
	}
	if err := sc.Err(); err != nil {
		return rows, bad, fmt.Errorf("scan the row keys of %s: %w", name, err)
	}
	return rows, bad, nil
}
