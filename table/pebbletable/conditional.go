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
	if err := t.db.enter(ctx); err != nil {
		return nil, err
	}
	defer t.db.exit()
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
	if err := t.db.enter(ctx); err != nil {
		return err
	}
	defer t.db.exit()
	if len(cells) == 0 {
		return nil
	}
	fams, stripes, err := t.versionCells(nil, cells)
	if err != nil {
		return fmt.Errorf("delete versions: %w", err)
	}
	t.db.locks.lock(stripes)
	defer t.db.locks.unlock(stripes)
	it, err := t.db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: t.prefix, UpperBound: t.end})
	if err != nil {
		return fmt.Errorf("delete versions in %q: %w", t.name, err)
	}
	defer it.Close()
	return t.deleteLocked(it, [][]table.Cell{cells}, fams)
}

// CheckAndDeleteBatch implements table.Table. It takes the row locks of
// every deletion at once, checks the conditions against the table as it
// stands, and deletes the versions of those that passed as DeleteVersions
// does, in one synced batch.
func (t *tbl) CheckAndDeleteBatch(ctx context.Context, dels []table.CondDelete) ([]bool, error) {
	if err := t.db.enter(ctx); err != nil {
		return nil, err
	}
	defer t.db.exit()
	deleted := make([]bool, len(dels))
	if len(dels) == 0 {
		return deleted, nil
	}
	if err := table.CheckCondDeletes(dels); err != nil {
		return nil, fmt.Errorf("check and delete batch in %q: %w", t.name, err)
	}
	condFams := make([]byte, len(dels))
	var stripes stripeSet
	var fams []byte
	for i := range dels {
		d := &dels[i]
		fam, err := t.family(d.Family)
		if err != nil {
			return nil, fmt.Errorf("check and delete batch, deletion %d: %w", i, err)
		}
		if len(d.Row) == 0 {
			return nil, fmt.Errorf("check and delete batch in %q, deletion %d: empty row key", t.name, i)
		}
		condFams[i] = fam
		stripes |= t.db.locks.stripe(t.id, d.Row)
		// Every cell is in d.Row, whose stripe is taken above.
		if fams, _, err = t.versionCells(fams, d.Delete); err != nil {
			return nil, fmt.Errorf("check and delete batch, deletion %d: %w", i, err)
		}
	}
	t.db.locks.lock(stripes)
	defer t.db.locks.unlock(stripes)
	// One iterator reads the conditions and then the cells to delete: a
	// seek costs less than a Get, which opens an iterator of its own.
	it, err := t.db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: t.prefix, UpperBound: t.end})
	if err != nil {
		return nil, fmt.Errorf("check and delete batch in %q: %w", t.name, err)
	}
	defer it.Close()
	now := t.db.nowMillis()
	var groups [][]table.Cell // the deletions that pass, without copying their cells
	var cellFams []byte
	var key []byte
	at := 0 // dels[i]'s families start at fams[at]
	for i := range dels {
		d := &dels[i]
		key = appendCellKey(key[:0], t.id, d.Row, condFams[i], d.Qualifier)
		holds, err := t.holds(it, key, condFams[i], now, d.Expected)
		if err != nil {
			return nil, fmt.Errorf("check and delete batch in %q: %w", t.name, err)
		}
		if holds {
			groups = append(groups, d.Delete)
			cellFams = append(cellFams, fams[at:at+len(d.Delete)]...)
			deleted[i] = true
		}
		at += len(d.Delete)
	}
	if err := t.deleteLocked(it, groups, cellFams); err != nil {
		return nil, err
	}
	return deleted, nil
}

// holds reports whether the cell of key (family byte fam) holds expected,
// or is absent (or expired) when expected is nil, reading it with it.
func (t *tbl) holds(it *pebble.Iterator, key []byte, fam byte, now int64, expected []byte) (bool, error) {
	if !it.SeekGE(key) || !bytes.Equal(it.Key(), key) {
		return expected == nil, it.Error()
	}
	v, err := it.ValueAndErr()
	if err != nil {
		return false, err
	}
	cur, found, err := t.liveValue(v, fam, now)
	if err != nil {
		return false, err
	}
	return found == (expected != nil) && bytes.Equal(cur, expected), nil
}

// versionCells checks cells to delete by version and appends their
// families' bytes to fams; it returns the row-lock stripes they need.
func (t *tbl) versionCells(fams []byte, cells []table.Cell) ([]byte, stripeSet, error) {
	var stripes stripeSet
	for i := range cells {
		c := &cells[i]
		fam, err := t.family(c.Family)
		if err != nil {
			return nil, 0, err
		}
		if len(c.Row) == 0 || c.Timestamp == table.LatestTimestamp {
			return nil, 0, fmt.Errorf("in %q: cell %d: want a row key and an exact timestamp", t.name, i)
		}
		fams = append(fams, fam)
		stripes |= t.db.locks.stripe(t.id, c.Row)
	}
	return fams, stripes, nil
}

// deleteLocked deletes, of each cell of groups (its family byte in fams,
// which runs over the groups' cells in order), the stored version when its
// timestamp is the cell's, in one synced batch, reading them with it; the
// caller holds the rows' locks. One iterator serves all the reads: cells
// come sorted, or nearly, and a seek from a nearby position is much cheaper
// than a Get.
func (t *tbl) deleteLocked(it *pebble.Iterator, groups [][]table.Cell, fams []byte) error {
	if len(fams) == 0 {
		return nil
	}
	b := t.db.pdb.NewBatch()
	defer b.Close()
	var r deleteRun
	at := 0 // the group's families start at fams[at]
	for _, cells := range groups {
		if err := t.deleteGroup(it, b, &r, cells, fams[at:at+len(cells)]); err != nil {
			return err
		}
		at += len(cells)
	}
	if err := errors.Join(it.Error(), r.flush(b)); err != nil {
		return fmt.Errorf("delete versions in %q: %w", t.name, err)
	}
	if b.Empty() {
		return nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("delete %d versions in %q: %w", len(fams), t.name, err)
	}
	return nil
}

// deleteGroup adds to b, through r, the deletions of the cells (their
// family bytes in fams) whose stored version is the one named.
func (t *tbl) deleteGroup(it *pebble.Iterator, b *pebble.Batch, r *deleteRun, cells []table.Cell, fams []byte) error {
	for i := range cells {
		c := &cells[i]
		r.key = appendCellKey(r.key[:0], t.id, c.Row, fams[i], c.Qualifier)
		key := r.key
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
	return nil
}

// deleteRun collects the keys of cells to delete that are adjacent in key
// order and of one row, for DeleteVersions.
type deleteRun struct {
	key   []byte // scratch: the cell's key
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
