package store

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
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
// it, so that a refusal tells the operator what to change. A value of 0 is a
// setting not given: new tables record def, existing ones keep theirs.
type setting struct {
	name       string
	value, def int
}

// uidWidthSettings are the schema row's settings of the UID widths, by kind;
// saltSetting is its setting of the salt buckets.
var uidWidthSettings = [labels2uid.NumKinds]string{"uid.width.metric", "uid.width.tagk", "uid.width.tagv"}

const saltSetting = "salt.buckets"

// schemaOf is the schema of a store given the layout fields of given (0:
// not given) and, for new tables, those of defaults (every field set). The
// cell layout version is always given: it is this adapter's.
func schemaOf(given, defaults rowkey.Layout) []setting {
	return []setting{
		{uidWidthSettings[labels2uid.Metric], given.MetricWidth, defaults.MetricWidth},
		{uidWidthSettings[labels2uid.TagK], given.TagKWidth, defaults.TagKWidth},
		{uidWidthSettings[labels2uid.TagV], given.TagVWidth, defaults.TagVWidth},
		{saltSetting, given.SaltBuckets, defaults.SaltBuckets},
		{layoutSetting, cellcodec.LayoutVersion, cellcodec.LayoutVersion},
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
	return fmt.Sprintf("--%s is %d but the tables were created with %d; these settings can never change once data exists (leave the flag out to take the tables' own)", e.Setting, e.Have, e.Table)
}

// checkSchema records want in the schema row if it is absent (all settings
// at once: the row is written by one check-and-put; a setting not given as
// its def) and compares the recorded settings with the given ones of want
// otherwise. It returns the schema row as recorded, which holds the tables'
// own value of every setting not given: an adapter started without a flag
// takes what the tables were created with, whichever adapter created them.
// A layout version older than this adapter's, which it reads unchanged,
// passes: Open moves it forward (upgradeLayout) once everything else has
// opened, so that an adapter refused for a setting, or failing to start,
// leaves the tables to the adapters that use them.
func checkSchema(ctx context.Context, uid table.Table, want []setting) (map[string][]byte, error) {
	cells := make([]table.Cell, len(want))
	for i, s := range want {
		v := s.value
		if v == 0 {
			v = s.def
		}
		cells[i] = table.Cell{
			Row: schemaRow, Family: labels2uid.FamilyID, Qualifier: []byte(s.name),
			Timestamp: table.LatestTimestamp, Value: strconv.AppendInt(nil, int64(v), 10),
		}
	}
	// The last setting is the check cell: present in every schema row.
	check := cells[len(cells)-1].Qualifier
	if _, err := uid.CheckAndPut(ctx, schemaRow, labels2uid.FamilyID, check, nil, cells); err != nil {
		return nil, fmt.Errorf("write schema row: %w", err)
	}
	got, err := readSchema(ctx, uid)
	if err != nil {
		return nil, err
	}
	for _, s := range want {
		n, err := schemaInt(got, s.name)
		if err != nil {
			return nil, err
		}
		if s.name == layoutSetting && readsLayout(n) {
			continue
		}
		if s.value != 0 && n != s.value {
			return nil, &SchemaError{Setting: s.name, Have: s.value, Table: n}
		}
	}
	return got, nil
}

// layoutOfSchema is the row-key layout a schema row records.
func layoutOfSchema(got map[string][]byte) (rowkey.Layout, error) {
	var v [labels2uid.NumKinds + 1]int
	for i, s := range append(uidWidthSettings[:], saltSetting) {
		var err error
		if v[i], err = schemaInt(got, s); err != nil {
			return rowkey.Layout{}, err
		}
	}
	l := rowkey.Layout{MetricWidth: v[labels2uid.Metric], TagKWidth: v[labels2uid.TagK], TagVWidth: v[labels2uid.TagV], SaltBuckets: v[labels2uid.NumKinds]}
	if err := l.Validate(); err != nil {
		return rowkey.Layout{}, fmt.Errorf("schema row: %w", err)
	}
	return l, nil
}

// schemaInt reads setting name, a decimal, from a schema row readSchema read.
func schemaInt(got map[string][]byte, name string) (int, error) {
	v, ok := got[name]
	if !ok {
		return 0, fmt.Errorf("schema row lacks setting %s: the UID table was not created by this adapter", name)
	}
	n, err := strconv.Atoi(string(v))
	if err != nil {
		return 0, fmt.Errorf("schema row: setting %s is %q: %w", name, v, err)
	}
	return n, nil
}

func readSchema(ctx context.Context, uid table.Table) (map[string][]byte, error) {
	rows, err := uid.Get(ctx, labels2uid.FamilyID, [][]byte{schemaRow})
	if err != nil {
		return nil, fmt.Errorf("read schema row: %w", err)
	}
	got := map[string][]byte{}
	for _, c := range rows[0].Cells {
		got[string(c.Qualifier)] = c.Value
	}
	return got, nil
}

// familiesSetting is the schema row's cell recording the families of a
// table as an adapter brought them to its settings (ensureTable): the
// families of its spec as familiesRecord renders them.
func familiesSetting(tableName string) []byte { return []byte("families." + tableName) }

// familiesRecord renders families with every attribute, in the order of
// the spec: two adapters record the same bytes when, and only when, they
// would bring the families to the same settings.
func familiesRecord(spec table.TableSpec) []byte {
	return fmt.Appendf(nil, "%+v", spec.Families)
}

// familiesRecorded reports whether the schema row of uid records spec's
// families for spec's table.
func familiesRecorded(ctx context.Context, uid table.Table, spec table.TableSpec) (bool, error) {
	got, err := readSchema(ctx, uid)
	if err != nil {
		return false, err
	}
	return bytes.Equal(got[string(familiesSetting(spec.Name))], familiesRecord(spec)), nil
}

// recordFamilies records spec's families for spec's table in the schema
// row of uid. Adapters of other settings overwrite each other's record,
// and a start that finds another's waits for the description. Two such
// starts at once may leave one's record beside the other's families; they
// then differ in retention or codecs only, since every version that
// records keeps the raw family and NEW_VERSION_BEHAVIOR.
func recordFamilies(ctx context.Context, uid table.Table, spec table.TableSpec) error {
	err := uid.Put(ctx, []table.Cell{{
		Row: schemaRow, Family: labels2uid.FamilyID, Qualifier: familiesSetting(spec.Name),
		Timestamp: table.LatestTimestamp, Value: familiesRecord(spec),
	}})
	if err != nil {
		return fmt.Errorf("record the families of table %s: %w", spec.Name, err)
	}
	return nil
}

// layoutSetting is the schema row's cell of the cell layout version.
const layoutSetting = "layout.version"

// readsLayout reports whether tables of layout version v are this
// adapter's to move forward: older than its own, and read unchanged.
func readsLayout(v int) bool {
	return v >= cellcodec.OldestReadableLayoutVersion && v < cellcodec.LayoutVersion
}

// upgradeLayout moves tables recorded with an older cell layout to this
// one: this layout reads the old cells as they are, and once the version
// is moved, an adapter of an old layout refuses the tables instead of
// misreading the new cells. The move is a check-and-put from the old value,
// so that concurrent adapters upgrade once; it reports whether the row
// changed (by this adapter or another).
func upgradeLayout(ctx context.Context, uid table.Table, got map[string][]byte) (bool, error) {
	old := got[layoutSetting] // the check-and-put compares these very bytes
	from, err := strconv.Atoi(string(old))
	if err != nil || !readsLayout(from) {
		return false, nil // absent, garbled, current or newer: checkSchema reports the wrong ones
	}
	put := []table.Cell{{
		Row: schemaRow, Family: labels2uid.FamilyID, Qualifier: []byte(layoutSetting),
		Timestamp: table.LatestTimestamp, Value: []byte(strconv.Itoa(cellcodec.LayoutVersion)),
	}}
	ok, err := uid.CheckAndPut(ctx, schemaRow, labels2uid.FamilyID, []byte(layoutSetting), old, put)
	if err != nil {
		return false, fmt.Errorf("upgrade cell layout version %d to %d: %w", from, cellcodec.LayoutVersion, err)
	}
	if ok {
		slog.Info("upgraded the tables' cell layout version; adapters of older versions now refuse them",
			"from", from, "to", cellcodec.LayoutVersion)
	}
	return true, nil
}
