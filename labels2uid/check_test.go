package labels2uid

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

// assignAll gives every string of names (kind per string) a UID and returns
// them in order.
func assignAll(t *testing.T, r *Resolver, kind Kind, names ...string) []uint64 {
	t.Helper()
	var b Batch
	for _, n := range names {
		b.Add(kind, n)
	}
	if err := r.GetOrAssign(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return append([]uint64(nil), b.UIDs[kind]...)
}

func put(t *testing.T, tbl table.Table, row []byte, family string, kind Kind, value []byte) {
	t.Helper()
	if err := tbl.Put(context.Background(), []table.Cell{{Row: row, Family: family, Qualifier: qualifiers[kind], Timestamp: table.LatestTimestamp, Value: value}}); err != nil {
		t.Fatal(err)
	}
}

func del(t *testing.T, tbl table.Table, row []byte, family string, kind Kind) {
	t.Helper()
	if err := tbl.Delete(context.Background(), []table.Cell{{Row: row, Family: family, Qualifier: qualifiers[kind]}}); err != nil {
		t.Fatal(err)
	}
}

func check(t *testing.T, tbl table.Table, fix bool) *CheckReport {
	t.Helper()
	rep, err := Check(context.Background(), tbl, DefaultWidths, CheckOptions{Fix: fix})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// findings renders the report's findings of one problem, sorted by the
// scan's order within each kind.
func findings(rep *CheckReport, p Problem) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Problem == p {
			out = append(out, f.String())
		}
	}
	return out
}

// TestCheck damages a UID table in each way Check knows, on both backends,
// and checks that each damage is found once, as what it is, that Fix
// repairs what it says it repairs, and that assignments after the fix do
// not reuse a UID in use.
func TestCheck(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		tbl := uidTable(t, db, prefix+"uid")
		r := newResolver(t, tbl, Config{})
		w := DefaultWidths
		long := strings.Repeat("registry.example.com/team/image@sha256:", 4)
		metrics := assignAll(t, r, Metric, "up", "a", "b")
		tagks := assignAll(t, r, TagK, "job", "instance")
		tagvs := assignAll(t, r, TagV, "x", "y", "z", long)

		if rep := check(t, tbl, false); len(rep.Findings) != 0 || rep.Unfixed() != 0 {
			t.Fatalf("a table written only by the resolver: findings %v", rep.Findings)
		} else if got := rep.Kinds[TagV]; got.Forward != 4 || got.Reverse != 4 || got.Counter != 4 || got.MaxUID != 4 {
			t.Fatalf("tagv stats = %+v, want 4 rows each way, counter 4", got)
		}

		uidb := func(k Kind, u uint64) []byte { return AppendUID(nil, u, w[k]) }
		// MissingReverse: the reverse row of "x" is gone.
		del(t, tbl, uidb(TagV, tagvs[0]), FamilyName, TagV)
		// WrongReverse: the reverse row of "y" names a string without a
		// forward row.
		put(t, tbl, uidb(TagV, tagvs[1]), FamilyName, TagV, []byte("bogus"))
		// SharedUID: "c" is given the UID of "a".
		put(t, tbl, []byte("c"), FamilyID, Metric, uidb(Metric, metrics[1]))
		// AboveCounter: "far" and its reverse row, ten past the counter.
		far := uint64(len(tagks)) + 10 // the counter is len(tagks): which string got which UID is open
		put(t, tbl, []byte("far"), FamilyID, TagK, uidb(TagK, far))
		put(t, tbl, uidb(TagK, far), FamilyName, TagK, []byte("far"))
		// BadCell: a forward row of the wrong width, a reverse row of the
		// wrong width, a forward row with UID 0, an unknown qualifier.
		put(t, tbl, []byte("w"), FamilyID, TagV, []byte{0, 9})
		put(t, tbl, []byte{0, 7}, FamilyName, Metric, []byte("short"))
		put(t, tbl, []byte("zero"), FamilyID, TagK, uidb(TagK, 0))
		if err := tbl.Put(ctx, []table.Cell{{Row: []byte("q"), Family: FamilyID, Qualifier: []byte("tagx"), Timestamp: table.LatestTimestamp, Value: []byte{1}}}); err != nil {
			t.Fatal(err)
		}
		// SecondUID: the long value lost its forward row, as the embedded
		// store's bug did, and was assigned again.
		del(t, tbl, []byte(long), FamilyID, TagV)
		r2 := newResolver(t, tbl, Config{}) // an empty cache, as after a restart
		if again := assignAll(t, r2, TagV, long)[0]; again == tagvs[3] {
			t.Fatalf("%q got its old UID %d again", long, again)
		}
		// UnusedReverse: an assignment that failed between its two writes.
		hi, err := tbl.Increment(ctx, counterRow, FamilyID, qualifiers[TagV], 1)
		if err != nil {
			t.Fatal(err)
		}
		put(t, tbl, uidb(TagV, uint64(hi)), FamilyName, TagV, []byte("never-forwarded"))

		rep := check(t, tbl, false)
		want := [numProblems]int{MissingReverse: 1, WrongReverse: 1, SharedUID: 1, AboveCounter: 1, BadCell: 4, SecondUID: 1, UnusedReverse: 1}
		if rep.Counts != want {
			t.Errorf("counts = %v, want %v; findings:\n%s", rep.Counts, want, strings.Join(findingLines(rep), "\n"))
		}
		if rep.Unfixed() != 8 {
			t.Errorf("Unfixed = %d, want 8", rep.Unfixed())
		}
		for p, want := range map[Problem]string{
			MissingReverse: fmt.Sprintf(`tagv missing reverse mapping: "x" -> %d`, tagvs[0]),
			WrongReverse:   fmt.Sprintf(`tagv wrong reverse mapping: "y" -> %d: the reverse row of %d holds "bogus"`, tagvs[1], tagvs[1]),
			SecondUID:      fmt.Sprintf(`tagv string with a second UID: %q -> %d`, long, tagvs[3]),
			UnusedReverse:  fmt.Sprintf(`tagv unused reverse mapping: "never-forwarded" -> %d`, hi),
			AboveCounter:   fmt.Sprintf(`tagk UID above the counter: "" -> %d: the tagk counter is %d`, far, len(tagks)),
		} {
			if got := findings(rep, p); len(got) != 1 || !strings.HasPrefix(got[0], want) {
				t.Errorf("%s: %q, want one beginning %q", p, got, want)
			}
		}
		if got := findings(rep, SharedUID); len(got) != 1 || !strings.Contains(got[0], fmt.Sprintf("-> %d", metrics[1])) {
			t.Errorf("SharedUID: %q, want one naming UID %d", got, metrics[1])
		}

		rep = check(t, tbl, true)
		if rep.Fixed != [numProblems]int{MissingReverse: 1, WrongReverse: 1, AboveCounter: 1} {
			t.Errorf("fixed = %v, want the missing and wrong reverse rows and the counter", rep.Fixed)
		}
		rep = check(t, tbl, false)
		want = [numProblems]int{SharedUID: 1, BadCell: 4, SecondUID: 1, UnusedReverse: 1}
		if rep.Counts != want {
			t.Errorf("after the fix: counts = %v, want %v; findings:\n%s", rep.Counts, want, strings.Join(findingLines(rep), "\n"))
		}
		// Reads resolve the repaired rows, and the next tag key UID is
		// past "far".
		r3 := newResolver(t, tbl, Config{})
		names, err := r3.Names(ctx, TagV, tagvs[:2], nil)
		if err != nil || names[0] != "x" || names[1] != "y" {
			t.Errorf("names of the repaired UIDs = %q, %v; want x, y", names, err)
		}
		if next := assignAll(t, r3, TagK, "new")[0]; next <= far {
			t.Errorf("the next tag key got UID %d, not past %d", next, far)
		}
	})
}

