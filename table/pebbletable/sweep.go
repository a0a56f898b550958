package pebbletable

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// sweepBatch bounds how many expired cells one sweep step deletes under its
// row locks.
const sweepBatch = 1024

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
		n, err := db.Sweep(ctx)
		if err != nil && ctx.Err() == nil {
			db.logger.Error("Sweeping expired cells failed", "err", err)
			continue
		}
		db.logger.Debug("Swept expired cells", "deleted", n, "duration", time.Since(start))
	}
}

// Sweep physically deletes the cells that have outlived their family's TTL
// (reads stop seeing them at once; this reclaims their space) and returns how
// many it deleted. The background sweeper calls it every SweepInterval.
func (db *DB) Sweep(ctx context.Context) (int, error) {
	db.sweepMu.Lock()
	defer db.sweepMu.Unlock()
	db.mu.RLock()
	var tables []*tbl
	for _, t := range db.tables {
		for _, ttl := range t.ttls {
			if ttl > 0 {
				tables = append(tables, t)
				break
			}
		}
	}
	db.mu.RUnlock()
	total := 0
	for _, t := range tables {
		n, err := t.sweep(ctx)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (t *tbl) sweep(ctx context.Context) (int, error) {
	if err := t.db.check(ctx); err != nil {
		return 0, err
	}
	now := t.db.nowMillis()
	cutoffs := t.cutoffs(nil, now)
	it, err := t.db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: t.prefix, UpperBound: t.end})
	if err != nil {
		return 0, fmt.Errorf("sweep %q: %w", t.name, err)
	}
	defer it.Close()
	var (
		keys    [][]byte
		stripes stripeSet
		row     []byte
		deleted int
	)
	steps := 0
	for it.First(); it.Valid(); it.Next() {
		if steps++; steps%ctxCheckEvery == 0 {
			if err := t.db.check(ctx); err != nil {
				return deleted, err
			}
		}
		k := it.Key()
		var fam byte
		var ok bool
		row, _, fam, _, ok = splitCellKey(row[:0], k[len(t.prefix):])
		if !ok {
			return deleted, fmt.Errorf("sweep %q: corrupt cell key %q", t.name, k)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return deleted, fmt.Errorf("sweep %q: %w", t.name, err)
		}
		if len(v) < tsLen || cellTimestamp(v) >= cutoffs[fam] {
			continue
		}
		keys = append(keys, bytes.Clone(k))
		stripes |= t.db.locks.stripe(t.id, row)
		if len(keys) == sweepBatch {
			n, err := t.deleteExpired(ctx, keys, stripes, now)
			deleted += n
			if err != nil {
				return deleted, err
			}
			keys, stripes = keys[:0], 0
		}
	}
	if err := it.Error(); err != nil {
		return deleted, fmt.Errorf("sweep %q: %w", t.name, err)
	}
	n, err := t.deleteExpired(ctx, keys, stripes, now)
	return deleted + n, err
}

// deleteExpired deletes the keys that still hold expired cells. The iterator
// that found them reads a snapshot, so each is checked again under its row
// lock: a write since then may have put a fresh cell there.
func (t *tbl) deleteExpired(ctx context.Context, keys [][]byte, stripes stripeSet, now int64) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	if err := t.db.check(ctx); err != nil {
		return 0, err
	}
	b := t.db.pdb.NewBatch()
	defer b.Close()
	t.db.locks.lock(stripes)
	defer t.db.locks.unlock(stripes)
	var row []byte
	for _, k := range keys {
		var fam byte
		row, _, fam, _, _ = splitCellKey(row[:0], k[len(t.prefix):])
		v, closer, err := t.db.pdb.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("sweep %q: %w", t.name, err)
		}
		expired := len(v) >= tsLen && !t.visible(fam, cellTimestamp(v), now)
		_ = closer.Close()
		if !expired {
			continue
		}
		if err := b.Delete(k, nil); err != nil {
			return 0, fmt.Errorf("sweep %q: %w", t.name, err)
		}
	}
	n := int(b.Count())
	// Expired cells are invisible already: losing this batch in a crash loses nothing.
	if err := b.Commit(pebble.NoSync); err != nil {
		return 0, fmt.Errorf("sweep %q: %w", t.name, err)
	}
	return n, nil
}
