package labels2uid

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/prom-hbase/prom-hbase/table"
)

// This file holds what serves readers that enumerate the UID table rather
// than resolve given strings: selectors that name no metric, retention's
// walk over every metric, and caches of the names kept by other packages.

// Counters reads every kind's counter in one Get: each kind's UIDs ever
// handed out, by any process, are at most its counter. A UID at most the
// counter may still lack its mappings (an assignment in flight, or one whose
// writer died).
func (r *Resolver) Counters(ctx context.Context) ([NumKinds]uint64, error) {
	var out [NumKinds]uint64
	rows, err := r.tbl.Get(ctx, FamilyID, [][]byte{counterRow})
	if err != nil {
		return out, fmt.Errorf("read the UID counters: %w", err)
	}
	for kind := range Kind(NumKinds) {
		c := findCell(rows[0], qualifiers[kind])
		if c == nil {
			continue
		}
		if len(c.Value) != 8 {
			return out, fmt.Errorf("%s UID counter of %d bytes, want 8", kind, len(c.Value))
		}
		out[kind] = binary.BigEndian.Uint64(c.Value)
		r.setRemaining(kind, out[kind])
	}
	return out, nil
}

// Assigned reads the kind's counter (see Counters).
func (r *Resolver) Assigned(ctx context.Context, kind Kind) (uint64, error) {
	counters, err := r.Counters(ctx)
	return counters[kind], err
}

// Each scans the forward mappings once and calls fn for each, of every
// kind, in the order of their strings. It stops at fn's first error and
// returns it. Its cost grows with the UID table, not with what fn keeps; the
// mappings are not cached, since a listing would evict the write path's hot
// entries.
func (r *Resolver) Each(ctx context.Context, fn func(kind Kind, name string, uid uint64) error) error {
	sc := r.tbl.Scan(ctx, table.ScanOptions{Start: []byte{1}, Family: FamilyID})
	defer sc.Close()
	for sc.Next() {
		row := sc.At()
		for _, c := range row.Cells {
			kind, ok := kindOf(c.Qualifier)
			if !ok {
				continue
			}
			uid, err := r.decode(kind, c.Value)
			if err != nil {
				return fmt.Errorf("forward mapping of %s %q: %w", kind, row.Key, err)
			}
			if err := fn(kind, string(row.Key), uid); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("list UIDs: %w", err)
	}
	return nil
}

// List returns every string of kind with a UID, and the UIDs (Each); the
// empty string (UID 0) comes first.
func (r *Resolver) List(ctx context.Context, kind Kind) ([]string, []uint64, error) {
	names := []string{""}
	uids := []uint64{0}
	err := r.Each(ctx, func(k Kind, name string, uid uint64) error {
		if k == kind {
			names = append(names, name)
			uids = append(uids, uid)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return names, uids, nil
}

// namesOfBatch bounds the keys of one Get of NamesOf, whose callers may
// list every UID up to a counter.
const namesOfBatch = 1024

// NamesOf returns the strings of those uids of kind that have a reverse
// mapping. Unlike Names, a UID without one is left out, not an error: it is
// for callers that look at UIDs up to a counter (Counters), some of which
// may be in flight or leaked.
func (r *Resolver) NamesOf(ctx context.Context, kind Kind, uids []uint64) (map[uint64]string, error) {
	out := make(map[uint64]string, len(uids))
	var miss []uint64
	for _, uid := range uids {
		if name, ok := r.reverse[kind].get(uid); ok {
			out[uid] = name
		} else {
			miss = append(miss, uid)
		}
	}
	err := r.readNames(ctx, kind, miss, namesOfBatch, func(j int, name string, ok bool) error {
		if ok {
			out[miss[j]] = name
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
