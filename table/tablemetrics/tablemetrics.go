// Package tablemetrics instruments any table.DB: the latency and the errors of
// every storage call, by operation, as Prometheus metrics. It wraps the
// interface and must not know which backend is underneath.
package tablemetrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/prom-hbase/prom-hbase/table"
)

// Metrics are the collectors shared by every table of a wrapped DB.
type Metrics struct {
	duration *prometheus.HistogramVec
	errors   *prometheus.CounterVec
}

// NewMetrics registers the collectors on reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                           "promhbase_storage_call_duration_seconds",
			Help:                           "Duration of storage calls (one batched put, get, scan, increment ...), by operation and table.",
			Buckets:                        []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
			NativeHistogramBucketFactor:    1.1,
			NativeHistogramMaxBucketNumber: 100,
		}, []string{"op", "table"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_storage_call_errors_total",
			Help: "Storage calls that failed, by operation and table.",
		}, []string{"op", "table"}),
	}
	if reg != nil {
		reg.MustRegister(m.duration, m.errors)
	}
	return m
}

// Wrap returns db with every table it opens instrumented.
func Wrap(db table.DB, m *Metrics) table.DB {
	return &instrumentedDB{DB: db, m: m}
}

type instrumentedDB struct {
	table.DB
	m *Metrics
}

func (d *instrumentedDB) Table(ctx context.Context, name string) (table.Table, error) {
	t, err := d.DB.Table(ctx, name)
	if err != nil {
		return nil, err
	}
	return newTable(t, name, d.m), nil
}

func (d *instrumentedDB) CreateTable(ctx context.Context, spec table.TableSpec) error {
	start := time.Now()
	err := d.DB.CreateTable(ctx, spec)
	d.m.op("create_table", spec.Name).observe(start, err)
	return err
}

func (d *instrumentedDB) Describe(ctx context.Context, name string) (table.TableSpec, error) {
	start := time.Now()
	spec, err := d.DB.Describe(ctx, name)
	d.m.op("describe", name).observe(start, err)
	return spec, err
}

func (d *instrumentedDB) AlterFamily(ctx context.Context, name string, fam table.FamilySpec) error {
	start := time.Now()
	err := d.DB.AlterFamily(ctx, name, fam)
	d.m.op("alter_family", name).observe(start, err)
	return err
}

func (d *instrumentedDB) AddFamily(ctx context.Context, name string, fam table.FamilySpec) error {
	start := time.Now()
	err := d.DB.AddFamily(ctx, name, fam)
	d.m.op("add_family", name).observe(start, err)
	return err
}

// op holds the children of one (op, table) pair, looked up once so the hot
// path does no label hashing.
type op struct {
	duration prometheus.Observer
	errors   prometheus.Counter
}

func (m *Metrics) op(name, tbl string) op {
	return op{duration: m.duration.WithLabelValues(name, tbl), errors: m.errors.WithLabelValues(name, tbl)}
}

func (o op) observe(start time.Time, err error) {
	o.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		o.errors.Inc()
	}
}

type instrumentedTable struct {
	t                                           table.Table
	put, del, get, scan, increment, checkAndPut op
	checkAndPutBatch, deleteVersions, delRows   op
	checkAndDeleteBatch                         op
}

func newTable(t table.Table, name string, m *Metrics) *instrumentedTable {
	return &instrumentedTable{
		t:           t,
		put:         m.op("put", name),
		del:         m.op("delete", name),
		get:         m.op("get", name),
		scan:        m.op("scan", name),
		increment:   m.op("increment", name),
		checkAndPut: m.op("check_and_put", name),

		checkAndPutBatch:    m.op("check_and_put_batch", name),
		deleteVersions:      m.op("delete_versions", name),
		checkAndDeleteBatch: m.op("check_and_delete_batch", name),
		delRows:             m.op("delete_rows", name),
	}
}

func (t *instrumentedTable) Put(ctx context.Context, cells []table.Cell) error {
	start := time.Now()
	err := t.t.Put(ctx, cells)
	t.put.observe(start, err)
	return err
}