func findingLines(rep *CheckReport) []string {
	out := make([]string, len(rep.Findings))
	for i, f := range rep.Findings {
		out[i] = f.String()
	}
	return out
}

// TestCheckWhileAssigning runs checks while writers assign UIDs: a check
// must never report a harmful problem that the assignment protocol's order
// of writes rules out (a forward row whose reverse row the scan has not
// reached yet, a UID above a counter read too early).
func TestCheckWhileAssigning(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		tbl := uidTable(t, db, prefix+"uid")
		const writers, batches, perBatch = 4, 20, 25
		var wg sync.WaitGroup
		done := make(chan struct{})
		for wr := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := New(context.Background(), tbl, Config{})
				if err != nil {
					t.Error(err)
					return
				}
				for i := range batches {
					var b Batch
					for j := range perBatch {
						// Writers overlap on half their strings, so some
						// assignments race and lose.
						b.Add(TagV, fmt.Sprintf("v-%d-%d", (wr/2)*batches+i, j))
						b.Add(Metric, fmt.Sprintf("m-%d-%d", wr, i*perBatch+j))
					}
					if err := r.GetOrAssign(context.Background(), &b); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		go func() { wg.Wait(); close(done) }()
		checks := 0
		for running := true; running; checks++ {
			select {
			case <-done:
				running = false
			default:
			}
			rep, err := Check(context.Background(), tbl, DefaultWidths, CheckOptions{})
			if err != nil {
				t.Error(err)
				break
			}
			if rep.Unfixed() != 0 {
				var harmful []string
				for _, f := range rep.Findings {
					if f.Problem.Harmful() {
						harmful = append(harmful, f.String())
					}
				}
				t.Errorf("check %d while assigning: %d harmful findings: %s", checks, rep.Unfixed(), strings.Join(harmful, "; "))
				break
			}
		}
		<-done // the writers use the table until they end
		if t.Failed() {
			return
		}
		rep := check(t, tbl, false)
		if got := rep.Kinds[Metric].Forward; got != writers*batches*perBatch {
			t.Errorf("metric forward rows = %d, want %d", got, writers*batches*perBatch)
		}
		t.Logf("%d checks while assigning; at the end %v", checks, rep.Counts)
	})
}

