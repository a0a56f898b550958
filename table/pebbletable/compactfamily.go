package pebbletable

import (
	"context"
	"fmt"

	"github.com/prom-hbase/prom-hbase/table"
)

var _ table.FamilyCompacter = (*tbl)(nil)

// CompactFamily asks Pebble to flush its memtable, in the background, and
// returns. The families of a row share its key range (keys.go), so Pebble
// has no rewrite of one family alone; what such a rewrite is for on HBase,
// dropping cells that were deleted, is here a matter of the memtable. A
// deletion, range deletions above all, stays there until the memtable fills,
// which on a store with little ingest takes hours, and until then every read
// of the rows it covers merges it with the files below and steps over the
// cells it deletes: the time-series layer's folded raw cells made a streamed
// read of the folded hours cost twice the CPU (BENCHMARKS.md, "The embedded
// store: the sweep flushes"). A flush drops the cells that were written and
// deleted within the memtable, writes the deletions into a file of level 0,
// and Pebble's own compactions, which weigh the bytes range deletions cover,
// drop the rest.
func (t *tbl) CompactFamily(ctx context.Context, family string) error {
	if _, err := t.family(family); err != nil {
		return err
	}
	if err := t.db.enter(ctx); err != nil {
		return err
	}
	defer t.db.exit()
	if _, err := t.db.pdb.AsyncFlush(); err != nil {
		return fmt.Errorf("flush for table %q, family %q: %w", t.name, family, err)
	}
	return nil
}
