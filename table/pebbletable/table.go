package pebbletable

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prom-hbase/prom-hbase/table"
)

// maxFamilies is how many families a table can have: a family is one byte
// of the cell key.
const maxFamilies = 256

// tbl is one table: a key range of the shared Pebble keyspace.
type tbl struct {
	db     *DB
	name   string
	id     uint32
	prefix []byte // the table's key prefix
	end    []byte // the first key after the table
	// fams maps family names to key bytes. AddFamily replaces it, so a read
	// loads it once and decodes all its cells with that one: loaded after
	// the read's Pebble iterator was created, it knows every family of the
	// cells the iterator can see (a family is in the set before any write
	// can name it).
	fams atomic.Pointer[famSet]
	// ttls are per family key byte, in milliseconds (0: forever).
	// AlterFamily changes them while reads run: the retention horizon moves
	// at once. A fixed array, so that AddFamily never has to move it.
	ttls [maxFamilies]atomic.Int64
	rec  tableRecord // the catalog entry; guarded by db.mu
	// lastSweep is when the background sweeper last began a pass over the
	// table, on the DB's clock; guarded by db.sweepMu.
	lastSweep time.Time
	// ownerSweeps is set once the table's owner deletes rows by range
	// (DeleteRows): its retention is then the owner's, not the sweep's.
	ownerSweeps atomic.Bool
}

// famSet is a table's families as of one catalog entry; never modified.
type famSet struct {
	names []string // by key byte; "" for a byte no family has
	// ordered is set when key byte order is name order, as for every table
	// CreateTable made and no AddFamily changed: a row's cells then come
	// out of Pebble in (family, qualifier) order. Otherwise a read of all
	// families sorts each row's cells by family (see sortCells).
	ordered bool
}

func newFamSet(rec tableRecord) *famSet {
	fs := &famSet{ordered: true}
	for _, f := range rec.Families {
		i := f.index()
		if i >= len(fs.names) {
			fs.names = append(fs.names, make([]string, i+1-len(fs.names))...)
		}
		fs.names[i] = f.Name
	}
	prev := ""
	for _, n := range fs.names {
		if n == "" {
			continue
		}
		if n < prev {
			fs.ordered = false
		}
		prev = n
	}
	return fs
}

// name is the family of key byte b; false for a byte no family has (a
// corrupt key: writes name only families the table has).
func (fs *famSet) name(b byte) (string, bool) {
	if int(b) >= len(fs.names) || fs.names[b] == "" {
		return "", false
	}
	return fs.names[b], true
}

var _ table.Table = (*tbl)(nil)

func newTbl(db *DB, name string, rec tableRecord) *tbl {
	t := &tbl{db: db, name: name, id: rec.ID, prefix: appendTablePrefix(nil, rec.ID), rec: rec}
	t.end = prefixSuccessor(t.prefix)
	for _, f := range rec.Families {
		t.ttls[f.index()].Store(f.TTLMillis)
	}
	t.fams.Store(newFamSet(rec))
	return t
}

func (t *tbl) family(name string) (byte, error) {
	// Tables have a handful of families: a linear search beats a map.
	for i, f := range t.fams.Load().names {
		if f == name && f != "" {
			return byte(i), nil
		}
	}
	return 0, fmt.Errorf("table %q has no family %q", t.name, name)
}

// cutoffs returns, per family key byte of fs, the oldest visible timestamp.
func (t *tbl) cutoffs(dst []int64, fs *famSet, now int64) []int64 {
	dst = dst[:0]
	for i := range fs.names {
		ttl := t.ttls[i].Load()
		c := int64(-1 << 63)
		if ttl > 0 {
			c = now - ttl
		}
		dst = append(dst, c)
	}
	return dst
}

func (t *tbl) visible(family byte, ts, now int64) bool {
	ttl := t.ttls[family].Load()
	return ttl == 0 || ts >= now-ttl
}

// errFamilyByte reports a cell key whose family byte the table's families
// (as the read loaded them) do not have.
func errFamilyByte(key []byte) error {
	return fmt.Errorf("corrupt cell key %q: no family has its family byte", key)
}

