package pebbletable

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Until commit c5a2e90, Put could write a cell under a key made of whatever
// Pebble's batch buffer held, where a long row key should have been (see
// appendEscapedRow). Such a key belongs to no table, or does not parse, or
// names no family of its table: no read can return it, and every scan and
// sweep of the table it falls in stops at it with "corrupt cell key". Once
// per database, before its first use by a build that has the fix, the
// cell keys are checked and those are deleted; a marker in the catalog's
// keyspace records that it was done. A garbage key that happens to parse
// as a key of some table cannot be told from a written one, and stays.

// keysCheckedKey marks a database whose cell keys were checked. It sorts
// outside the table catalog's keys (catalogPrefix, catalogTable, name).
var keysCheckedKey = []byte{catalogPrefix, 'K', 1}

// keyCheckBatch bounds the deletions committed at a time.
const keyCheckBatch = 4 << 20

// checkKeys runs the check unless the marker says it ran, and returns how
// many cells it deleted.
func (db *DB) checkKeys() (int, error) {
	switch _, closer, err := db.pdb.Get(keysCheckedKey); {
	case err == nil:
		_ = closer.Close()
		return 0, nil
	case !errors.Is(err, pebble.ErrNotFound):
		return 0, fmt.Errorf("read the key check marker: %w", err)
	}
	begin := time.Now()
	if len(db.tables) > 0 {
		db.logger.Info("checking every cell key once, for cells a bug in Put left unreadable (see keycheck.go): one pass over the store before it opens")
	}
	fams := map[uint32]*famSet{}
	for _, t := range db.tables {
		fams[t.id] = t.fams.Load()
	}
	lower := []byte{cellPrefix}
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixSuccessor(lower)})
	if err != nil {
		return 0, fmt.Errorf("check cell keys: %w", err)
	}
	defer it.Close()
	b := db.pdb.NewBatch()
	defer func() { _ = b.Close() }()
	deleted, checked := 0, 0
	var first, row []byte
	for it.First(); it.Valid(); it.Next() {
		checked++
		k := it.Key()
		var ok bool
		if ok, row = validCellKey(k, fams, row); ok {
			continue
		}
		if first == nil {
			first = bytes.Clone(k)
		}
		if err := b.Delete(k, nil); err != nil {
			return deleted, fmt.Errorf("check cell keys: %w", err)
		}
		deleted++
		if b.Len() >= keyCheckBatch {
			if err := b.Commit(pebble.Sync); err != nil {
				return deleted, fmt.Errorf("check cell keys: delete: %w", err)
			}
			_ = b.Close()
			b = db.pdb.NewBatch()
		}
	}
	if err := it.Error(); err != nil {
		return deleted, fmt.Errorf("check cell keys: %w", err)
	}
	if err := b.Set(keysCheckedKey, nil, nil); err != nil {
		return deleted, fmt.Errorf("check cell keys: %w", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return deleted, fmt.Errorf("check cell keys: delete: %w", err)
	}
	if deleted > 0 {
		db.logger.Warn("deleted cells whose keys no table can read (written by Put before the fix of long row keys; see keycheck.go)",
			"deleted", deleted, "checked", checked, "first_hex", fmt.Sprintf("%.40x", first), "took", time.Since(begin))
	} else if checked > 0 {
		db.logger.Info("checked the cell keys once: all readable", "checked", checked, "took", time.Since(begin))
	}
	return deleted, nil
}

// validCellKey reports whether k is a cell key that a read of its table
// can return: of a table in the catalog, whose escaped row ends, and whose
// family byte is one of the table's families. It decodes the row into
// buf, and returns it for the next call.
func validCellKey(k []byte, fams map[uint32]*famSet, buf []byte) (bool, []byte) {
	if len(k) <= tableLen {
		return false, buf
	}
	fs := fams[binary.BigEndian.Uint32(k[1:tableLen])]
	if fs == nil {
		return false, buf
	}
	buf, _, fam, _, ok := splitCellKey(buf[:0], k[tableLen:])
	if !ok {
		return false, buf
	}
	_, ok = fs.name(fam)
	return ok, buf
}