func (t *instrumentedTable) Delete(ctx context.Context, cells []table.Cell) error {
	start := time.Now()
	err := t.t.Delete(ctx, cells)
	t.del.observe(start, err)
	return err
}

func (t *instrumentedTable) Get(ctx context.Context, family string, keys [][]byte) ([]table.Row, error) {
	start := time.Now()
	rows, err := t.t.Get(ctx, family, keys)
	t.get.observe(start, err)
	return rows, err
}

func (t *instrumentedTable) Increment(ctx context.Context, row []byte, family string, qualifier []byte, delta int64) (int64, error) {
	start := time.Now()
	v, err := t.t.Increment(ctx, row, family, qualifier, delta)
	t.increment.observe(start, err)
	return v, err
}

func (t *instrumentedTable) CheckAndPut(ctx context.Context, row []byte, family string, qualifier, expected []byte, put []table.Cell) (bool, error) {
	start := time.Now()
	ok, err := t.t.CheckAndPut(ctx, row, family, qualifier, expected, put)
	t.checkAndPut.observe(start, err)
	return ok, err
}

func (t *instrumentedTable) CheckAndPutBatch(ctx context.Context, puts []table.CondPut) ([]bool, error) {
	start := time.Now()
	written, err := t.t.CheckAndPutBatch(ctx, puts)
	t.checkAndPutBatch.observe(start, err)
	return written, err
}

func (t *instrumentedTable) CheckAndDeleteBatch(ctx context.Context, dels []table.CondDelete) ([]bool, error) {
	start := time.Now()
	deleted, err := t.t.CheckAndDeleteBatch(ctx, dels)
	t.checkAndDeleteBatch.observe(start, err)
	return deleted, err
}

func (t *instrumentedTable) DeleteVersions(ctx context.Context, cells []table.Cell) error {
	start := time.Now()
	err := t.t.DeleteVersions(ctx, cells)
	t.deleteVersions.observe(start, err)
	return err
}

// DeleteRows forwards to a table.RowRangeDeleter; errors.ErrUnsupported
// otherwise.
func (t *instrumentedTable) DeleteRows(ctx context.Context, ranges []table.RowRange) error {
	d, ok := t.t.(table.RowRangeDeleter)
	if !ok {
		return errors.ErrUnsupported
	}
	begin := time.Now()
	err := d.DeleteRows(ctx, ranges)
	t.delRows.observe(begin, err)
	return err
}

// Compact forwards to a table.Compacter; errors.ErrUnsupported otherwise.
// An administrative call, not timed.
func (t *instrumentedTable) Compact(ctx context.Context) error {
	c, ok := t.t.(table.Compacter)
	if !ok {
		return errors.ErrUnsupported
	}
	return c.Compact(ctx)
}

// CompactFamily forwards to a table.FamilyCompacter; errors.ErrUnsupported
// otherwise. An administrative call, not timed.
func (t *instrumentedTable) CompactFamily(ctx context.Context, family string) error {
	c, ok := t.t.(table.FamilyCompacter)
	if !ok {
		return errors.ErrUnsupported
	}
	return c.CompactFamily(ctx, family)
}

// GroupRanges forwards to a table.RangeGrouper: a grouping is a local
// lookup (the HBase client's location cache), not a storage call, and is
// not timed.
func (t *instrumentedTable) GroupRanges(ctx context.Context, ranges []table.RowRange) ([][]table.RowRange, error) {
	return table.GroupRanges(ctx, t.t, ranges)
}

// Scan is timed from the call to Close: the whole life of the scan, since a
// scanner fetches lazily and its errors surface in Err.
func (t *instrumentedTable) Scan(ctx context.Context, opts table.ScanOptions) table.Scanner {
	return &instrumentedScanner{Scanner: t.t.Scan(ctx, opts), op: t.scan, start: time.Now()}
}

type instrumentedScanner struct {
	table.Scanner
	op     op
	start  time.Time
	closed bool
}

func (s *instrumentedScanner) Close() error {
	err := s.Scanner.Close()
	if !s.closed {
		s.closed = true
		failed := err
		if failed == nil {
			failed = s.Scanner.Err()
		}
		s.op.observe(s.start, failed)
	}
	return err
}