// sortCells sorts a row's cells by family name, keeping the qualifier
// order within each family: for tables whose key byte order is not name
// order (a family added after creation), where Pebble returns a row's
// families in key byte order.
func sortCells(cells []table.Cell) {
	slices.SortStableFunc(cells, func(a, b table.Cell) int { return strings.Compare(a.Family, b.Family) })
}

// Put implements table.Table. The batch is synced to disk before it returns.
func (t *tbl) Put(ctx context.Context, cells []table.Cell) error {
	if err := t.db.enter(ctx); err != nil {
		return err
	}
	defer t.db.exit()
	if len(cells) == 0 {
		return nil
	}
	b := t.db.pdb.NewBatch()
	defer b.Close()
	stripes, err := t.addPuts(b, cells, t.db.nowMillis())
	if err != nil {
		return err
	}
	t.db.locks.rlock(stripes)
	err = b.Commit(pebble.Sync)
	t.db.locks.runlock(stripes)
	if err != nil {
		return fmt.Errorf("put %d cells in %q: %w", len(cells), t.name, err)
	}
	return nil
}

// addPuts encodes cells into b and returns the lock stripes of their rows.
func (t *tbl) addPuts(b *pebble.Batch, cells []table.Cell, now int64) (stripeSet, error) {
	var stripes stripeSet
	var prevRow []byte
	for i := range cells {
		c := &cells[i]
		fam, err := t.family(c.Family)
		if err != nil {
			return 0, fmt.Errorf("put: %w", err)
		}
		if len(c.Row) == 0 {
			return 0, fmt.Errorf("put in %q: empty row key", t.name)
		}
		ts := c.Timestamp
		if ts == table.LatestTimestamp {
			ts = now
		}
		op := b.SetDeferred(cellKeyLen(c.Row, c.Qualifier), tsLen+len(c.Value))
		if k := appendCellKey(op.Key[:0], t.id, c.Row, fam, c.Qualifier); len(k) != len(op.Key) || &k[0] != &op.Key[0] {
			return 0, fmt.Errorf("put in %q: cell key of row %.40q not written in place (%d bytes, %d expected)", t.name, c.Row, len(k), len(op.Key))
		}
		putCellValue(op.Value, ts, c.Value)
		if err := op.Finish(); err != nil {
			return 0, fmt.Errorf("put in %q: %w", t.name, err)
		}
		if i == 0 || !bytes.Equal(c.Row, prevRow) {
			stripes |= t.db.locks.stripe(t.id, c.Row)
			prevRow = c.Row
		}
	}
	return stripes, nil
}

// Delete implements table.Table.
func (t *tbl) Delete(ctx context.Context, cells []table.Cell) error {
	if err := t.db.enter(ctx); err != nil {
		return err
	}
	defer t.db.exit()
	if len(cells) == 0 {
		return nil
	}
	b := t.db.pdb.NewBatch()
	defer b.Close()
	var stripes stripeSet
	var key, end []byte
	for i := range cells {
		c := &cells[i]
		key = appendRowPrefix(key[:0], t.id, c.Row)
		// The first key past the row: the terminator 0x00 0x01 turned into 0x00 0x02.
		end = append(end[:0], key...)
		end[len(end)-1] = pastRow
		var err error
		switch {
		case c.Family == "":
			err = b.DeleteRange(key, end, nil)
		default:
			fam, ferr := t.family(c.Family)
			if ferr != nil {
				return fmt.Errorf("delete: %w", ferr)
			}
			key = append(key, fam)
			switch {
			case c.Qualifier != nil:
				err = b.Delete(append(key, c.Qualifier...), nil)
			case fam < 0xFF:
				end = append(append(end[:0], key[:len(key)-1]...), fam+1)
				err = b.DeleteRange(key, end, nil)
			default:
				err = b.DeleteRange(key, end, nil)
			}
		}
		if err != nil {
			return fmt.Errorf("delete in %q: %w", t.name, err)
		}
		stripes |= t.db.locks.stripe(t.id, c.Row)
	}
	t.db.locks.rlock(stripes)
	err := b.Commit(pebble.Sync)
	t.db.locks.runlock(stripes)
	if err != nil {
		return fmt.Errorf("delete %d cells in %q: %w", len(cells), t.name, err)
	}
	return nil
}

