package pebbletable

import (
	"bytes"
	"context"
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
	var key []byte
	for i := range cells {
		c := &cells[i]
		key = appendCellKey(key[:0], t.id, c.Row, fams[i], c.Qualifier)
		if !it.SeekGE(key) || !bytes.Equal(it.Key(), key) {
			if err := it.Error(); err != nil {
				return fmt.Errorf("delete versions in %q: %w", t.name, err)
			}
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("delete versions in %q: %w", t.name, err)
		}
		if len(v) < tsLen || cellTimestamp(v) != c.Timestamp {
			continue
		}
		if err := b.Delete(key, nil); err != nil {
			return fmt.Errorf("delete versions in %q: %w", t.name, err)
		}
	}
	if b.Empty() {
		return nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("delete %d versions in %q: %w", len(cells), t.name, err)
	}
	return nil
}
