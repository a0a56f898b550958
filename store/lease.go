package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

// A lease is one compactor's claim on a bucket-hour: the cell "lease" of
// its compaction table row, holding the holder's ID and the lease's expiry
// (the holder's clock), taken and renewed with CheckAndPut so that at most
// one compactor holds it. A lease that expired may be taken over by anyone;
// its holder stops writing before that can happen: every destructive call
// it makes ends, by its context's deadline, a skew margin before the expiry
// (a quarter of the lease), and it renews the lease once half of it is
// used. Clocks of compactors must agree to within that margin.
//
// The lease cell keeps one timestamp from its taking to its release:
// renewals overwrite that version, the release deletes exactly it, and a
// takeover writes a later one, so a late release by a former holder never
// removes its successor's lease.
type lease struct {
	t     table.Table
	row   []byte
	id    [idLen]byte
	dur   time.Duration
	now   func() time.Time
	value []byte // what the cell holds while we hold it
	ts    int64
	exp   time.Time
}

// errLeaseLost ends work on a bucket-hour whose lease another compactor
// took, or that could not be renewed in time.
var errLeaseLost = errors.New("compaction lease lost")

func leaseValue(id [idLen]byte, exp time.Time) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, idLen+8), id[:]...), uint64(exp.UnixMilli()))
}

// parseLease reads a lease cell's value; ok is false for a value of another
// shape, which anyone may overwrite.
func parseLease(v []byte) (holder [idLen]byte, exp time.Time, ok bool) {
	if len(v) != idLen+8 {
		return holder, time.Time{}, false
	}
	copy(holder[:], v)
	return holder, time.UnixMilli(int64(binary.BigEndian.Uint64(v[idLen:]))), true
}

// takeLease tries to take the lease of a compaction table row whose lease
// cell, as last read, is cur (nil when absent). It returns nil, nil when
// another compactor holds an unexpired lease or won the race for it.
func takeLease(ctx context.Context, t table.Table, row []byte, cur *table.Cell, id [idLen]byte, dur time.Duration, now func() time.Time) (*lease, error) {
	n := now()
	var expected []byte
	ts := n.UnixMilli()
	if cur != nil {
		if _, exp, ok := parseLease(cur.Value); ok && n.Before(exp) {
			return nil, nil
		}
		expected = cur.Value
		ts = max(ts, cur.Timestamp+1)
	}
	l := &lease{t: t, row: row, id: id, dur: dur, now: now, ts: ts, exp: n.Add(dur)}
	l.value = leaseValue(id, l.exp)
	ok, err := t.CheckAndPut(ctx, row, familyCompact, leaseQualifier, expected, []table.Cell{l.cell()})
	if err != nil {
		return nil, fmt.Errorf("take compaction lease of %x: %w", row, err)
	}
	if !ok {
		return nil, nil
	}
	return l, nil
}

func (l *lease) cell() table.Cell {
	return table.Cell{Row: l.row, Family: familyCompact, Qualifier: leaseQualifier, Timestamp: l.ts, Value: l.value}
}

// margin is how long before the expiry its holder stops writing: it covers
// clock skew between compactors and a call that lands late.
func (l *lease) margin() time.Duration { return l.dur / 4 }

// guard returns a context for one destructive call: it renews the lease
// once half of it is used and ends the call a margin before the expiry. It
// fails with errLeaseLost when the lease cannot be kept.
func (l *lease) guard(ctx context.Context) (context.Context, context.CancelFunc, error) {
	n := l.now()
	if l.exp.Sub(n) < l.dur/2 {
		if err := l.renew(ctx, n); err != nil {
			return nil, nil, err
		}
		// The renewal took time of its own: the call has what is left
		// after it, not what was left before.
		n = l.now()
	}
	deadline := l.exp.Add(-l.margin())
	if !n.Before(deadline) {
		return nil, nil, errLeaseLost
	}
	// The deadline is on the lease's clock; the context runs on the real
	// one, so only the time left carries over.
	c, cancel := context.WithTimeout(ctx, deadline.Sub(n))
	return c, cancel, nil
}

// renew extends the lease, if we still hold it and it has not expired.
func (l *lease) renew(ctx context.Context, n time.Time) error {
	if !n.Before(l.exp.Add(-l.margin())) {
		return errLeaseLost
	}
	exp := n.Add(l.dur)
	value := leaseValue(l.id, exp)
	next := *l
	next.value = value
	ok, err := l.t.CheckAndPut(ctx, l.row, familyCompact, leaseQualifier, l.value, []table.Cell{next.cell()})
	if err != nil {
		return fmt.Errorf("renew compaction lease of %x: %w", l.row, err)
	}
	if !ok {
		return errLeaseLost
	}
	l.value, l.exp = value, exp
	return nil
}

// release gives the lease up by deleting exactly the version we wrote.
func (l *lease) release(ctx context.Context) error {
	if err := l.t.DeleteVersions(ctx, []table.Cell{l.cell()}); err != nil {
		return fmt.Errorf("release compaction lease of %x: %w", l.row, err)
	}
	return nil
}
