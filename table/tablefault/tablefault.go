// Package tablefault wraps a table.DB so that data calls fail at random,
// half of them before they reach the backend and half after the backend
// applied them (the reply lost): what a client of a busy or failing HBase
// sees when a call times out. It serves the fault tests, in-process and, by
// the adapter's hidden --testing.table-fault-rate flag, in separate
// processes; it is never on in production.
//
// It wraps the interface and must not know which backend is underneath, nor
// what the tables hold.
package tablefault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prom-hbase/prom-hbase/table"
)

// ErrInjected is wrapped by every injected fault.
var ErrInjected = errors.New("injected storage fault")

// Config says where and how often faults strike.
type Config struct {
	// Rate is the probability that a data call fails, in [0, 1].
	Rate float64
	// Seed makes the sequence of faults repeatable.
	Seed uint64
	// TableSuffix limits the faults to tables whose name ends with it
	// (empty: every table).
	TableSuffix string
}

// DB is a table.DB with faults.
type DB struct {
	table.DB
	cfg      Config
	mu       sync.Mutex
	rng      *rand.Rand
	injected atomic.Int64
}

// Wrap returns db with faults in the data calls of the tables cfg selects.
// Table creation, description and alteration are never faulted: they run at
// start.
func Wrap(db table.DB, cfg Config) *DB {
	return &DB{DB: db, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x7ab1e))}
}

// Injected is the number of faults injected so far.
func (d *DB) Injected() int64 { return d.injected.Load() }

// SetRate changes the fault rate, e.g. to 0 to let a test read back.
func (d *DB) SetRate(rate float64) {
	d.mu.Lock()
	d.cfg.Rate = rate
	d.mu.Unlock()
}

// Table opens a table, faulty when cfg selects it.
func (d *DB) Table(ctx context.Context, name string) (table.Table, error) {
	t, err := d.DB.Table(ctx, name)
	if err != nil || !strings.HasSuffix(name, d.cfg.TableSuffix) {
		return t, err
	}
	return &Table{Table: t, db: d, name: name}, nil
}

// fault says whether to fail a call, and whether after applying it.
func (d *DB) fault() (fail, after bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg.Rate <= 0 || d.rng.Float64() >= d.cfg.Rate {
		return false, false
	}
	d.injected.Add(1)
	return true, d.rng.IntN(2) == 0
}

// Table is a table.Table with faults.
type Table struct {
	table.Table
	db   *DB
	name string
}

// call runs apply unless a fault strikes first, and loses its reply when a
// fault strikes after it.
func (t *Table) call(op string, apply func() error) error {
	fail, after := t.db.fault()
	if !fail {
		return apply()
	}
	if !after {
		return fmt.Errorf("%s %s: not sent: %w", op, t.name, ErrInjected)
	}
	if err := apply(); err != nil {
		return err
	}
	return fmt.Errorf("%s %s: applied, reply lost: %w", op, t.name, ErrInjected)
}

func (t *Table) Put(ctx context.Context, cells []table.Cell) error {
	return t.call("put", func() error { return t.Table.Put(ctx, cells) })
}

func (t *Table) Delete(ctx context.Context, cells []table.Cell) error {
	return t.call("delete", func() error { return t.Table.Delete(ctx, cells) })
}

func (t *Table) DeleteVersions(ctx context.Context, cells []table.Cell) error {
	return t.call("delete versions", func() error { return t.Table.DeleteVersions(ctx, cells) })
}

func (t *Table) CheckAndDeleteBatch(ctx context.Context, dels []table.CondDelete) ([]bool, error) {
	var deleted []bool
	err := t.call("check-and-delete batch", func() (err error) { deleted, err = t.Table.CheckAndDeleteBatch(ctx, dels); return err })
	if err != nil {
		return nil, err
	}
	return deleted, nil
}

// DeleteRows forwards to a table.RowRangeDeleter (with faults);
// errors.ErrUnsupported otherwise.
func (t *Table) DeleteRows(ctx context.Context, ranges []table.RowRange) error {
	d, ok := t.Table.(table.RowRangeDeleter)
	if !ok {
		return errors.ErrUnsupported
	}
	return t.call("delete rows", func() error { return d.DeleteRows(ctx, ranges) })
}

// Compact forwards to a table.Compacter (with faults);
// errors.ErrUnsupported otherwise.
func (t *Table) Compact(ctx context.Context) error {
	c, ok := t.Table.(table.Compacter)
	if !ok {
		return errors.ErrUnsupported
	}
	return t.call("compact", func() error { return c.Compact(ctx) })
}

// CompactFamily forwards to a table.FamilyCompacter (with faults);
// errors.ErrUnsupported otherwise.
func (t *Table) CompactFamily(ctx context.Context, family string) error {
	c, ok := t.Table.(table.FamilyCompacter)
	if !ok {
		return errors.ErrUnsupported
	}
	return t.call("compact family", func() error { return c.CompactFamily(ctx, family) })
}

func (t *Table) Get(ctx context.Context, family string, keys [][]byte) ([]table.Row, error) {
	var rows []table.Row
	err := t.call("get", func() (err error) { rows, err = t.Table.Get(ctx, family, keys); return err })
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (t *Table) Increment(ctx context.Context, row []byte, family string, qualifier []byte, delta int64) (int64, error) {
	var n int64
	err := t.call("increment", func() (err error) { n, err = t.Table.Increment(ctx, row, family, qualifier, delta); return err })
	if err != nil {
		return 0, err
	}
	return n, nil
}

func (t *Table) CheckAndPut(ctx context.Context, row []byte, family string, qualifier, expected []byte, put []table.Cell) (bool, error) {
	var ok bool
	err := t.call("check-and-put", func() (err error) {
		ok, err = t.Table.CheckAndPut(ctx, row, family, qualifier, expected, put)
		return err
	})
	if err != nil {
		return false, err
	}
	return ok, nil
}

func (t *Table) CheckAndPutBatch(ctx context.Context, puts []table.CondPut) ([]bool, error) {
	var written []bool
	err := t.call("check-and-put batch", func() (err error) { written, err = t.Table.CheckAndPutBatch(ctx, puts); return err })
	if err != nil {
		return nil, err
	}
	return written, nil
}

// GroupRanges forwards to a table.RangeGrouper, without faults: it only
// shapes the scans, whose faults are injected in Scan.
func (t *Table) GroupRanges(ctx context.Context, ranges []table.RowRange) ([][]table.RowRange, error) {
	return table.GroupRanges(ctx, t.Table, ranges)
}

func (t *Table) Scan(ctx context.Context, opts table.ScanOptions) table.Scanner {
	if fail, _ := t.db.fault(); fail {
		return errScanner{fmt.Errorf("scan %s: %w", t.name, ErrInjected)}
	}
	return t.Table.Scan(ctx, opts)
}

type errScanner struct{ err error }

func (e errScanner) Next() bool    { return false }
func (e errScanner) At() table.Row { return table.Row{} }
func (e errScanner) Err() error    { return e.err }
func (e errScanner) Close() error  { return nil }
