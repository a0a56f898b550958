package store

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

// leaseCellOf reads the lease cell of a compaction table row (nil: none).
func leaseCellOf(t *testing.T, tb table.Table, row []byte) *table.Cell {
	t.Helper()
	rows, err := tb.Get(context.Background(), familyCompact, [][]byte{row})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rows[0].Cells {
		if string(c.Qualifier) == string(leaseQualifier) {
			return &c
		}
	}
	return nil
}

// TestLease: one holder at a time; a takeover only after expiry; the former
// holder can neither renew nor release its successor's lease.
func TestLease(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix})
		tb := s.todo.t
		clock := &testClock{}
		row := todoKey(3600, 0)
		a, b := newProcessID(), newProcessID()
		const dur = 10 * time.Second

		la, err := takeLease(ctx, tb, row, nil, a, dur, clock.now)
		if err != nil || la == nil {
			t.Fatalf("first take: %v, %v", la, err)
		}
		if l, err := takeLease(ctx, tb, row, nil, b, dur, clock.now); err != nil || l != nil {
			t.Fatalf("second take expecting absent: %v, %v", l, err)
		}
		cur := leaseCellOf(t, tb, row)
		if l, err := takeLease(ctx, tb, row, cur, b, dur, clock.now); err != nil || l != nil {
			t.Fatalf("take of an unexpired lease: %v, %v", l, err)
		}
		// Half used: guard renews it.
		clock.advance(6 * time.Second)
		gctx, cancel, err := la.guard(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := gctx.Deadline(); !ok || time.Until(d) > dur-dur/4+time.Second {
			t.Errorf("guarded call deadline %v, want about %v away", d, dur-dur/4)
		}
		cancel()
		// Expired: b takes over; a can no longer renew or write.
		clock.advance(dur + time.Second)
		cur = leaseCellOf(t, tb, row)
		lb, err := takeLease(ctx, tb, row, cur, b, dur, clock.now)
		if err != nil || lb == nil {
			t.Fatalf("takeover: %v, %v", lb, err)
		}
		if lb.ts <= cur.Timestamp {
			t.Errorf("takeover version %d not after %d", lb.ts, cur.Timestamp)
		}
		if _, _, err := la.guard(ctx); !errors.Is(err, errLeaseLost) {
			t.Errorf("guard of the expired lease: %v", err)
		}
		la.exp = clock.now().Add(dur) // even believing itself in time
		if err := la.renew(ctx, clock.now()); !errors.Is(err, errLeaseLost) {
			t.Errorf("renew of a lease taken over: %v", err)
		}
		if err := la.release(ctx); err != nil {
			t.Fatal(err)
		}
		if c := leaseCellOf(t, tb, row); c == nil || !heldByID(c.Value, b) {
			t.Fatalf("the former holder's release removed its successor's lease: %v", c)
		}
		if err := lb.release(ctx); err != nil {
			t.Fatal(err)
		}
		if c := leaseCellOf(t, tb, row); c != nil {
			t.Fatalf("lease left after release: %x", c.Value)
		}
		if l, err := takeLease(ctx, tb, row, nil, a, dur, clock.now); err != nil || l == nil {
			t.Fatalf("take after release: %v, %v", l, err)
		}
	})
}

func heldByID(v []byte, id [idLen]byte) bool {
	h, _, ok := parseLease(v)
	return ok && h == id
}

// TestNoteDirty: a process marks a (bucket, metric, hour) once per
// MarkRefresh, and again after it.
func TestNoteDirty(t *testing.T) {
	db, _ := openPebble(t)
	ctx := context.Background()
	s, clock := clockedStore(t, db, Config{})
	// marks maps each mark (row and qualifier) to its version.
	marks := func() map[string]int64 {
		rows, err := scanPage(ctx, s.todo.t, table.ScanOptions{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, r := range rows {
			for _, c := range r.Cells {
				out[string(r.Key)+"/"+string(c.Qualifier)] = c.Timestamp
			}
		}
		return out
	}
	h := (time.Now().UnixMilli() / hour) * hour
	write := func(t0 int64, names ...string) {
		var b []SeriesIn
		for _, n := range names {
			b = append(b, SeriesIn{Labels: lbls("__name__", n, "job", "x"), Samples: []Sample{{T: t0, V: 1}, {T: t0 + 1, V: 2}}})
		}
		if err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	write(h, "a", "b")
	first := marks()
	if len(first) != 2 {
		t.Fatalf("%d marks after writing two metrics, want 2", len(first))
	}
	write(h+5, "a", "b")
	if again := marks(); !maps.Equal(again, first) {
		t.Fatalf("trusted marks written again: %v, before %v", again, first)
	}
	write(h-hour, "a")
	if n := len(marks()); n != 3 {
		t.Fatalf("%d marks after another hour, want 3", n)
	}
	clock.advance(MarkRefresh)
	write(h+10, "a", "b")
	refreshed := marks()
	for k, ts := range first {
		if refreshed[k] <= ts {
			t.Errorf("mark %x not refreshed after MarkRefresh: version %d, was %d", k, refreshed[k], ts)
		}
	}
}
