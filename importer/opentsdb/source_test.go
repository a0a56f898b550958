package opentsdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/importer"
	"github.com/prom-hbase/prom-hbase/store"
)

// fakeTSDB writes an OpenTSDB's tables into memTables: UIDs assigned in
// order of first use, rows salted as RowKey.prefixKeyWithSalt would (the
// bucket here is chosen by the test; only its place in the key matters).
type fakeTSDB struct {
	m    *memTables
	o    Options
	uids map[string][]byte // kind + "\x00" + name -> UID
	next map[string]uint64
}

func newFakeTSDB(t testing.TB, o Options) *fakeTSDB {
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return &fakeTSDB{m: newMemTables(), o: o, uids: map[string][]byte{}, next: map[string]uint64{}}
}

func (f *fakeTSDB) uid(kind, name string) []byte {
	if u, ok := f.uids[kind+"\x00"+name]; ok {
		return u
	}
	width := map[string]int{qualMetrics: f.o.MetricWidth, qualTagK: f.o.TagKWidth, qualTagV: f.o.TagVWidth}[kind]
	f.next[kind]++
	u := binary.BigEndian.AppendUint64(nil, f.next[kind])[8-width:]
	f.uids[kind+"\x00"+name] = u
	f.m.put(f.o.UIDTable, u, familyName, []byte(kind), []byte(name), 1)
	f.m.put(f.o.UIDTable, []byte(name), []byte("id"), []byte(kind), u, 1)
	return u
}

// rowKey builds a data row key; tags as name, value pairs in the order
// given (OpenTSDB sorts them by UID, which the source does not rely on).
func (f *fakeTSDB) rowKey(bucket int, metric string, base int64, tags ...string) []byte {
	l := f.o.layout()
	key := l.key(nil, bucket, f.uid(qualMetrics, metric), base)
	for i := 0; i < len(tags); i += 2 {
		key = append(key, f.uid(qualTagK, tags[i])...)
		key = append(key, f.uid(qualTagV, tags[i+1])...)
	}
	return key
}

func (f *fakeTSDB) put(key, q, v []byte, ts int64) {
	f.m.put(f.o.DataTable, key, familyData, q, v, ts)
}

// putInts writes int points at the given second offsets, one column each.
func (f *fakeTSDB) putInts(key []byte, offsets []int, value func(i int) int64) {
	for i, off := range offsets {
		v, flags := intValue(value(i))
		f.put(key, secQual(off, flags), v, 1)
	}
}

type gotSeries struct {
	labels  string
	samples []store.Sample
}

