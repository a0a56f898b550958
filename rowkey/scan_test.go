package rowkey

import (
	"bytes"
	"github.com/prom-hbase/prom-hbase/uid"
	"math/rand/v2"
	"testing"
)

func TestScanRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 300 {
		l := randomLayout(rng)
		metric := randomUID(rng, l.MetricWidth)
		var start, end uint32
		switch rng.IntN(4) {
		case 0: // the very end of the key space: carries into metric and salt
			metric = uid.Max(l.MetricWidth)
			start, end = ^uint32(0)-2*HourSeconds, ^uint32(0)
		case 1:
			metric = 0
			start, end = 0, HourSeconds
		default:
			start = rng.Uint32N(1<<31) / HourSeconds * HourSeconds
			end = start + rng.Uint32N(5)*HourSeconds
		}
		ranges := l.AppendScanRanges(nil, metric, start, end)
		buckets := max(1, l.SaltBuckets)
		if len(ranges) != buckets {
			t.Fatalf("layout %+v: %d ranges, want %d", l, len(ranges), buckets)
		}
		for i, r := range ranges {
			if r.Stop != nil && bytes.Compare(r.Start, r.Stop) >= 0 {
				t.Fatalf("range %d empty: %x..%x", i, r.Start, r.Stop)
			}
			if i > 0 {
				prev := ranges[i-1]
				if prev.Stop == nil || bytes.Compare(prev.Stop, r.Start) > 0 {
					t.Fatalf("ranges %d and %d overlap or are out of order", i-1, i)
				}
			}
		}
		for range 200 {
			m := metric
			if rng.IntN(3) == 0 {
				m = randomUID(rng, l.MetricWidth)
			}
			hour := uint32(int64(start) + (rng.Int64N(int64(end-start)/HourSeconds+5)-2)*HourSeconds)
			_, tags := randomSeries(rng, l, rng.IntN(4))
			key := l.AppendRowKey(nil, l.AppendSeriesID(nil, m, tags), hour)
			want := m == metric && hour >= start && hour <= end
			in := 0
			for _, r := range ranges {
				if bytes.Compare(key, r.Start) >= 0 && (r.Stop == nil || bytes.Compare(key, r.Stop) < 0) {
					in++
				}
			}
			if in > 1 || (in == 1) != want {
				t.Fatalf("layout %+v metric %d hours %d..%d: key %x (metric %d hour %d) in %d ranges", l, metric, start, end, key, m, hour, in)
			}
		}
	}
}

func TestScanRangesEdges(t *testing.T) {
	l := Layout{MetricWidth: 1, TagKWidth: 1, TagVWidth: 1}
	if got := l.AppendScanRanges(nil, 1, 7200, 3600); len(got) != 0 {
		t.Errorf("start after end: %d ranges", len(got))
	}
	r := l.AppendScanRanges(nil, 0xff, 0, ^uint32(0))
	if len(r) != 1 || !bytes.Equal(r[0].Start, []byte{0xff, 0, 0, 0, 0}) || r[0].Stop != nil {
		t.Errorf("last metric, all hours: %+v, want start ff00000000 and no stop", r)
	}
	r = l.AppendScanRanges(nil, 0x0f, 3600, 3600)
	if !bytes.Equal(r[0].Stop, []byte{0x0f, 0, 0, 0x0e, 0x11}) {
		t.Errorf("stop %x", r[0].Stop)
	}
	s := Layout{SaltBuckets: 3, MetricWidth: 1, TagKWidth: 1, TagVWidth: 1}
	r = s.AppendScanRanges(nil, 0xff, 0, ^uint32(0))
	want := []Range{
		{[]byte{0, 0xff, 0, 0, 0, 0}, []byte{1, 0, 0, 0, 0, 0}},
		{[]byte{1, 0xff, 0, 0, 0, 0}, []byte{2, 0, 0, 0, 0, 0}},
		{[]byte{2, 0xff, 0, 0, 0, 0}, []byte{3, 0, 0, 0, 0, 0}},
	}
	for i := range want {
		if !bytes.Equal(r[i].Start, want[i].Start) || !bytes.Equal(r[i].Stop, want[i].Stop) {
			t.Errorf("range %d = %x..%x, want %x..%x", i, r[i].Start, r[i].Stop, want[i].Start, want[i].Stop)
		}
	}
	// Appending to a non-empty dst keeps what was there, and ranges own
	// their bytes: changing one must not change another.
	r = s.AppendScanRanges(r[:1], 1, 0, 0)
	if len(r) != 4 || !bytes.Equal(r[0].Start, want[0].Start) {
		t.Fatalf("append lost the prefix: %+v", r)
	}
	r[1].Start = append(r[1].Start, 9)
	if !bytes.Equal(r[1].Stop, []byte{0, 1, 0, 0, 0, 1}) || !bytes.Equal(r[2].Start, []byte{1, 1, 0, 0, 0, 0}) {
		t.Errorf("ranges alias each other: %x %x", r[1].Stop, r[2].Start)
	}
}

func BenchmarkAppendScanRanges(b *testing.B) {
	l := Layout{SaltBuckets: 20, MetricWidth: 3, TagKWidth: 3, TagVWidth: 4}
	var dst []Range
	for b.Loop() {
		dst = l.AppendScanRanges(dst[:0], 42, 3600*400000, 3600*400024)
	}
}

// TestBucketHourRange: the range of one bucket-hour is AppendScanRanges'
// range of that bucket for that hour alone, salted or not, and its Start is
// the prefix of every row key of the bucket-hour.
func TestBucketHourRange(t *testing.T) {
	for _, l := range []Layout{DefaultLayout, {SaltBuckets: 1, MetricWidth: 2, TagKWidth: 1, TagVWidth: 1}} {
		const metric, hour = 0x0102, 1_700_000_000 / 3600 * 3600
		all := l.AppendScanRanges(nil, metric, hour, hour)
		for b, want := range all {
			got := l.BucketHourRange(byte(b), metric, hour)
			if !bytes.Equal(got.Start, want.Start) || !bytes.Equal(got.Stop, want.Stop) {
				t.Errorf("%+v bucket %d: %x..%x, want %x..%x", l, b, got.Start, got.Stop, want.Start, want.Stop)
			}
			key := l.AppendRowKey(nil, l.AppendSeriesID(nil, metric, []TagPair{{K: 1, V: 2}}), hour)
			if k, err := l.Parse(key); err == nil && int(k.Salt) == b && !bytes.HasPrefix(key, got.Start) {
				t.Errorf("%+v: row key %x outside its bucket-hour's prefix %x", l, key, got.Start)
			}
		}
	}
}
