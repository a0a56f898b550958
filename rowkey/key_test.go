package rowkey

import (
	"bytes"
	"errors"
	"github.com/prom-hbase/prom-hbase/uid"
	"math/rand/v2"
	"testing"
)

// randomLayout is a valid layout with random widths and salting.
func randomLayout(rng *rand.Rand) Layout {
	l := Layout{MetricWidth: 1 + rng.IntN(8), TagKWidth: 1 + rng.IntN(8), TagVWidth: 1 + rng.IntN(8)}
	switch rng.IntN(3) {
	case 0:
	case 1:
		l.SaltBuckets = 2 + rng.IntN(30)
	default:
		l.SaltBuckets = 256
	}
	return l
}

func randomUID(rng *rand.Rand, width int) uint64 {
	return rng.Uint64() & uid.Max(width)
}

// randomSeries is a metric UID and n tags with distinct keys, sorted, all
// fitting the layout (fewer tags when the tag key width cannot hold n keys).
func randomSeries(rng *rand.Rand, l Layout, n int) (uint64, []TagPair) {
	seen := map[uint64]bool{}
	var tags []TagPair
	for range n {
		k := randomUID(rng, l.TagKWidth)
		if seen[k] {
			continue
		}
		seen[k] = true
		tags = append(tags, TagPair{K: k, V: randomUID(rng, l.TagVWidth)})
	}
	SortTags(tags)
	return randomUID(rng, l.MetricWidth), tags
}

func TestRowKeyGolden(t *testing.T) {
	l := DefaultLayout
	l.SaltBuckets = 1 // no salt byte; the salted layout follows below
	sid := l.AppendSeriesID(nil, 0x010203, []TagPair{{K: 5, V: 0x0a0b0c0d}, {K: 0x0f0000, V: 1}})
	key := l.AppendRowKey(nil, sid, 3600)
	want := []byte{
		0x01, 0x02, 0x03, // metric
		0x00, 0x00, 0x0e, 0x10, // hour 3600
		0x00, 0x00, 0x05, 0x0a, 0x0b, 0x0c, 0x0d,
		0x0f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
	}
	if !bytes.Equal(key, want) {
		t.Fatalf("row key %x, want %x", key, want)
	}
	// The salt function is part of the on-disk format: these values must
	// never change, or salted tables lose every series.
	salted := Layout{SaltBuckets: 20, MetricWidth: 3, TagKWidth: 3, TagVWidth: 4}
	for _, tc := range []struct {
		sid  []byte
		want byte
	}{
		{sid, 6},
		{[]byte{0, 0, 1}, 6},
		{[]byte{}, 0},
	} {
		if got := salted.Salt(tc.sid); got != tc.want {
			t.Errorf("Salt(%x) = %d, want %d", tc.sid, got, tc.want)
		}
	}
	// Computed independently, by a Python transcription of saltHash.
	if got := saltHash([]byte("prom-hbase")); got != 0x360ae9461eff92c1 {
		t.Errorf("saltHash = %#x, want %#x", got, 0xac117f1b)
	}
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		l := randomLayout(rng)
		metric, tags := randomSeries(rng, l, rng.IntN(12))
		hour := rng.Uint32()
		checkRoundTrip(t, l, metric, tags, hour)
	}
}

// TestWidths covers every width with the extreme UIDs: 0 and all ones.
func TestWidths(t *testing.T) {
	for w := 1; w <= 8; w++ {
		for _, salt := range []int{0, 7} {
			l := Layout{SaltBuckets: salt, MetricWidth: w, TagKWidth: w, TagVWidth: 9 - w}
			max := uid.Max(w)
			tags := []TagPair{{K: 0, V: uid.Max(9 - w)}, {K: max, V: 0}}
			checkRoundTrip(t, l, max, tags, ^uint32(0))
			checkRoundTrip(t, l, 0, tags[:1], 0)
			key := l.AppendRowKey(nil, l.AppendSeriesID(nil, max, tags), 0)
			if want := l.HeaderWidth() + 2*l.PairWidth(); len(key) != want {
				t.Errorf("layout %+v: key of %d bytes, want %d", l, len(key), want)
			}
		}
	}
}

