package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/prom-hbase/prom-hbase/cellcodec"
	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// schemaRow is the UID table's row (family id, one cell per setting, decimal
// text so that the HBase shell shows it) recording the settings the tables
// were created with. Its NUL prefix keeps it apart from the label strings.
var schemaRow = []byte("\x00schema")

// setting is one pinned setting; its name is the command-line flag that sets
// it, so that a refusal tells the operator what to change.
type setting struct {
	name  string
	value int
}

func schemaOf(l rowkey.Layout) []setting {
	buckets := l.SaltBuckets
	if buckets == 0 {
		buckets = 1 // 0 and 1 both mean no salt byte
	}
	return []setting{
		{"uid.width.metric", l.MetricWidth},
		{"uid.width.tagk", l.TagKWidth},
		{"uid.width.tagv", l.TagVWidth},
		{"salt.buckets", buckets},
		{"layout.version", cellcodec.LayoutVersion},
	}
}

// SchemaError is a setting that differs from what the tables were created
// with.
type SchemaError struct {
	Setting     string
	Have, Table int
}

func (e *SchemaError) Error() string {
	if e.Setting == "layout.version" {
		return fmt.Sprintf("this adapter writes cell layout version %d but the tables were created with version %d", e.Have, e.Table)
	}
	return fmt.Sprintf("--%s is %d but the tables were created with %d; these settings can never change once data exists", e.Setting, e.Have, e.Table)
}

// checkSchema records want in the schema row if it is absent (all settings
// at once: the row is written by one check-and-put) and compares the
// recorded settings with want otherwise.
func checkSchema(ctx context.Context, uid table.Table, want []setting) error {
	cells := make([]table.Cell, len(want))
	for i, s := range want {
		cells[i] = table.Cell{
			Row: schemaRow, Family: labels2uid.FamilyID, Qualifier: []byte(s.name),
			Timestamp: table.LatestTimestamp, Value: strconv.AppendInt(nil, int64(s.value), 10),
		}
	}
	// The last setting is the check cell: present in every schema row.
	check := cells[len(cells)-1].Qualifier
	if _, err := uid.CheckAndPut(ctx, schemaRow, labels2uid.FamilyID, check, nil, cells); err != nil {
		return fmt.Errorf("write schema row: %w", err)
	}
	rows, err := uid.Get(ctx, labels2uid.FamilyID, [][]byte{schemaRow})
	if err != nil {
		return fmt.Errorf("read schema row: %w", err)
	}
	got := map[string][]byte{}
	for _, c := range rows[0].Cells {
		got[string(c.Qualifier)] = c.Value
	}
	for _, s := range want {
		v, ok := got[s.name]
		if !ok {
			return fmt.Errorf("schema row lacks setting %s: the UID table was not created by this adapter", s.name)
		}
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return fmt.Errorf("schema row: setting %s is %q: %w", s.name, v, err)
		}
		if n != s.value {
			return &SchemaError{Setting: s.name, Have: s.value, Table: n}
		}
	}
	return nil
}
