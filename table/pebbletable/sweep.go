package pebbletable

// Retention sweep. Pebble has no TTL: reads hide expired cells at once, and
// the sweep deletes them to reclaim their space.
//
// A cell's timestamp lives in its value, so nothing short of reading a cell
// tells whether it expired: Pebble's block-property collectors, which could
// let a scan skip blocks of fresh cells, are handed keys only, and the table
// must not know the row-key layout (where the time-series layer keeps its
// hours). Two things keep the sweep's cost in proportion to what it deletes:
//
//   - Pacing. A table is swept once every TTL/sweepPasses of its shortest TTL
//     (never more often than the sweep interval), not at every interval. A
//     pass then finds about 1/sweepPasses of the table expired, so it reads
//     about sweepPasses+1 cells per cell it deletes, whatever the interval;
//     expired cells keep their space at most TTL/sweepPasses longer.
//   - Range deletions. Expired cells that are consecutive in key order (all
//     the old hours of a series, in the time-series layout) go with one range
//     deletion: later reads step over them at once, and Pebble drops the
//     files they cover without reading them.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

const (
	// sweepPasses is how many sweeps of a table one TTL of it sees.
	sweepPasses = 8
	// sweepBatch bounds how many expired cells one sweep step deletes one by
	// one under its row locks.
	sweepBatch = 1024
	// minRangeRun is the number of consecutive expired cells worth a range
	// deletion rather than as many point deletions.
	minRangeRun = 16
	// maxRangeRun bounds a range deletion: the keys held for it, and how
	// long writers wait while it is checked under every row lock.
	maxRangeRun = 4096
)

// SweepStats counts what sweeps did.
type SweepStats struct {
	Read    int // cells read, including the re-checks before deleting
	Deleted int // cells deleted
	Ranges  int // range deletions among them
}

func (s *SweepStats) add(o SweepStats) {
	s.Read += o.Read
	s.Deleted += o.Deleted
	s.Ranges += o.Ranges
}

func (db *DB) sweepLoop(ctx context.Context, every time.Duration) {
	defer close(db.sweepDone)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		start := time.Now()
		st, err := db.sweepDue(ctx, every)
		if err != nil && ctx.Err() == nil {
			db.logger.Error("Sweeping expired cells failed", "err", err)
			continue
		}
		if st.Read > 0 {
			db.logger.Debug("Swept expired cells", "read", st.Read, "deleted", st.Deleted, "ranges", st.Ranges, "duration", time.Since(start))
		}
	}
}

// Sweep physically deletes, in every table, the cells that have outlived
// their family's TTL (reads stop seeing them at once; this reclaims their
// space) and returns how many it deleted. The background sweeper sweeps
// each table at its own pace instead (see sweepDue).
func (db *DB) Sweep(ctx context.Context) (int, error) {
	db.sweepMu.Lock()
	defer db.sweepMu.Unlock()
	var total SweepStats
	for _, t := range db.sweepable() {
		st, err := t.sweep(ctx)
		total.add(st)
		if err != nil {
			return total.Deleted, err
		}
	}
	return total.Deleted, nil
}

// sweepDue sweeps the tables whose pass is due: the last one began at least
// a sweepPasses-th of their shortest TTL ago, and at least every ago.
func (db *DB) sweepDue(ctx context.Context, every time.Duration) (SweepStats, error) {
	db.sweepMu.Lock()
	defer db.sweepMu.Unlock()
	var total SweepStats
	for _, t := range db.sweepable() {
		now := db.now()
		if !t.lastSweep.IsZero() && now.Sub(t.lastSweep) < max(every, t.minTTL()/sweepPasses) {
			continue
		}
		st, err := t.sweep(ctx)
		total.add(st)
		if err != nil {
			return total, err
		}
		t.lastSweep = now
	}
	return total, nil
}

// sweepable returns the tables with a TTL on any family, but for those
// whose owner deletes their old rows itself (DeleteRows).
func (db *DB) sweepable() []*tbl {
	db.mu.RLock()
	defer db.mu.RUnlock()
	var tables []*tbl
	for _, t := range db.tables {
		if t.minTTL() > 0 && !t.ownerSweeps.Load() {
			tables = append(tables, t)
		}
	}
	return tables
}

// minTTL is the shortest TTL of the table's families (0: none has one).
func (t *tbl) minTTL() time.Duration {
	var m int64
	for i := range t.fams.Load().names {
		if ttl := t.ttls[i].Load(); ttl > 0 && (m == 0 || ttl < m) {
			m = ttl
		}
	}
	return time.Duration(m) * time.Millisecond
}

