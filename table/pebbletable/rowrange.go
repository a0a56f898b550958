package pebbletable

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prom-hbase/prom-hbase/table"
)

var _ table.RowRangeDeleter = (*tbl)(nil)

// DeleteRows implements table.RowRangeDeleter: one seek per range, and a
// range deletion for each range that holds a key, expired or not (reads
// hide expired cells; this looks at what is stored), all in one synced
// batch. From its first call on, the table's retention is its owner's: the
// background sweep, which must read every cell to tell the expired ones,
// skips it.
func (t *tbl) DeleteRows(ctx context.Context, ranges []table.RowRange) error {
	if err := t.db.enter(ctx); err != nil {
		return err
	}
	defer t.db.exit()
	t.ownerSweeps.Store(true)
	// Under every row lock, as the sweep's range deletions: an Increment or
	// CheckAndPut reads and writes a row as one step, and must not have the
	// row deleted between the two.
	t.db.locks.lock(allStripes)
	defer t.db.locks.unlock(allStripes)
	it, err := t.db.pdb.NewIter(&pebble.IterOptions{LowerBound: t.prefix, UpperBound: t.end})
	if err != nil {
		return fmt.Errorf("pebbletable: delete rows of %s: %w", t.name, err)
	}
	b := t.db.pdb.NewBatch()
	defer b.Close()
	var lo, hi []byte
	for _, r := range ranges {
		lo = appendEscapedRow(append(lo[:0], t.prefix...), r.Start)
		hi = append(hi[:0], t.end...)
		if r.Stop != nil {
			hi = appendEscapedRow(append(hi[:0], t.prefix...), r.Stop)
		}
		if bytes.Compare(lo, hi) >= 0 || !it.SeekGE(lo) || bytes.Compare(it.Key(), hi) >= 0 {
			continue
		}
		if err := b.DeleteRange(lo, hi, nil); err != nil {
			return errors.Join(fmt.Errorf("pebbletable: delete rows of %s: %w", t.name, err), it.Close())
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("pebbletable: delete rows of %s: %w", t.name, err)
	}
	if b.Empty() {
		return nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("pebbletable: delete rows of %s: %w", t.name, err)
	}
	return nil
}
