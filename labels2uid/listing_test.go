package labels2uid

import (
	"context"
	"fmt"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

// TestListing: Counters, Each and NamesOf see what another resolver
// assigned, and NamesOf leaves out a counted UID whose mappings are not
// written (an assignment in flight) instead of failing.
func TestListing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		tbl := uidTable(t, db, prefix+"listing")
		writer := newResolver(t, tbl, Config{})
		var b Batch
		b.Add(Metric, "up")
		b.Add(Metric, "a_total")
		b.Add(TagK, "job")
		b.Add(TagV, "node")
		if err := writer.GetOrAssign(ctx, &b); err != nil {
			t.Fatal(err)
		}
		// A metric UID counted but never mapped.
		if _, err := tbl.Increment(ctx, counterRow, FamilyID, qualifiers[Metric], 1); err != nil {
			t.Fatal(err)
		}

		r := newResolver(t, tbl, Config{})
		counters, err := r.Counters(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if counters != [NumKinds]uint64{3, 1, 1} {
			t.Errorf("Counters = %v, want [3 1 1]", counters)
		}
		var seen []string
		err = r.Each(ctx, func(kind Kind, name string, uid uint64) error {
			seen = append(seen, fmt.Sprintf("%s:%s=%d", kind, name, uid))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("[metrics:a_total=%d tagk:job=1 tagv:node=1 metrics:up=%d]", b.UIDs[Metric][1], b.UIDs[Metric][0])
		if fmt.Sprint(seen) != want {
			t.Errorf("Each saw %v, want %v", seen, want)
		}
		names, err := r.NamesOf(ctx, Metric, []uint64{1, 2, 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 2 || names[b.UIDs[Metric][0]] != "up" || names[b.UIDs[Metric][1]] != "a_total" {
			t.Errorf("NamesOf(1, 2, 3) = %v, want up and a_total, UID 3 left out", names)
		}
	})
}

// TestReadNamesBatches: Names (one Get) and NamesOf (batches) of more UIDs
// than one of NamesOf's Gets reads, on a cold reverse cache, get every name
// in order; a UID without a mapping after the first batch fails Names and
// is left out of NamesOf.
func TestReadNamesBatches(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		tbl := uidTable(t, db, prefix+"readnames")
		writer := newResolver(t, tbl, Config{})
		n := namesOfBatch + namesOfBatch/2
		var b Batch
		for i := range n {
			b.Add(TagV, fmt.Sprintf("value-%05d", i))
		}
		if err := writer.GetOrAssign(ctx, &b); err != nil {
			t.Fatal(err)
		}
		uids := b.UIDs[TagV]

		names, err := newResolver(t, tbl, Config{}).Names(ctx, TagV, uids, []string{"kept"})
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != n+1 || names[0] != "kept" {
			t.Fatalf("Names gave %d names after %q, want %d after \"kept\"", len(names)-1, names[0], n)
		}
		for i, name := range names[1:] {
			if want := fmt.Sprintf("value-%05d", i); name != want {
				t.Fatalf("Names[%d] = %q, want %q", i, name, want)
			}
		}

		unmapped := uint64(n + 10) // beyond the counter: never mapped
		withGap := append(append([]uint64(nil), uids...), unmapped)
		if _, err := newResolver(t, tbl, Config{}).Names(ctx, TagV, withGap, nil); err == nil {
			t.Error("Names of an unmapped UID in the second batch succeeded, want an error")
		}
		got, err := newResolver(t, tbl, Config{}).NamesOf(ctx, TagV, withGap)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Errorf("NamesOf gave %d names, want %d (the unmapped UID left out)", len(got), n)
		}
		if name := got[uids[n-1]]; name != fmt.Sprintf("value-%05d", n-1) {
			t.Errorf("NamesOf's last name %q, want value-%05d", name, n-1)
		}
	})
}
