package pebbletable

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prom-hbase/prom-hbase/table"
)

// CheckAndPutBatch implements table.Table. It takes the row locks of every
// put at once, checks the conditions in order against the table as the
// puts before have left it (an indexed batch reads its own writes, so two
// conditions on one cell behave as two CheckAndPuts in a row), and commits
// the puts that passed in one synced batch.
func (t *tbl) CheckAndPutBatch(ctx context.Context, puts []table.CondPut) ([]bool, error) {
	if err := t.db.check(ctx); err != nil {
		return nil, err
	}
	written := make([]bool, len(puts))
	if len(puts) == 0 {
		return written, nil
	}
	fams := make([]byte, len(puts))
	var stripes stripeSet
	for i := range puts {
		p := &puts[i]
		fam, err := t.family(p.Family)
		if err != nil {
			return nil, fmt.Errorf("check and put batch, put %d: %w", i, err)
		}
		if len(p.Row) == 0 {
			return nil, fmt.Errorf("check and put batch in %q, put %d: empty row key", t.name, i)
		}
		for j := range p.Put {
			if !bytes.Equal(p.Put[j].Row, p.Row) {
				return nil, fmt.Errorf("check and put batch in %q, put %d: cell %d is in row %q, not %q", t.name, i, j, p.Put[j].Row, p.Row)
			}
		}
		fams[i] = fam
		stripes |= t.db.locks.stripe(t.id, p.Row)
	}
	b := t.db.pdb.NewIndexedBatch()
	defer b.Close()
	t.db.locks.lock(stripes)
	defer t.db.locks.unlock(stripes)
	now := t.db.nowMillis()
	var key []byte
	for i := range puts {
		p := &puts[i]
		key = appendCellKey(key[:0], t.id, p.Row, fams[i], p.Qualifier)
		cur, found, err := t.readFrom(b, key, fams[i], now)
		if err != nil {
			return nil, fmt.Errorf("check and put batch in %q: %w", t.name, err)
		}
		if found != (p.Expected != nil) || !bytes.Equal(cur, p.Expected) {
			continue
		}
		if _, err := t.addPuts(b, p.Put, now); err != nil {
			return nil, err
		}
		written[i] = true
	}
	if b.Empty() {
		return written, nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return nil, fmt.Errorf("check and put batch of %d in %q: %w", len(puts), t.name, err)
	}
	return written, nil
}

// DeleteVersions implements table.Table. Pebble keeps one version per cell,
// so a cell is deleted when its stored timestamp is the one given; the check
// and the delete happen under the row's lock, so a write that replaced the
// version meanwhile survives.
//
// Cells of one row that are adjacent in key order, with no other cell
// between them, go as one range deletion once there are minRangeRun of them
// (the compactor deletes an hour's raw cells, 240 at one a 15 s, as such a
// run). A scan of the row's other family steps over every point tombstone,
// and over the cell it shadows in a lower level, until compactions drop
// them, which with a 64 MiB memtable may take hours; it seeks past a range
// deletion at once. The range stays within one row, so the lock held on
// that row keeps every other write out of it until the batch is committed.
func (t *tbl) DeleteVersions(ctx context.Context, cells []table.Cell) error {
	if err := t.db.check(ctx); err != nil {
		return err
	}
	if len(cells) == 0 {
		return nil
	}
	fams := make([]byte, len(cells))
	var stripes stripeSet
	for i := range cells {
		c := &cells[i]
		fam, err := t.family(c.Family)
		if err != nil {
			return fmt.Errorf("delete versions: %w", err)
		}
		if len(c.Row) == 0 || c.Timestamp == table.LatestTimestamp {
			return fmt.Errorf("delete versions in %q: cell %d: want a row key and an exact timestamp", t.name, i)
		}
		fams[i] = fam
		stripes |= t.db.locks.stripe(t.id, c.Row)
	}
	b := t.db.pdb.NewBatch()
	defer b.Close()
	t.db.locks.lock(stripes)
	defer t.db.locks.unlock(stripes)
	// One iterator for all the reads: cells come sorted, or nearly, and a
	// seek from a nearby position is much cheaper than a Get.
	it, err := t.db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: t.prefix, UpperBound: t.end})
	if err != nil {
		return fmt.Errorf("delete versions in %q: %w", t.name, err)
	}
	defer it.Close()
	var r deleteRun
	var key []byte
	for i := range cells {
		c := &cells[i]
		key = appendCellKey(key[:0], t.id, c.Row, fams[i], c.Qualifier)
		// The iterator stands on the cell after the run's last: this cell
		// continues the run when it is that one and of the same row.
		if !r.continues(it, key, c.Row) {
			if err := r.flush(b); err != nil {
				return fmt.Errorf("delete versions in %q: %w", t.name, err)
			}
			if !it.SeekGE(key) || !bytes.Equal(it.Key(), key) {
				if err := it.Error(); err != nil {
					return fmt.Errorf("delete versions in %q: %w", t.name, err)
				}
				continue
			}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("delete versions in %q: %w", t.name, err)
		}
		if len(v) < tsLen || cellTimestamp(v) != c.Timestamp {
			// This cell stays, and parts the cells around it.
			if err := r.flush(b); err != nil {
				return fmt.Errorf("delete versions in %q: %w", t.name, err)
			}
			continue
		}
		r.add(key, c.Row)
		it.Next()
	}
	if err := errors.Join(it.Error(), r.flush(b)); err != nil {
		return fmt.Errorf("delete versions in %q: %w", t.name, err)
	}
	if b.Empty() {
		return nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("delete %d versions in %q: %w", len(cells), t.name, err)
	}
	return nil
}

// deleteRun collects the keys of cells to delete that are adjacent in key
// order and of one row, for DeleteVersions.
type deleteRun struct {
	row   []byte
	keys  [][]byte // copies, in arena
	arena []byte
}

func (r *deleteRun) add(key, row []byte) {
	if len(r.keys) == 0 {
		r.row = append(r.row[:0], row...)
	}
	n := len(r.arena)
	r.arena = append(r.arena, key...)
	r.keys = append(r.keys, r.arena[n:len(r.arena):len(r.arena)])
}

// continues reports whether the cell of key and row follows the run's last
// with nothing between them: it is where the iterator stepped to after the
// last, and in the same row.
func (r *deleteRun) continues(it *pebble.Iterator, key, row []byte) bool {
	return len(r.keys) > 0 && it.Valid() && bytes.Equal(it.Key(), key) && bytes.Equal(r.row, row)
}

// flush adds the run's deletions to b, as one range deletion from its first
// key to just past its last when it is long enough, and empties it.
func (r *deleteRun) flush(b *pebble.Batch) error {
	defer func() { r.keys, r.arena = r.keys[:0], r.arena[:0] }()
	if len(r.keys) >= minRangeRun {
		last := r.keys[len(r.keys)-1]
		end := append(last[:len(last):len(last)], 0) // the first key after last
		return b.DeleteRange(r.keys[0], end, nil)
	}
	for _, k := range r.keys {
		if err := b.Delete(k, nil); err != nil {
			return err
		}
	}
	return nil
}
