package labels2uid

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/tablefault"
)

// retriedTable applies every conditional put twice and answers with the
// second outcome: what a client sees when the reply of its first attempt was
// lost, it retried, and the first attempt had in fact been applied.
type retriedTable struct{ table.Table }

func (t retriedTable) CheckAndPut(ctx context.Context, row []byte, family string, qualifier, expected []byte, put []table.Cell) (bool, error) {
	if _, err := t.Table.CheckAndPut(ctx, row, family, qualifier, expected, put); err != nil {
		return false, err
	}
	return t.Table.CheckAndPut(ctx, row, family, qualifier, expected, put)
}

func (t retriedTable) CheckAndPutBatch(ctx context.Context, puts []table.CondPut) ([]bool, error) {
	if _, err := t.Table.CheckAndPutBatch(ctx, puts); err != nil {
		return nil, err
	}
	return t.Table.CheckAndPutBatch(ctx, puts)
}

// TestRetryAfterAppliedWrite is the data-loss regression of issue 10: a
// retried forward write that finds its own value was taken as a lost race,
// and the loser path deleted the reverse mapping of the UID that won.
func TestRetryAfterAppliedWrite(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		tbl := uidTable(t, db, prefix+"uid")
		r := newResolver(t, retriedTable{tbl}, Config{})
		var b Batch
		want := map[string]uint64{}
		for i := range 50 {
			b.Add(TagV, fmt.Sprint("value-", i))
		}
		if err := r.GetOrAssign(ctx, &b); err != nil {
			t.Fatal(err)
		}
		for i, name := range b.Names[TagV] {
			want[name] = b.UIDs[TagV][i]
		}
		checkConsistent(t, tbl, TagV, want)
		// A process with cold caches resolves every UID back to its string.
		cold := newResolver(t, tbl, Config{})
		uids := make([]uint64, 0, len(want))
		for _, uid := range want {
			uids = append(uids, uid)
		}
		if _, err := cold.Names(ctx, TagV, uids, nil); err != nil {
			t.Fatalf("after retried writes: %v", err)
		}
		if v := testutil.ToFloat64(r.wasted.WithLabelValues("tagv")); v != 0 {
			t.Errorf("wasted = %v, want 0: a retry that finds its own value has won", v)
		}
	})
}

// TestConcurrentAssignWithFaults races four resolvers, each with its own
// caches and its own faulty view of one UID table, to assign the same
// strings, every caller retrying until it succeeds as Prometheus resends a
// batch answered 503. Then: one UID per string, no UID given twice, every
// forward mapping resolvable back, and only unused UIDs without one.
func TestConcurrentAssignWithFaults(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		const resolvers, batch = 4, 1000
		strs := 10000
		if testing.Short() {
			strs = 2000
		}
		ctx := context.Background()
		tbl := uidTable(t, db, prefix+"uid")
		names := make([]string, strs)
		for i := range names {
			names[i] = fmt.Sprintf("pod-%05d", i)
		}
		got := make([]map[string]uint64, resolvers)
		faulty := make([]*tablefault.DB, resolvers)
		rs := make([]*Resolver, resolvers)
		var wg sync.WaitGroup
		errs := make(chan error, resolvers)
		for i := range resolvers {
			faulty[i] = tablefault.Wrap(db, tablefault.Config{Seed: uint64(i)})
			ft, err := faulty[i].Table(ctx, prefix+"uid")
			if err != nil {
				t.Fatal(err)
			}
			rs[i] = newResolver(t, ft, Config{})
			faulty[i].SetRate(0.2) // after New, which reads the counters
			got[i] = map[string]uint64{}
			wg.Go(func() {
				for lo := 0; lo < strs; lo += batch {
					var b Batch
					for j := lo; j < lo+batch; j++ {
						b.Add(TagV, names[(j+i*strs/resolvers)%strs])
					}
					if err := retry(ctx, rs[i], &b); err != nil {
						errs <- err
						return
					}
					for j, name := range b.Names[TagV] {
						got[i][name] = b.UIDs[TagV][j]
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		byName := map[string]uint64{}
		var injected int64
		for i := range resolvers {
			injected += faulty[i].Injected()
			for name, uid := range got[i] {
				if prev, ok := byName[name]; ok && prev != uid {
					t.Fatalf("%q got UIDs %d and %d", name, prev, uid)
				}
				byName[name] = uid
			}
		}
		if injected == 0 {
			t.Fatal("no fault was injected: the test tests nothing")
		}
		if len(byName) != strs {
			t.Fatalf("%d strings resolved, want %d", len(byName), strs)
		}
		checkResolvable(t, tbl, TagV, byName)
		wasted := 0.0
		for _, r := range rs {
			wasted += testutil.ToFloat64(r.wasted.WithLabelValues("tagv"))
		}
		t.Logf("%d strings, %v UIDs counted as wasted in races", strs, wasted)
	})
}

// retry calls GetOrAssign until it succeeds, as a sender resends a batch.
func retry(ctx context.Context, r *Resolver, b *Batch) error {
	var err error
	for range 100 {
		if err = r.GetOrAssign(ctx, b); err == nil {
			return nil
		}
		if !errors.Is(err, tablefault.ErrInjected) {
			return err
		}
	}
	return fmt.Errorf("still failing after 100 attempts: %w", err)
}

// checkResolvable checks that the forward mappings are exactly want and
// that a process with cold caches resolves each UID back to its string. A
// reverse row without a forward one may remain from a failed attempt; it
// must name a UID that no forward row uses.
func checkResolvable(t *testing.T, tbl table.Table, kind Kind, want map[string]uint64) {
	t.Helper()
	ctx := context.Background()
	cold, err := New(ctx, tbl, Config{})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	uids := make([]uint64, 0, len(want))
	for name, uid := range want {
		b.Add(kind, name)
		uids = append(uids, uid)
	}
	if err := cold.Lookup(ctx, &b); err != nil {
		t.Fatal(err)
	}
	used := map[uint64]bool{}
	for i, name := range b.Names[kind] {
		if !b.Found[kind][i] || b.UIDs[kind][i] != want[name] {
			t.Fatalf("forward %q = %d (found %v), want %d", name, b.UIDs[kind][i], b.Found[kind][i], want[name])
		}
		if used[want[name]] {
			t.Fatalf("UID %d used twice", want[name])
		}
		used[want[name]] = true
	}
	back, err := cold.Names(ctx, kind, uids, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, uid := range uids {
		if want[back[i]] != uid {
			t.Fatalf("reverse %d = %q, whose forward UID is %d", uid, back[i], want[back[i]])
		}
	}
	sc := tbl.Scan(ctx, table.ScanOptions{Family: FamilyName})
	defer sc.Close()
	for sc.Next() {
		if c := findCell(sc.At(), qualifiers[kind]); c != nil {
			uid := DecodeUID(sc.At().Key)
			if fwd, ok := want[string(c.Value)]; ok && fwd != uid && used[uid] {
				t.Fatalf("reverse %d = %q, but UID %d belongs to another string", uid, c.Value, uid)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}
