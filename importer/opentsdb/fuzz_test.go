package opentsdb

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/common/model"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/store"
)

// FuzzDecodeRow decodes a row of two columns of any bytes. Whatever they
// hold, decoding must not panic, and what it returns must be samples in
// strictly increasing time within the range; and those samples, written
// back as one compacted column of millisecond points (8-byte floats),
// must decode to themselves, bit for bit.
func FuzzDecodeRow(f *testing.F) {
	i2, f2 := intValue(1000)
	fl4, ff4 := float32Value(0.5)
	cq, cv := compact([][]byte{secQual(1, f2), msQual(1500, ff4)}, [][]byte{i2, fl4}, true)
	f.Add(secQual(1, f2), i2, cq, cv, int64(1), int64(2), uint32(testBase))
	f.Add([]byte{prefixAppend, 0, 0}, cat(secQual(1, f2), i2, msQual(7, ff4), fl4), secQual(1, flagFloat|3), cat([]byte{0, 0, 0, 0}, fl4), int64(3), int64(2), uint32(0))
	f.Add([]byte{prefixAnnotation, 0, 0}, []byte("{}"), msQual(3599999, 0), []byte{0xFF}, int64(0), int64(0), uint32(math.MaxUint32))
	f.Fuzz(func(t *testing.T, q1, v1, q2, v2 []byte, ts1, ts2 int64, base uint32) {
		cells := []hrpc.Cell{
			{Family: familyData, Qualifier: q1, Value: v1, Timestamp: ts1},
			{Family: familyData, Qualifier: q2, Value: v2, Timestamp: ts2},
		}
		mint, maxt := int64(base)*1000+1000, int64(base)*1000+3000*1000
		for _, skip := range []bool{false, true} {
			d := rowDecoder{skipCorrupt: skip}
			got, err := d.decode(nil, int64(base), cells, mint, maxt)
			if err != nil {
				if skip {
					t.Fatalf("error while skipping corrupt columns: %v", err)
				}
				continue
			}
			checkSamples(t, got, mint, maxt)
			again := recode(t, got, int64(base), mint, maxt)
			if len(again) != len(got) {
				t.Fatalf("re-decoded %d samples, want %d", len(again), len(got))
			}
			for i := range got {
				if again[i].T != got[i].T || math.Float64bits(again[i].V) != math.Float64bits(got[i].V) {
					t.Fatalf("sample %d re-decoded as %v, want %v", i, again[i], got[i])
				}
			}
		}
	})
}

func checkSamples(t *testing.T, got []store.Sample, mint, maxt int64) {
	t.Helper()
	for i, s := range got {
		if s.T < mint || s.T > maxt {
			t.Fatalf("sample %v outside [%d, %d]", s, mint, maxt)
		}
		if i > 0 && s.T <= got[i-1].T {
			t.Fatalf("samples out of order: %v then %v", got[i-1], s)
		}
	}
}

// recode writes samples as one compacted column of ms points and decodes
// it again.
func recode(t *testing.T, samples []store.Sample, base, mint, maxt int64) []store.Sample {
	t.Helper()
	var q, v []byte
	for _, s := range samples {
		q = append(q, msQual(int(s.T-base*1000), flagFloat|7)...)
		v = binary.BigEndian.AppendUint64(v, math.Float64bits(s.V))
	}
	cells := []hrpc.Cell{{Family: familyData, Qualifier: q, Value: append(v, 0), Timestamp: 1}}
	if len(samples) == 1 {
		cells[0].Value = v // a single point has no meta byte
	}
	if len(samples) == 0 {
		return nil
	}
	d := rowDecoder{}
	again, err := d.decode(nil, base, cells, mint, maxt)
	if err != nil {
		t.Fatalf("re-decoding %x / %x: %v", q, v, err)
	}
	return again
}