// Increment implements table.Table.
func (t *tbl) Increment(ctx context.Context, row []byte, family string, qualifier []byte, delta int64) (int64, error) {
	if err := t.db.enter(ctx); err != nil {
		return 0, err
	}
	defer t.db.exit()
	fam, err := t.family(family)
	if err != nil {
		return 0, fmt.Errorf("increment: %w", err)
	}
	if len(row) == 0 {
		return 0, fmt.Errorf("increment in %q: empty row key", t.name)
	}
	key := appendCellKey(nil, t.id, row, fam, qualifier)
	s := t.db.locks.stripe(t.id, row)
	t.db.locks.lock(s)
	defer t.db.locks.unlock(s)
	now := t.db.nowMillis()
	cur, found, err := t.read(key, fam, now)
	if err != nil {
		return 0, fmt.Errorf("increment in %q: %w", t.name, err)
	}
	var n int64
	if found {
		if len(cur) != 8 {
			return 0, fmt.Errorf("increment in %q: cell holds %d bytes, not an 8-byte counter", t.name, len(cur))
		}
		n = int64(binary.BigEndian.Uint64(cur))
	}
	n += delta
	v := make([]byte, tsLen+8)
	putCellValue(v, now, binary.BigEndian.AppendUint64(nil, uint64(n)))
	if err := t.db.pdb.Set(key, v, pebble.Sync); err != nil {
		return 0, fmt.Errorf("increment in %q: %w", t.name, err)
	}
	return n, nil
}

// read returns a copy of the visible value under key.
func (t *tbl) read(key []byte, fam byte, now int64) ([]byte, bool, error) {
	return t.readFrom(t.db.pdb, key, fam, now)
}

// readFrom is read from r: the DB, or an indexed batch over it.
func (t *tbl) readFrom(r pebble.Reader, key []byte, fam byte, now int64) ([]byte, bool, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	val, found, err := t.liveValue(v, fam, now)
	return bytes.Clone(val), found, err
}

// liveValue returns the value of a stored cell v (timestamp, then value)
// of family byte fam, and whether the cell is live at now (not expired).
func (t *tbl) liveValue(v []byte, fam byte, now int64) ([]byte, bool, error) {
	if len(v) < tsLen {
		return nil, false, fmt.Errorf("corrupt cell value of %d bytes", len(v))
	}
	if !t.visible(fam, cellTimestamp(v), now) {
		return nil, false, nil
	}
	return v[tsLen:], true, nil
}

// CheckAndPut implements table.Table.
func (t *tbl) CheckAndPut(ctx context.Context, row []byte, family string, qualifier, expected []byte, put []table.Cell) (bool, error) {
	if err := t.db.enter(ctx); err != nil {
		return false, err
	}
	defer t.db.exit()
	fam, err := t.family(family)
	if err != nil {
		return false, fmt.Errorf("check and put: %w", err)
	}
	for i := range put {
		if !bytes.Equal(put[i].Row, row) {
			return false, fmt.Errorf("check and put in %q: cell %d is in row %q, not %q", t.name, i, put[i].Row, row)
		}
	}
	b := t.db.pdb.NewBatch()
	defer b.Close()
	now := t.db.nowMillis()
	if _, err := t.addPuts(b, put, now); err != nil {
		return false, err
	}
	key := appendCellKey(nil, t.id, row, fam, qualifier)
	s := t.db.locks.stripe(t.id, row)
	t.db.locks.lock(s)
	defer t.db.locks.unlock(s)
	cur, found, err := t.read(key, fam, now)
	if err != nil {
		return false, fmt.Errorf("check and put in %q: %w", t.name, err)
	}
	if found != (expected != nil) || !bytes.Equal(cur, expected) {
		return false, nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return false, fmt.Errorf("check and put in %q: %w", t.name, err)
	}
	return true, nil
}