func checkRoundTrip(t *testing.T, l Layout, metric uint64, tags []TagPair, hour uint32) {
	t.Helper()
	if err := l.CheckSeries(metric, tags); err != nil {
		t.Fatalf("layout %+v: test series invalid: %v", l, err)
	}
	sid := l.AppendSeriesID(nil, metric, tags)
	if len(sid) != l.SeriesIDLen(len(tags)) {
		t.Fatalf("series ID length %d, want %d", len(sid), l.SeriesIDLen(len(tags)))
	}
	key := l.AppendRowKey([]byte("prefix"), sid, hour)[len("prefix"):]
	k, err := l.Parse(key)
	if err != nil {
		t.Fatalf("layout %+v: parse %x: %v", l, key, err)
	}
	if k.Metric != metric || k.BaseHour != hour || k.Salt != l.Salt(sid) {
		t.Fatalf("layout %+v: parsed %+v, want metric %d hour %d salt %d", l, k, metric, hour, l.Salt(sid))
	}
	if l.SaltWidth() == 1 && key[0] != k.Salt {
		t.Fatalf("salt byte %d, parsed %d", key[0], k.Salt)
	}
	if int(k.Salt) >= max(l.SaltBuckets, 1) {
		t.Fatalf("salt %d not below %d buckets", k.Salt, l.SaltBuckets)
	}
	if n := l.TagCount(k); n != len(tags) {
		t.Fatalf("parsed %d tags, want %d", n, len(tags))
	}
	for i, want := range tags {
		if got := l.TagAt(k, i); got != want {
			t.Fatalf("tag %d = %+v, want %+v", i, got, want)
		}
	}
	sid2, err := l.AppendSeriesIDFromRowKey([]byte("x"), key)
	if err != nil {
		t.Fatalf("series ID from key: %v", err)
	}
	if !bytes.Equal(sid2[1:], sid) {
		t.Fatalf("series ID from key %x, want %x", sid2[1:], sid)
	}
	// Another hour: same salt, same series ID.
	key2 := l.AppendRowKey(nil, sid, hour^0x5a5a5a5a)
	if l.SaltWidth() == 1 && key2[0] != key[0] {
		t.Fatalf("salt depends on the hour")
	}
	sid3, err := l.AppendSeriesIDFromRowKey(nil, key2)
	if err != nil || !bytes.Equal(sid3, sid) {
		t.Fatalf("series ID of another hour %x (%v), want %x", sid3, err, sid)
	}
}

func TestParseErrors(t *testing.T) {
	l := Layout{SaltBuckets: 4, MetricWidth: 2, TagKWidth: 1, TagVWidth: 1}
	for _, tc := range []struct {
		name string
		key  []byte
	}{
		{"empty", nil},
		{"short header", []byte{0, 1, 2, 3, 4, 5}},
		{"partial pair", []byte{0, 1, 2, 3, 4, 5, 6, 7}},
		{"salt beyond buckets", []byte{4, 1, 2, 3, 4, 5, 6}},
		{"tag keys descending", []byte{0, 1, 2, 3, 4, 5, 6, 9, 0, 8, 0}},
		{"tag keys repeated", []byte{0, 1, 2, 3, 4, 5, 6, 9, 0, 9, 1}},
	} {
		if _, err := l.Parse(tc.key); !errors.Is(err, ErrMalformedKey) {
			t.Errorf("%s: Parse(%x) error %v, want ErrMalformedKey", tc.name, tc.key, err)
		}
		if _, err := l.AppendSeriesIDFromRowKey(nil, tc.key); err == nil {
			t.Errorf("%s: AppendSeriesIDFromRowKey accepted %x", tc.name, tc.key)
		}
	}
	if _, err := (Layout{}).Parse([]byte{1, 2, 3}); err == nil {
		t.Error("Parse with an invalid layout succeeded")
	}
	ok := []byte{3, 1, 2, 3, 4, 5, 6, 8, 0, 9, 0}
	if _, err := l.Parse(ok); err != nil {
		t.Errorf("Parse(%x): %v", ok, err)
	}
}

