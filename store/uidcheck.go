package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/table"
)

// CheckUIDs checks the UID table of the tables named by prefix
// (labels2uid.Check) with the UID widths its schema row records. It creates
// and alters nothing; with opts.Fix it writes what Check repairs.
func CheckUIDs(ctx context.Context, db table.DB, prefix string, opts labels2uid.CheckOptions) (*labels2uid.CheckReport, error) {
	name := prefix + UIDTableSuffix
	tbl, err := db.Table(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("open the UID table %s: %w", name, err)
	}
	got, err := readSchema(ctx, tbl)
	if err != nil {
		return nil, err
	}
	var widths labels2uid.Widths
	for k, s := range uidWidthSettings {
		v, ok := got[s]
		if !ok {
			return nil, fmt.Errorf("the UID table %s has no schema row with %s: not created by this adapter", name, s)
		}
		if widths[k], err = strconv.Atoi(string(v)); err != nil {
			return nil, fmt.Errorf("schema row: setting %s is %q: %w", s, v, err)
		}
	}
	return labels2uid.Check(ctx, tbl, widths, opts)
}