// FuzzEncodedRow writes points the ways OpenTSDB does and checks that the
// row decodes to them. Each 14 bytes of input are a point: its form (a raw
// column, OpenTSDB's legacy raw forms, the row's compacted column, its
// append column), second or millisecond time, integer or float value, and
// the HBase timestamp of its raw column. The expected samples follow the
// duplicate rule on their own: the column with the newest HBase timestamp
// wins, and in the append column the later pair.
func FuzzEncodedRow(f *testing.F) {
	f.Add([]byte("\x00\x01\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x07" +
		"\x02\x01\x01\x00\x00\x05\x3f\xe0\x00\x00\x00\x00\x00\x00" +
		"\x06\x02\x02\x00\x10\x00\x40\x00\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("\x03\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01" +
		"\x03\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02" +
		"\x01\xff\x01\x00\x00\x01\x3f\x80\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		w := rowWriter{cols: map[string]hrpc.Cell{}, compacted: map[int64][2][]byte{}, latest: map[int64]wrote{}}
		for i := 0; i+14 <= len(data) && i < 64*14; i += 14 {
			w.add(data[i : i+14])
		}
		cells := w.cells()
		d := rowDecoder{}
		got, err := d.decode(nil, testBase, cells, math.MinInt64, math.MaxInt64)
		if err != nil {
			t.Fatalf("decoding %d cells: %v", len(cells), err)
		}
		want := w.want()
		if len(got) != len(want) {
			t.Fatalf("%d samples, want %d\ngot  %v\nwant %v", len(got), len(want), got, want)
		}
		for i := range want {
			if got[i].T != want[i].T || math.Float64bits(got[i].V) != math.Float64bits(want[i].V) {
				t.Fatalf("sample %d is %v, want %v", i, got[i], want[i])
			}
		}
	})
}

// rowWriter builds a row as OpenTSDB would have written it, and the
// samples it must decode to.
type rowWriter struct {
	cols      map[string]hrpc.Cell // by qualifier: HBase keeps the newest
	compacted map[int64][2][]byte  // ms offset -> qualifier, value
	appended  []byte
	latest    map[int64]wrote // ms offset -> the write that wins
	seq       int64
}

type wrote struct {
	v   float64
	ver int64 // the HBase timestamp of its column
}

// The HBase timestamps of the compacted and the append column; a raw
// cell's is (byte << 8 | its place), so it may be older or newer, and
// never equal (OpenTSDB's order of equal ones is arbitrary).
const (
	compactedVer = 0x80 << 8
	appendVer    = 0xC0 << 8
)

func (w *rowWriter) add(r []byte) {
	form, ms, kind := r[0]%4, r[0]&4 != 0, r[2]%3
	off := int64(r[3])<<16 | int64(r[4])<<8 | int64(r[5])
	v, f, val := pointValue(kind, r[6:14])
	var q []byte
	if ms {
		off %= hour * 1000
		q = msQual(int(off), f)
	} else {
		off = off % hour * 1000
		q = secQual(int(off/1000), f)
	}
	w.seq++
	switch form {
	case 0, 1: // a raw column, form 1 in a legacy layout when it has one
		ver := int64(r[1])<<8 | w.seq
		if form == 1 && !ms {
			q, v = legacy(q, v)
		}
		w.put(hrpc.Cell{Family: familyData, Qualifier: q, Value: v, Timestamp: ver})
		w.record(off, wrote{val, ver}, true)
	case 2: // compacted: one point per offset, the first kept
		if _, ok := w.compacted[off]; !ok {
			w.compacted[off] = [2][]byte{q, v}
			w.record(off, wrote{val, compactedVer}, false)
		}
	case 3:
		w.appended = slices.Concat(w.appended, q, v)
		w.record(off, wrote{val, appendVer}, true)
	}
}

// put stores a column as HBase does: of two with one qualifier, the newer.
func (w *rowWriter) put(c hrpc.Cell) {
	if old, ok := w.cols[string(c.Qualifier)]; !ok || old.Timestamp < c.Timestamp {
		w.cols[string(c.Qualifier)] = c
	}
}