// TestSaltSpread checks that sequential UIDs, the common case, spread evenly:
// an uneven spread makes hot regions.
func TestSaltSpread(t *testing.T) {
	for _, buckets := range []int{2, 20, 256} {
		l := Layout{SaltBuckets: buckets, MetricWidth: 3, TagKWidth: 3, TagVWidth: 4}
		counts := make([]int, buckets)
		const series = 200000
		var sid []byte
		for i := range series {
			tags := []TagPair{{K: 1, V: uint64(i % 1000)}, {K: 2, V: uint64(i / 1000)}}
			sid = l.AppendSeriesID(sid[:0], 7, tags)
			counts[l.Salt(sid)]++
		}
		mean := series / buckets
		for b, c := range counts {
			if c < mean*85/100 || c > mean*115/100 {
				t.Errorf("%d buckets: bucket %d holds %d series, mean %d", buckets, b, c, mean)
			}
		}
	}
}

func TestHotPathAllocs(t *testing.T) {
	l := Layout{SaltBuckets: 16, MetricWidth: 3, TagKWidth: 3, TagVWidth: 4}
	tags := []TagPair{{1, 2}, {3, 4}, {5, 6}, {7, 8}}
	sid := make([]byte, 0, 64)
	key := make([]byte, 0, 64)
	out := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		sid = l.AppendSeriesID(sid[:0], 9, tags)
		_ = l.Salt(sid)
		key = l.AppendRowKey(key[:0], sid, 7200)
		k, err := l.Parse(key)
		if err != nil || l.TagAt(k, 3) != tags[3] {
			t.Fatal("round trip failed")
		}
		out, err = l.AppendSeriesIDFromRowKey(out[:0], key)
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per build+parse", allocs)
	}
}

func benchSeries() (Layout, []TagPair) {
	return Layout{SaltBuckets: 16, MetricWidth: 3, TagKWidth: 3, TagVWidth: 4},
		[]TagPair{{1, 100}, {2, 200}, {3, 300}, {4, 400}, {5, 500}, {6, 600}, {7, 700}, {8, 800}}
}

func BenchmarkAppendSeriesID(b *testing.B) {
	l, tags := benchSeries()
	var dst []byte
	for b.Loop() {
		dst = l.AppendSeriesID(dst[:0], 42, tags)
	}
}

func BenchmarkSalt(b *testing.B) {
	l, tags := benchSeries()
	sid := l.AppendSeriesID(nil, 42, tags)
	var sink byte
	for b.Loop() {
		sink += l.Salt(sid)
	}
	_ = sink
}

func BenchmarkAppendRowKey(b *testing.B) {
	l, tags := benchSeries()
	sid := l.AppendSeriesID(nil, 42, tags)
	var dst []byte
	for b.Loop() {
		dst = l.AppendRowKey(dst[:0], sid, 3600*400000)
	}
}

func BenchmarkParse(b *testing.B) {
	l, tags := benchSeries()
	key := l.AppendRowKey(nil, l.AppendSeriesID(nil, 42, tags), 3600*400000)
	for b.Loop() {
		if _, err := l.Parse(key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendSeriesIDFromRowKey(b *testing.B) {
	l, tags := benchSeries()
	key := l.AppendRowKey(nil, l.AppendSeriesID(nil, 42, tags), 3600*400000)
	var dst []byte
	for b.Loop() {
		var err error
		if dst, err = l.AppendSeriesIDFromRowKey(dst[:0], key); err != nil {
			b.Fatal(err)
		}
	}
}
