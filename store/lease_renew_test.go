package store

import (
	"context"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
)

// slowTable makes every CheckAndPut (a lease renewal) take `took` on the
// test clock, as a slow region server would.
type slowTable struct {
	table.Table
	clock *testClock
	took  time.Duration
}

func (t *slowTable) CheckAndPut(ctx context.Context, row []byte, family string, qualifier, expected []byte, put []table.Cell) (bool, error) {
	ok, err := t.Table.CheckAndPut(ctx, row, family, qualifier, expected, put)
	t.clock.advance(t.took)
	return ok, err
}

// TestLeaseGuardAfterSlowRenewal: guard renews the lease, then gives the
// destructive call the time left to the lease's expiry less the margin,
// counted from after the renewal. Counted from before it (as it once was),
// a renewal that took longer than the margin let the call run past the
// expiry, where another compactor may take the lease over.
func TestLeaseGuardAfterSlowRenewal(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix})
		clock := &testClock{}
		const dur = 4 * time.Second
		st := &slowTable{Table: s.todo.t, clock: clock}
		l, err := takeLease(ctx, st, todoKey(3600, 0), nil, newProcessID(), dur, clock.now)
		if err != nil || l == nil {
			t.Fatalf("take: %v, %v", l, err)
		}
		clock.advance(dur/2 + 100*time.Millisecond) // guard renews
		st.took = dur / 2                           // the renewal takes 2 s, more than the 1 s margin
		gctx, cancel, err := l.guard(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer cancel()
		d, _ := gctx.Deadline()
		// The call's deadline on the lease's clock.
		callEnd := clock.now().Add(time.Until(d))
		if limit := l.exp.Add(-l.margin()); callEnd.After(limit.Add(100 * time.Millisecond)) {
			t.Fatalf("the guarded call may run until %v past the lease's expiry (lease expires at +%v, the call ends at +%v; want it to end a margin, %v, before)",
				callEnd.Sub(l.exp).Round(time.Millisecond), l.exp.Sub(clock.now()).Round(time.Millisecond), callEnd.Sub(clock.now()).Round(time.Millisecond), l.margin())
		}
	})
}