// sweep reads the table once and deletes its expired cells: runs of
// consecutive ones with a range deletion each, the others one by one.
func (t *tbl) sweep(ctx context.Context) (SweepStats, error) {
	var st SweepStats
	if err := t.db.enter(ctx); err != nil {
		return st, err
	}
	defer t.db.exit()
	now := t.db.nowMillis()
	it, err := t.db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: t.prefix, UpperBound: t.end})
	if err != nil {
		return st, fmt.Errorf("sweep %q: %w", t.name, err)
	}
	defer it.Close()
	// After the iterator, as a scan (see tbl.fams).
	cutoffs := t.cutoffs(nil, t.fams.Load(), now)
	var run, points [][]byte // the current run of expired keys; keys to delete one by one
	flushRun := func() error {
		if len(run) >= minRangeRun {
			rs, ok, err := t.deleteRange(ctx, run[0], run[len(run)-1], now)
			st.add(rs)
			if err != nil || ok {
				run = run[:0]
				return err
			}
		}
		points = append(points, run...)
		run = run[:0]
		if len(points) < sweepBatch {
			return nil
		}
		ps, err := t.deleteExpired(ctx, points, now)
		st.add(ps)
		points = points[:0]
		return err
	}
	var row []byte
	for it.First(); it.Valid(); it.Next() {
		if st.Read++; st.Read%ctxCheckEvery == 0 {
			if err := t.db.check(ctx); err != nil {
				return st, err
			}
		}
		k := it.Key()
		var fam byte
		var ok bool
		row, _, fam, _, ok = splitCellKey(row[:0], k[len(t.prefix):])
		if !ok {
			return st, fmt.Errorf("sweep %q: corrupt cell key %q", t.name, k)
		}
		if int(fam) >= len(cutoffs) {
			return st, fmt.Errorf("sweep %q: %w", t.name, errFamilyByte(k))
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return st, fmt.Errorf("sweep %q: %w", t.name, err)
		}
		expired := len(v) >= tsLen && cellTimestamp(v) < cutoffs[fam]
		if expired {
			run = append(run, bytes.Clone(k))
		}
		if (!expired && len(run) > 0) || len(run) == maxRangeRun {
			if err := flushRun(); err != nil {
				return st, err
			}
		}
	}
	if err := it.Error(); err != nil {
		return st, fmt.Errorf("sweep %q: %w", t.name, err)
	}
	if err := flushRun(); err != nil {
		return st, err
	}
	ps, err := t.deleteExpired(ctx, points, now)
	st.add(ps)
	return st, err
}

// allStripes is every row lock: held, no write can commit.
const allStripes = ^stripeSet(0)

// deleteRange deletes the keys from first to last, both included, with one
// range deletion if every cell between them is still expired. The iterator
// that found them reads a snapshot, and a write since may have put a fresh
// cell anywhere in the range, in a row the sweep has not seen: so the range
// is read again under every row lock, which keeps writes out until the
// deletion is committed. It reports false, having deleted nothing, when the
// range holds a visible cell.
func (t *tbl) deleteRange(ctx context.Context, first, last []byte, now int64) (SweepStats, bool, error) {
	var st SweepStats
	if err := t.db.enter(ctx); err != nil {
		return st, false, err
	}
	defer t.db.exit()
	end := append(bytes.Clone(last), 0) // the first key after last
	t.db.locks.lock(allStripes)
	defer t.db.locks.unlock(allStripes)
	it, err := t.db.pdb.NewIter(&pebble.IterOptions{LowerBound: first, UpperBound: end})
	if err != nil {
		return st, false, fmt.Errorf("sweep %q: %w", t.name, err)
	}
	cutoffs := t.cutoffs(nil, t.fams.Load(), now)
	var row []byte
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
		var fam byte
		row, _, fam, _, _ = splitCellKey(row[:0], it.Key()[len(t.prefix):])
		v, err := it.ValueAndErr()
		if err != nil || len(v) < tsLen || int(fam) >= len(cutoffs) || cellTimestamp(v) >= cutoffs[fam] {
			st.Read += n
			return st, false, errors.Join(err, it.Close())
		}
	}
	st.Read += n
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return st, false, fmt.Errorf("sweep %q: %w", t.name, err)
	}
	b := t.db.pdb.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(first, end, nil); err != nil {
		return st, false, fmt.Errorf("sweep %q: %w", t.name, err)
	}
	// Expired cells are invisible already: losing this batch in a crash loses nothing.
	if err := b.Commit(pebble.NoSync); err != nil {
		return st, false, fmt.Errorf("sweep %q: %w", t.name, err)
	}
	st.Deleted, st.Ranges = n, 1
	return st, true, nil
}

// deleteExpired deletes the keys that still hold expired cells. The iterator
// that found them reads a snapshot, so each is checked again under its row
// lock: a write since then may have put a fresh cell there.
func (t *tbl) deleteExpired(ctx context.Context, keys [][]byte, now int64) (SweepStats, error) {
	var st SweepStats
	if len(keys) == 0 {
		return st, nil
	}
	if err := t.db.enter(ctx); err != nil {
		return st, err
	}
	defer t.db.exit()
	fams := make([]byte, len(keys))
	var stripes stripeSet
	var row []byte
	for i, k := range keys {
		row, _, fams[i], _, _ = splitCellKey(row[:0], k[len(t.prefix):])
		stripes |= t.db.locks.stripe(t.id, row)
	}
	b := t.db.pdb.NewBatch()
	defer b.Close()
	t.db.locks.lock(stripes)
	defer t.db.locks.unlock(stripes)
	for i, k := range keys {
		v, closer, err := t.db.pdb.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			return st, fmt.Errorf("sweep %q: %w", t.name, err)
		}
		st.Read++
		expired := len(v) >= tsLen && !t.visible(fams[i], cellTimestamp(v), now)
		_ = closer.Close()
		if !expired {
			continue
		}
		if err := b.Delete(k, nil); err != nil {
			return st, fmt.Errorf("sweep %q: %w", t.name, err)
		}
	}
	n := int(b.Count())
	// Expired cells are invisible already: losing this batch in a crash loses nothing.
	if err := b.Commit(pebble.NoSync); err != nil {
		return st, fmt.Errorf("sweep %q: %w", t.name, err)
	}
	st.Deleted = n
	return st, nil
}