func readUnit(t *testing.T, s *Source, u importer.Unit) []gotSeries {
	t.Helper()
	out, err := readSeries(s, u)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readSeries reads a unit's series, checking that their labels are sorted.
func readSeries(s *Source, u importer.Unit) ([]gotSeries, error) {
	it, err := s.Open(context.Background(), u)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []gotSeries
	for it.Next() {
		in := it.At()
		if !slices.IsSortedFunc(in.Labels, func(a, b labels.Label) int { return strings.Compare(a.Name, b.Name) }) {
			return out, fmt.Errorf("labels not sorted: %v", in.Labels)
		}
		out = append(out, gotSeries{labels.New(in.Labels...).String(), slices.Clone(in.Samples)})
	}
	return out, it.Err()
}

// sourceUnits opens a source over the fake tables and lists its units.
func sourceUnits(t *testing.T, f *fakeTSDB, o Options) (*Source, []importer.Unit) {
	t.Helper()
	s, err := newSource(context.Background(), f.m, o)
	if err != nil {
		t.Fatal(err)
	}
	units, err := s.Units(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s, units
}

func TestSourceUnitsAndSeries(t *testing.T) {
	// Non-default widths and a 2-byte salt over 3 buckets.
	o := Options{DataTable: "d", UIDTable: "u", MetricWidth: 2, TagKWidth: 1, TagVWidth: 4,
		SaltWidth: 2, SaltBuckets: 3, SpanHours: 2, RowsPerBatch: 2, TagValueCache: 1}
	f := newFakeTSDB(t, o)
	day := int64(1700006400) // 2 hours boundary: 1700006400 % 7200 == 0
	if day%7200 != 0 {
		t.Fatal("bad test base")
	}
	secs := []int{0, 1, 3599}
	f.putInts(f.rowKey(0, "sys.cpu.user", day, "host", "a", "cpu.id", "0"), secs, func(i int) int64 { return int64(i) })
	f.putInts(f.rowKey(2, "sys.cpu.user", day, "host", "b"), secs, func(i int) int64 { return int64(10 + i) })
	// The next hour of host=a, compacted; and the next span, four hours on.
	vals := [][]byte{}
	quals := [][]byte{}
	for i := range 3 {
		v, fl := intValue(int64(100 + i))
		vals, quals = append(vals, v), append(quals, secQual(i*10, fl))
	}
	q, v := compact(quals, vals, false)
	f.put(f.rowKey(0, "sys.cpu.user", day+hour, "host", "a", "cpu.id", "0"), q, v, 1)
	f.putInts(f.rowKey(1, "sys.cpu.user", day+4*hour, "host", "c"), []int{5}, func(int) int64 { return 7 })
	// Another metric, one row, and a metric without rows.
	f.putInts(f.rowKey(1, "disk.free", day+hour, "host", "a"), []int{60}, func(int) int64 { return -1 })
	f.uid(qualMetrics, "unused")

	s, units := sourceUnits(t, f, o)
	ms := day * 1000
	span := int64(2*hour*1000) - 1
	want := []importer.Unit{
		{ID: fmt.Sprintf("opentsdb:disk.free:%d-%d", ms, ms+span), MinTime: ms, MaxTime: ms + span},
		{ID: fmt.Sprintf("opentsdb:sys.cpu.user:%d-%d", ms, ms+span), MinTime: ms, MaxTime: ms + span},
		// Between a metric's first and last rows, spans without rows too.
		{ID: fmt.Sprintf("opentsdb:sys.cpu.user:%d-%d", ms+2*hour*1000, ms+2*hour*1000+span), MinTime: ms + 2*hour*1000, MaxTime: ms + 2*hour*1000 + span},
		{ID: fmt.Sprintf("opentsdb:sys.cpu.user:%d-%d", ms+4*hour*1000, ms+4*hour*1000+span), MinTime: ms + 4*hour*1000, MaxTime: ms + 4*hour*1000 + span},
	}
	if !slices.Equal(units, want) {
		t.Fatalf("units\n%v\nwant\n%v", units, want)
	}

	got := readUnit(t, s, units[1])
	wantSeries := []gotSeries{
		{`{__name__="sys_cpu_user", cpu_id="0", host="a"}`, []store.Sample{{T: ms, V: 0}, {T: ms + 1000, V: 1}, {T: ms + 3599000, V: 2}}},
		{`{__name__="sys_cpu_user", cpu_id="0", host="a"}`, []store.Sample{{T: ms + 3600000, V: 100}, {T: ms + 3610000, V: 101}, {T: ms + 3620000, V: 102}}},
		{`{__name__="sys_cpu_user", host="b"}`, []store.Sample{{T: ms, V: 10}, {T: ms + 1000, V: 11}, {T: ms + 3599000, V: 12}}},
	}
	if !slices.EqualFunc(got, wantSeries, func(a, b gotSeries) bool { return a.labels == b.labels && slices.Equal(a.samples, b.samples) }) {
		t.Errorf("series\n%v\nwant\n%v", got, wantSeries)
	}
	if got := readUnit(t, s, units[2]); len(got) != 0 {
		t.Errorf("empty unit: %v", got)
	}
	if got := readUnit(t, s, units[3]); len(got) != 1 || got[0].labels != `{__name__="sys_cpu_user", host="c"}` {
		t.Errorf("last unit: %v", got)
	}
	st := s.Stats()
	if st.Rows != 4 || st.Samples != 10 || st.Compacted != 1 {
		t.Errorf("stats rows %d samples %d compacted %d", st.Rows, st.Samples, st.Compacted)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSourceSelection(t *testing.T) {
	f := newFakeTSDB(t, Options{})
	base := int64(1700002800)
	for h := range int64(50) { // two days and a bit
		f.putInts(f.rowKey(0, "m.a", base+h*hour, "k", "v"), []int{0, 1800}, func(i int) int64 { return h })
	}
	f.putInts(f.rowKey(0, "m.b", base, "k", "v"), []int{0}, func(int) int64 { return 1 })

	// The metric list, the time range (cutting inside a row), a prefix.
	o := Options{Metrics: []string{"m.a"}, MinTime: (base+hour+1800)*1000 + 1, MaxTime: (base + 30*hour) * 1000, MetricPrefix: "otsdb_"}
	s, units := sourceUnits(t, f, o)
	var samples int
	for i, u := range units {
		if !strings.HasPrefix(u.ID, "opentsdb:m.a:") || u.MinTime < o.MinTime || u.MaxTime > o.MaxTime {
			t.Errorf("unit %v", u)
		}
		if i > 0 && u.MinTime != units[i-1].MaxTime+1 {
			t.Errorf("unit %v does not follow %v", u, units[i-1])
		}
		for _, g := range readUnit(t, s, u) {
			if !strings.Contains(g.labels, `__name__="otsdb_m_a"`) {
				t.Errorf("labels %s", g.labels)
			}
			for _, smp := range g.samples {
				if smp.T < o.MinTime || smp.T > o.MaxTime {
					t.Errorf("sample %v outside the range", smp)
				}
			}
			samples += len(g.samples)
		}
	}
	// Hours base+2h .. base+29h whole (56), plus base+30h's first point.
	if samples != 57 {
		t.Errorf("%d samples in range, want 57", samples)
	}
	if len(units) != 2 {
		t.Errorf("%d units, want 2 (the range spans a day boundary): %v", len(units), units)
	}
	// IDs name whole spans: a later start (a retention moving on) keeps
	// the first unit's ID, and the importer's state with it.
	day := int64(24 * hour * 1000)
	first := units[0].MinTime - units[0].MinTime%day
	if want := fmt.Sprintf("opentsdb:m.a:%d-%d", first, first+day-1); units[0].ID != want {
		t.Errorf("first unit's ID %s, want %s", units[0].ID, want)
	}
	later := o
	later.MinTime += 3600_000
	if _, again := sourceUnits(t, f, later); len(again) != 2 || again[0].ID != units[0].ID || again[0].MinTime != later.MinTime {
		t.Errorf("units with a later start: %v, want the same IDs", again)
	}

	if _, err := newSource(context.Background(), f.m, Options{Metrics: []string{"nope"}}); err == nil {
		t.Error("an unknown metric was accepted")
	}
}

func TestSourceRefusesCollisions(t *testing.T) {
	f := newFakeTSDB(t, Options{})
	f.rowKey(0, "a.b", 0, "k", "v")
	f.rowKey(0, "a_b", 0, "k", "v")
	_, err := newSource(context.Background(), f.m, Options{})
	if err == nil || !strings.Contains(err.Error(), "a.b and a_b -> a_b") {
		t.Fatalf("metric collision: %v", err)
	}
	if _, err := newSource(context.Background(), f.m, Options{Metrics: []string{"a.b"}}); err != nil {
		t.Fatalf("one of the two: %v", err)
	}
	f.rowKey(0, "a.b", 0, "host.name", "v")
	f.rowKey(0, "a.b", 0, "host_name", "v")
	_, err = newSource(context.Background(), f.m, Options{Metrics: []string{"a.b"}})
	if err == nil || !strings.Contains(err.Error(), "host.name and host_name -> host_name") {
		t.Fatalf("tag key collision: %v", err)
	}
}

func TestSourceBadRows(t *testing.T) {
	f := newFakeTSDB(t, Options{})
	base := int64(1700002800)
	good := f.rowKey(0, "m", base, "k", "v")
	f.putInts(good, []int{1}, func(int) int64 { return 1 })
	// A row naming a tag value UID the UID table lacks, and a corrupt
	// column in another row.
	orphan := append(f.rowKey(0, "m", base, "k2", "x")[:10], 0xAA, 0xBB, 0xCC)
	f.putInts(orphan, []int{2}, func(int) int64 { return 2 })
	bad := f.rowKey(0, "m", base, "k", "w")
	f.put(bad, secQual(3, 2), []byte{1, 2, 3}, 1)

	s, err := newSource(context.Background(), f.m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	units, err := s.Units(context.Background())
	if err != nil || len(units) != 1 {
		t.Fatalf("units %v, %v", units, err)
	}
	it, _ := s.Open(context.Background(), units[0])
	for it.Next() {
	}
	if err := it.Err(); !errors.Is(err, errCorrupt) {
		t.Errorf("corrupt column: %v", err)
	}
	it.Close()

	s, err = newSource(context.Background(), f.m, Options{SkipCorrupt: true})
	if err != nil {
		t.Fatal(err)
	}
	got := readUnit(t, s, units[0])
	if len(got) != 1 || got[0].labels != `{__name__="m", k="v"}` {
		t.Errorf("got %v", got)
	}
	if c := s.Stats().Corrupt; c != 2 {
		t.Errorf("%d corrupt, want 2", c)
	}

	// Without skipping, the orphan UID fails the unit by itself.
	delete(f.m.rows, f.o.DataTable)
	f.putInts(orphan, []int{2}, func(int) int64 { return 2 })
	s, _ = newSource(context.Background(), f.m, Options{})
	it, _ = s.Open(context.Background(), units[0])
	for it.Next() {
	}
	if err := it.Err(); err == nil || !strings.Contains(err.Error(), "tag value UID aabbcc") {
		t.Errorf("orphan tag value: %v", err)
	}
	it.Close()

	if _, err := s.Open(context.Background(), importer.Unit{ID: "block-01"}); err == nil {
		t.Error("a foreign unit opened")
	}
}

// TestSourceConcurrentUnits reads units side by side (as the importer
// does): the same series as one at a time, buffers and caches shared.
func TestSourceConcurrentUnits(t *testing.T) {
	f := newFakeTSDB(t, Options{})
	base := int64(1700002800)
	for m := range 4 {
		for h := range int64(30) {
			for s := range 5 {
				f.putInts(f.rowKey(0, fmt.Sprintf("m%d", m), base+h*hour, "host", fmt.Sprint(s)), []int{0, 60, 3599},
					func(i int) int64 { return int64(m*1000+s*100+i) + h })
			}
		}
	}
	o := Options{SpanHours: 6, RowsPerBatch: 3, TagValueCache: 2}
	s, units := sourceUnits(t, f, o)
	want := make([][]gotSeries, len(units))
	for i, u := range units {
		want[i] = readUnit(t, s, u)
	}
	got := make([][]gotSeries, len(units))
	errs := make([]error, len(units))
	var wg sync.WaitGroup
	for i, u := range units {
		wg.Go(func() { got[i], errs[i] = readSeries(s, u) })
	}
	wg.Wait()
	for i := range units {
		if errs[i] != nil {
			t.Fatalf("unit %s: %v", units[i].ID, errs[i])
		}
		if !slices.EqualFunc(got[i], want[i], func(a, b gotSeries) bool { return a.labels == b.labels && slices.Equal(a.samples, b.samples) }) {
			t.Errorf("unit %s read side by side differs", units[i].ID)
		}
	}
	if n := s.Stats().Samples; n != 2*4*30*5*3 {
		t.Errorf("%d samples counted, want %d", n, 2*4*30*5*3)
	}
}

// Two TSDs assigning a UID to one new name at once leave the loser's
// reverse mapping behind: the name has two UIDs, and only the forward
// mapping's is in the data rows.
func TestSourceLeakedUIDs(t *testing.T) {
	f := newFakeTSDB(t, Options{})
	base := int64(1700002800)
	f.putInts(f.rowKey(0, "m.a", base, "host", "a"), []int{0, 10}, func(i int) int64 { return int64(i) })
	leak := func(kind, name string, uid byte) {
		f.m.put(f.o.UIDTable, []byte{0, 0, uid}, familyName, []byte(kind), []byte(name), 1)
	}
	leak(qualMetrics, "m.a", 9) // scanned after the real one
	leak(qualTagK, "host", 9)
	s, units := sourceUnits(t, f, Options{})
	if len(units) != 1 {
		t.Fatalf("units %v", units)
	}
	got := readUnit(t, s, units[0])
	if len(got) != 1 || got[0].labels != `{__name__="m_a", host="a"}` || len(got[0].samples) != 2 {
		t.Errorf("series %v", got)
	}

	// Without a forward mapping the choice cannot be made.
	f.m.put(f.o.UIDTable, []byte("m.b"), []byte("id"), []byte(qualMetrics), nil, 1)
	leak(qualMetrics, "m.b", 10)
	leak(qualMetrics, "m.b", 11)
	_, err := newSource(context.Background(), f.m, Options{})
	if err == nil || !strings.Contains(err.Error(), `metric "m.b" has several UIDs`) {
		t.Errorf("two UIDs and no forward mapping: %v", err)
	}
}
