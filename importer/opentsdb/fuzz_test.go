package opentsdb

import (
	"encoding/binary"
	"math"
	"testing"

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