// BenchmarkCheck checks a table of 100,000 tag values on the embedded
// backend: what a check costs per string (ns/op is per string).
func BenchmarkCheck(b *testing.B) {
	db, _ := openPebble(b)
	tbl := uidTable(b, db, "uid")
	r, err := New(context.Background(), tbl, Config{})
	if err != nil {
		b.Fatal(err)
	}
	const n = 100_000
	for i := 0; i < n; i += 10_000 {
		var batch Batch
		for j := range 10_000 {
			batch.Add(TagV, fmt.Sprintf("pod-%08d-%d", i+j, (i+j)%977))
		}
		if err := r.GetOrAssign(context.Background(), &batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		rep, err := Check(context.Background(), tbl, DefaultWidths, CheckOptions{})
		if err != nil || rep.Kinds[TagV].Forward != n {
			b.Fatal(err, rep.Kinds[TagV])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/string")
}

// TestCheckInUse checks the UIDs data rows use against the table: a UID
// nothing names, a string whose forward row was lost (restorable, and
// reassigned since), and counters behind the data (a UID table restored from
// an older snapshot than the data table).
func TestCheckInUse(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		tbl := uidTable(t, db, prefix+"uid")
		r := newResolver(t, tbl, Config{})
		v := assignAll(t, r, TagV, "a", "b", "c")
		uidb := func(u uint64) []byte { return AppendUID(nil, u, DefaultWidths[TagV]) }
		del(t, tbl, uidb(v[0]), FamilyName, TagV) // "a": reverse row lost
		del(t, tbl, []byte("b"), FamilyID, TagV)  // "b": forward row lost
		del(t, tbl, []byte("c"), FamilyID, TagV)  // "c": forward row lost, then reassigned
		c2 := assignAll(t, newResolver(t, tbl, Config{}), TagV, "c")[0]

		var used InUse
		for _, u := range []uint64{v[0], v[1], v[2], 50, 0} {
			used.Add(TagV, u)
		}
		used.Add(Metric, 7)
		run := func(fix bool) *CheckReport {
			rep, err := Check(ctx, tbl, DefaultWidths, CheckOptions{InUse: &used, Fix: fix})
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		rep := run(false)
		want := [numProblems]int{MissingReverse: 1, UnnamedInData: 2, ForwardLost: 2, AboveCounter: 2}
		if rep.Counts != want {
			t.Fatalf("counts = %v, want %v; findings:\n%s", rep.Counts, want, strings.Join(findingLines(rep), "\n"))
		}
		if got := rep.Kinds[TagV]; got.InData != 4 || got.MaxUID != 50 || got.Counter != 4 {
			t.Errorf("tagv stats = %+v, want 4 UIDs in data, highest 50, counter 4", got)
		}
		for p, want := range map[Problem][]string{
			UnnamedInData: {"metrics UID in data rows without a name: \"\" -> 7", "tagv UID in data rows without a name: \"\" -> 50"},
			ForwardLost: {
				fmt.Sprintf(`tagv lost forward mapping: "b" -> %d: data rows use it; the string has no forward row`, v[1]),
				fmt.Sprintf(`tagv lost forward mapping: "c" -> %d: data rows use it; the string's forward row names UID %d`, v[2], c2),
			},
		} {
			got := findings(rep, p)
			slices.Sort(got)
			if len(got) != len(want) {
				t.Errorf("%s: %q, want %q", p, got, want)
				continue
			}
			for i := range want {
				if !strings.HasPrefix(got[i], want[i]) {
					t.Errorf("%s: %q, want one beginning %q", p, got[i], want[i])
				}
			}
		}

		rep = run(true)
		if rep.Fixed != [numProblems]int{MissingReverse: 1, ForwardLost: 1, AboveCounter: 2} {
			t.Errorf("fixed = %v, want the reverse row of a, the forward row of b, both counters", rep.Fixed)
		}
		rep = run(false)
		if want := ([numProblems]int{UnnamedInData: 2, ForwardLost: 1}); rep.Counts != want {
			t.Errorf("after the fix: counts = %v, want %v; findings:\n%s", rep.Counts, want, strings.Join(findingLines(rep), "\n"))
		}
		var b Batch
		b.Add(TagV, "b")
		if err := newResolver(t, tbl, Config{}).Lookup(ctx, &b); err != nil || b.UIDs[TagV][0] != v[1] {
			t.Errorf(`"b" looks up as %v (%v), want its old UID %d`, b.UIDs[TagV], err, v[1])
		}
	})
}
