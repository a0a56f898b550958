package labels2uid

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/pebbletable"
	"github.com/prom-hbase/prom-hbase/table/testdb"
)

func openPebble(tb testing.TB) (table.DB, string) { return testdb.Pebble(tb) }

func forEachBackend(t *testing.T, f func(t *testing.T, db table.DB, prefix string)) {
	testdb.ForEach(t, "labels2uid", f)
}

func uidTable(t testing.TB, db table.DB, name string) table.Table {
	t.Helper()
	tbl, err := table.EnsureTable(context.Background(), db, table.TableSpec{
		Name:     name,
		Families: []table.FamilySpec{{Name: FamilyID}, {Name: FamilyName}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func newResolver(t *testing.T, tbl table.Table, cfg Config) *Resolver {
	t.Helper()
	r, err := New(context.Background(), tbl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGetOrAssign(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		tbl := uidTable(t, db, prefix+"uid")
		reg := prometheus.NewPedanticRegistry()
		r := newResolver(t, tbl, Config{Registerer: reg})

		var b Batch
		b.Add(Metric, "up")
		b.Add(Metric, "http_requests_total")
		b.Add(TagK, "job")
		b.Add(TagK, "instance")
		b.Add(TagV, "job") // same string as a tag key: its own UID space
		b.Add(TagV, "héllo wörld ☃")
		b.Add(TagV, "")
		b.Add(Metric, "up") // duplicate within the batch
		if err := r.GetOrAssign(ctx, &b); err != nil {
			t.Fatal(err)
		}
		// Assignment runs concurrently, so which string gets which UID is
		// open; that each kind numbers its strings 1..n is not.
		want := [NumKinds]string{"[1 2 1]", "[1 2]", "[1 2 0]"}
		alt := [NumKinds]string{"[2 1 2]", "[2 1]", "[2 1 0]"}
		for k := range NumKinds {
			if got := fmt.Sprint(b.UIDs[k]); got != want[k] && got != alt[k] {
				t.Errorf("%s UIDs = %v, want %v or %v", Kind(k), got, want[k], alt[k])
			}
		}
		uidOf := func(k Kind, i int) uint64 { return b.UIDs[k][i] }
		smiley, metric2 := uidOf(TagV, 1), uidOf(Metric, 1)
		jobV := uidOf(TagV, 0)

		if got := testutil.ToFloat64(r.assigned.WithLabelValues("tagv")); got != 2 {
			t.Errorf("tagv assignments = %v, want 2", got)
		}
		if got := testutil.ToFloat64(r.remaining.WithLabelValues("tagk")); got != 1<<24-1-2 {
			t.Errorf("tagk UIDs remaining = %v, want %d", got, 1<<24-1-2)
		}
		if n, err := testutil.GatherAndCount(reg, "promhbase_uid_cache_misses_total"); err != nil || n != 6 {
			t.Errorf("cache miss series = %d, %v; want 6", n, err)
		}

		// A second resolver with cold caches sees the same mappings.
		r2 := newResolver(t, tbl, Config{})
		var b2 Batch
		b2.Add(TagV, "héllo wörld ☃")
		b2.Add(TagV, "unknown")
		b2.Add(Metric, "http_requests_total")
		if err := r2.Lookup(ctx, &b2); err != nil {
			t.Fatal(err)
		}
		if b2.UIDs[TagV][0] != smiley || !b2.Found[TagV][0] || b2.Found[TagV][1] || b2.UIDs[Metric][0] != metric2 {
			t.Errorf("lookup: uids %v found %v", b2.UIDs, b2.Found)
		}
		names, err := r2.Names(ctx, TagV, []uint64{smiley, 0, jobV}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(names, ",") != "héllo wörld ☃,,job" {
			t.Errorf("reverse names = %q", names)
		}
		if _, err := r2.Names(ctx, TagK, []uint64{99}, nil); err == nil {
			t.Error("reverse lookup of an unassigned UID succeeded")
		}
		list, uids, err := r2.List(ctx, Metric)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(list, uids) != fmt.Sprint([]string{"", "http_requests_total", "up"}, []uint64{0, metric2, uidOf(Metric, 0)}) {
			t.Errorf("List(Metric) = %q %v", list, uids)
		}

		// Assigning the rest reuses nothing already assigned.
		b2.Reset()
		b2.Add(TagV, "unknown")
		if err := r2.GetOrAssign(ctx, &b2); err != nil {
			t.Fatal(err)
		}
		if b2.UIDs[TagV][0] != 3 {
			t.Errorf("next tagv UID = %d, want 3", b2.UIDs[TagV][0])
		}
	})
}

func TestReserved(t *testing.T) {
	db, _ := openPebble(t)
	r := newResolver(t, uidTable(t, db, "uid"), Config{})
	var b Batch
	b.Add(TagV, "\x00schema")
	if err := r.GetOrAssign(context.Background(), &b); !errors.Is(err, ErrReserved) {
		t.Fatalf("err = %v, want ErrReserved", err)
	}
}

func TestExhausted(t *testing.T) {
	db, _ := openPebble(t)
	ctx := context.Background()
	reg := prometheus.NewPedanticRegistry()
	r := newResolver(t, uidTable(t, db, "uid"), Config{Widths: Widths{3, 3, 1}, Registerer: reg})
	var b Batch
	for i := range 250 {
		b.Add(TagV, fmt.Sprint("v", i))
	}
	if err := r.GetOrAssign(ctx, &b); err != nil {
		t.Fatal(err)
	}
	// 5 UIDs are left for 10 new strings: 5 are assigned, 5 refused, and
	// the call itself succeeds so that the caller can write the rest.
	b.Reset()
	for i := range 10 {
		b.Add(TagV, fmt.Sprint("late", i))
	}
	b.Add(TagV, "v3") // known already
	if err := r.GetOrAssign(ctx, &b); err != nil {
		t.Fatal(err)
	}
	var got, refused int
	for i := range b.Names[TagV] {
		if b.Exhausted(TagV, i) {
			refused++
			continue
		}
		got++
		if b.UIDs[TagV][i] == 0 || b.UIDs[TagV][i] > 255 {
			t.Errorf("%q got UID %d", b.Names[TagV][i], b.UIDs[TagV][i])
		}
	}
	if got != 6 || refused != 5 {
		t.Errorf("%d strings got UIDs and %d were refused, want 6 and 5", got, refused)
	}
	err := r.ExhaustedError(TagV)
	if !errors.Is(err, ErrExhausted) || !strings.Contains(err.Error(), "all 1-byte tagv UIDs are assigned") {
		t.Errorf("ExhaustedError = %v", err)
	}
	if v := testutil.ToFloat64(r.remaining.WithLabelValues("tagv")); v != 0 {
		t.Errorf("tagv UIDs remaining = %v, want 0", v)
	}
	if v := testutil.ToFloat64(r.wasted.WithLabelValues("tagv")); v != 5 {
		t.Errorf("tagv UIDs wasted = %v, want 5 (reserved beyond the width)", v)
	}
	// The other kinds are unaffected.
	b.Reset()
	b.Add(TagK, "k")
	if err := r.GetOrAssign(ctx, &b); err != nil || b.Exhausted(TagK, 0) {
		t.Fatal(err, b.Found)
	}
}

func TestWidthMismatch(t *testing.T) {
	db, _ := openPebble(t)
	ctx := context.Background()
	tbl := uidTable(t, db, "uid")
	var b Batch
	b.Add(TagV, "x")
	if err := newResolver(t, tbl, Config{}).GetOrAssign(ctx, &b); err != nil {
		t.Fatal(err)
	}
	err := newResolver(t, tbl, Config{Widths: Widths{3, 3, 3}}).Lookup(ctx, &b)
	if err == nil || !strings.Contains(err.Error(), "width") {
		t.Fatalf("err = %v, want a width mismatch", err)
	}
}

func TestCacheBounded(t *testing.T) {
	c := newCache[string, uint64](64, hashString)
	for i := range 10000 {
		c.put(fmt.Sprint(i), uint64(i))
	}
	if n := c.len(); n > 64 {
		t.Fatalf("cache holds %d entries, bound 64", n)
	}
	c.put("x", 7)
	if v, ok := c.get("x"); !ok || v != 7 {
		t.Fatalf("get after put = %d, %v", v, ok)
	}
}

// TestConcurrentAssign runs several resolvers, each with its own caches as
// separate processes would have, assigning the same new strings at once.
func TestConcurrentAssign(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		const resolvers = 4
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
		got := make([][]uint64, resolvers)
		var wg sync.WaitGroup
		errs := make(chan error, resolvers)
		for i := range resolvers {
			r := newResolver(t, tbl, Config{})
			wg.Go(func() {
				// Each resolver asks in batches of 500, in its own order.
				for lo := 0; lo < strs; lo += 500 {
					var b Batch
					for j := lo; j < lo+500; j++ {
						b.Add(TagV, names[(j+i*strs/4)%strs])
					}
					if err := r.GetOrAssign(ctx, &b); err != nil {
						errs <- err
						return
					}
					for j, name := range b.Names[TagV] {
						_ = name
						got[i] = append(got[i], b.UIDs[TagV][j])
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
		for i := range resolvers {
			for j, uid := range got[i] {
				name := names[(j+i*strs/4)%strs]
				if prev, ok := byName[name]; ok && prev != uid {
					t.Fatalf("%q got UIDs %d and %d", name, prev, uid)
				}
				byName[name] = uid
			}
		}
		checkConsistent(t, tbl, TagV, byName)
	})
}

// checkConsistent checks that the forward mappings are exactly want, that
// every forward mapping has its reverse one, and that no reverse mapping
// exists without its forward one.
func checkConsistent(t *testing.T, tbl table.Table, kind Kind, want map[string]uint64) {
	t.Helper()
	ctx := context.Background()
	forward := map[string][]byte{}
	sc := tbl.Scan(ctx, table.ScanOptions{Start: []byte{1}, Family: FamilyID})
	for sc.Next() {
		if c := findCell(sc.At(), qualifiers[kind]); c != nil {
			forward[string(sc.At().Key)] = bytes.Clone(c.Value)
		}
	}
	if err := sc.Close(); err != nil || sc.Err() != nil {
		t.Fatal(err, sc.Err())
	}
	if len(forward) != len(want) {
		t.Errorf("%d forward mappings, want %d", len(forward), len(want))
	}
	seen := map[uint64]string{}
	for name, uid := range want {
		if got := DecodeUID(forward[name]); got != uid {
			t.Errorf("forward %q = %d, want %d", name, got, uid)
		}
		if other, dup := seen[uid]; dup {
			t.Errorf("UID %d given to %q and %q", uid, other, name)
		}
		seen[uid] = name
	}
	reverse := 0
	sc = tbl.Scan(ctx, table.ScanOptions{Family: FamilyName})
	for sc.Next() {
		c := findCell(sc.At(), qualifiers[kind])
		if c == nil {
			continue
		}
		reverse++
		uid := DecodeUID(sc.At().Key)
		if name := string(c.Value); seen[uid] != name {
			t.Errorf("reverse %d = %q has no matching forward mapping (forward of %q is %d)", uid, name, name, want[name])
		}
	}
	if err := sc.Close(); err != nil || sc.Err() != nil {
		t.Fatal(err, sc.Err())
	}
	if reverse != len(want) {
		t.Errorf("%d reverse mappings, want %d", reverse, len(want))
	}
}

// cachedNames is a resolver with 1,000 tag values in its cache, and them.
func cachedNames(b *testing.B) (*Resolver, []string) {
	db, err := pebbletable.Open(b.TempDir(), pebbletable.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	tbl, err := table.EnsureTable(context.Background(), db, table.TableSpec{Name: "uid", Families: []table.FamilySpec{{Name: FamilyID}, {Name: FamilyName}}})
	if err != nil {
		b.Fatal(err)
	}
	r, err := New(context.Background(), tbl, Config{})
	if err != nil {
		b.Fatal(err)
	}
	var batch Batch
	for i := range 1000 {
		batch.Add(TagV, fmt.Sprint("value-", i))
	}
	if err := r.GetOrAssign(context.Background(), &batch); err != nil {
		b.Fatal(err)
	}
	return r, batch.Names[TagV]
}

func BenchmarkCached(b *testing.B) {
	r, names := cachedNames(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := r.Cached(TagV, names[i%len(names)]); !ok {
			b.Fatal("miss")
		}
	}
}

// BenchmarkCachedParallel: lookups from every core at once, as concurrent
// writes make them. On the build machine's 2 cores (2026-11-27) 20-25 ns an
// operation, no faster than one core's: each lookup writes its shard's lock
// and hit counter (three atomic additions), and the lookups of one label
// name from every write meet in one shard. A build without the hit counter
// was no faster there (20-46 ns).
func BenchmarkCachedParallel(b *testing.B) {
	r, names := cachedNames(b)
	b.RunParallel(func(pb *testing.PB) {
		for i := 0; pb.Next(); i++ {
			if _, ok := r.Cached(TagV, names[i%len(names)]); !ok {
				b.Fatal("miss")
			}
		}
	})
}