// record notes a write at off unless a newer one is there.
func (w *rowWriter) record(off int64, x wrote, laterWins bool) {
	if old, ok := w.latest[off]; ok && (old.ver > x.ver || old.ver == x.ver && !laterWins) {
		return
	}
	w.latest[off] = x
}

// pointValue encodes a value as TSDB.addPoint does: an integer on the
// fewest bytes, a float on 4 bytes, a double on 8.
func pointValue(kind byte, b []byte) (v []byte, flags byte, val float64) {
	switch kind {
	case 0:
		n := int64(binary.BigEndian.Uint64(b)) >> (b[0] % 64) // small values too
		v, flags = intValue(n)
		return v, flags, float64(n)
	case 1:
		x := math.Float32frombits(binary.BigEndian.Uint32(b))
		v, flags = float32Value(x)
		return v, flags, float64(x)
	}
	x := math.Float64frombits(binary.BigEndian.Uint64(b))
	v, flags = float64Value(x)
	return v, flags, x
}

// legacy rewrites a raw second point as early OpenTSDB versions wrote it:
// a 4-byte float on 8 bytes with 4 leading zeros, or an integer whose
// flags claim 8 bytes whatever its length.
func legacy(q, v []byte) ([]byte, []byte) {
	if q[1]&flagFloat != 0 {
		if len(v) == 4 {
			return q, append([]byte{0, 0, 0, 0}, v...)
		}
		return q, v
	}
	return []byte{q[0], q[1] | lengthMask}, v
}

// cells are the row's columns in HBase's order (by qualifier).
func (w *rowWriter) cells() []hrpc.Cell {
	offs := slices.Sorted(maps.Keys(w.compacted))
	if len(offs) == 1 { // a single point is never compacted: a raw column
		p := w.compacted[offs[0]]
		w.put(hrpc.Cell{Family: familyData, Qualifier: p[0], Value: p[1], Timestamp: compactedVer})
	} else if len(offs) > 1 {
		var quals, vals [][]byte
		for _, o := range offs {
			quals, vals = append(quals, w.compacted[o][0]), append(vals, w.compacted[o][1])
		}
		q, v := compact(quals, vals, true)
		w.put(hrpc.Cell{Family: familyData, Qualifier: q, Value: v, Timestamp: compactedVer})
	}
	if len(w.appended) > 0 {
		w.put(hrpc.Cell{Family: familyData, Qualifier: []byte{prefixAppend, 0, 0}, Value: w.appended, Timestamp: appendVer})
	}
	cells := slices.Collect(maps.Values(w.cols))
	slices.SortFunc(cells, func(a, b hrpc.Cell) int { return bytes.Compare(a.Qualifier, b.Qualifier) })
	return cells
}

func (w *rowWriter) want() []store.Sample {
	var out []store.Sample
	for _, off := range slices.Sorted(maps.Keys(w.latest)) {
		out = append(out, store.Sample{T: testBase*1000 + off, V: w.latest[off].v})
	}
	return out
}

// FuzzNames checks that every OpenTSDB name maps to a valid Prometheus
// name, whatever its ISO-8859-1 bytes.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"sys.cpu.user", "9lives", "__name__", "café", "", "a:b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		name := latin1(b)
		if !utf8.ValidString(name) || utf8.RuneCountInString(name) != len(b) {
			t.Fatalf("latin1(%x) = %q", b, name)
		}
		if m := MetricName(name); !model.LegacyValidation.IsValidMetricName(m) {
			t.Errorf("MetricName(%q) = %q", name, m)
		}
		if l := LabelName(name); !model.LegacyValidation.IsValidLabelName(l) || strings.HasPrefix(l, "__") {
			t.Errorf("LabelName(%q) = %q", name, l)
		}
	})
}
