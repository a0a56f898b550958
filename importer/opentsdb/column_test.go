package opentsdb

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/store"
)

const testBase = 1700002800 // an hour boundary

func cat(parts ...[]byte) []byte { return slices.Concat(parts...) }

func TestColumnForms(t *testing.T) {
	i1, f1 := intValue(-7)
	i2, f2 := intValue(1000)
	i4, f4 := intValue(-100000)
	i8, f8 := intValue(1 << 40)
	fl4, ff4 := float32Value(0.5)
	fl8, ff8 := float64Value(0.1)
	ms := int64(testBase) * 1000
	type pt struct {
		T int64
		V float64
	}
	for _, tc := range []struct {
		name string
		q, v []byte
		kind columnKind
		want []pt // nil with kind single/compacted/append: corrupt
	}{
		{"int 1 byte", secQual(1, f1), i1, kindSingle, []pt{{ms + 1000, -7}}},
		{"int 2 bytes", secQual(2, f2), i2, kindSingle, []pt{{ms + 2000, 1000}}},
		{"int 4 bytes", secQual(3, f4), i4, kindSingle, []pt{{ms + 3000, -100000}}},
		{"int 8 bytes", secQual(3599, f8), i8, kindSingle, []pt{{ms + 3599000, 1 << 40}}},
		{"float 4 bytes", secQual(0, ff4), fl4, kindSingle, []pt{{ms, 0.5}}},
		{"float 8 bytes", secQual(0, ff8), fl8, kindSingle, []pt{{ms, 0.1}}},
		// The value's length wins over the qualifier's, as fixQualifierFlags.
		{"int length from value", secQual(5, 7), []byte{3}, kindSingle, []pt{{ms + 5000, 3}}},
		{"legacy 8-byte float flagged 4", secQual(4, flagFloat|3), cat([]byte{0, 0, 0, 0}, fl4), kindSingle, []pt{{ms + 4000, 0.5}}},
		{"legacy float, first bytes set", secQual(4, flagFloat|3), cat([]byte{0, 0, 0, 1}, fl4), kindSingle, nil},
		{"int of 3 bytes", secQual(1, 2), []byte{1, 2, 3}, kindSingle, nil},
		{"float of 2 bytes", secQual(1, flagFloat|1), []byte{1, 2}, kindSingle, nil},
		{"empty value", secQual(1, 0), nil, kindSingle, nil},
		{"ms int", msQual(1234, f2), i2, kindSingle, []pt{{ms + 1234, 1000}}},
		{"ms float", msQual(3599999, ff8), fl8, kindSingle, []pt{{ms + 3599999, 0.1}}},
		{"ms value longer than flags", msQual(1, f1), i2, kindSingle, nil},
		{"2-byte qualifier with the ms nibble", []byte{0xF0, 0x01}, i1, kindSingle, nil},
		{"legacy float flagged 8, value 4", secQual(6, flagFloat|7), fl4, kindSingle, []pt{{ms + 6000, 0.5}}},
		{"compacted seconds", cat(secQual(1, f1), secQual(2, ff8), secQual(10, f8)), cat(i1, fl8, i8, []byte{0}), kindCompacted,
			[]pt{{ms + 1000, -7}, {ms + 2000, 0.1}, {ms + 10000, 1 << 40}}},
		{"compacted mixed", cat(secQual(1, f4), msQual(1500, ff4), secQual(2, f2)), cat(i4, fl4, i2, []byte{1}), kindCompacted,
			[]pt{{ms + 1000, -100000}, {ms + 1500, 0.5}, {ms + 2000, 1000}}},
		{"compacted two seconds", cat(secQual(1, f1), secQual(2, f1)), cat(i1, i1, []byte{0}), kindCompacted,
			[]pt{{ms + 1000, -7}, {ms + 2000, -7}}},
		{"compacted without meta byte", cat(secQual(1, f1), secQual(2, f1)), cat(i1, i1), kindCompacted, nil},
		{"compacted with extra bytes", cat(secQual(1, f1), secQual(2, f1)), cat(i1, i1, []byte{0, 0}), kindCompacted, nil},
		{"compacted value short", cat(secQual(1, f8), secQual(2, f8)), cat(i8, []byte{0}), kindCompacted, nil},
		{"compacted ms cut", cat(secQual(1, f1), []byte{0xF0, 0, 0, 0, 0xF0, 0}), cat(i1, i1, i1, []byte{0}), kindCompacted, nil},
		{"compacted bad int", cat(secQual(1, 2), secQual(2, f1)), cat([]byte{1, 2, 3}, i1, []byte{0}), kindCompacted, nil},
		{"append", []byte{prefixAppend, 0, 0}, cat(secQual(1, f1), i1, msQual(1001, ff8), fl8, secQual(3, f2), i2), kindAppend,
			[]pt{{ms + 1000, -7}, {ms + 1001, 0.1}, {ms + 3000, 1000}}},
		{"append cut", []byte{prefixAppend, 0, 0}, cat(secQual(1, f2), i1), kindAppend, nil},
		{"append cut qualifier", []byte{prefixAppend, 0, 0}, cat(secQual(1, f1), i1, []byte{0xF0, 1}), kindAppend, nil},
		{"annotation", []byte{prefixAnnotation, 0, 5}, []byte(`{"description":"x"}`), kindAnnotation, []pt{}},
		{"ms annotation", []byte{prefixAnnotation, 0, 0, 1, 0}, []byte(`{}`), kindAnnotation, []pt{}},
		{"histogram", []byte{prefixHistogram, 0, 5}, []byte{1, 2, 3}, kindHistogram, []pt{}},
		{"unknown extended", []byte{0x07, 0, 5}, []byte{1}, kindUnknown, []pt{}},
		{"empty qualifier", nil, []byte{1}, kindUnknown, []pt{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pts, kind, err := appendColumn(nil, testBase, tc.q, tc.v, 1, 0)
			if kind != tc.kind {
				t.Errorf("kind %d, want %d", kind, tc.kind)
			}
			if tc.want == nil {
				if !errors.Is(err, errCorrupt) {
					t.Fatalf("want a corrupt-column error, got %v (points %v)", err, pts)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []pt{}
			for _, p := range pts {
				got = append(got, pt{T: p.T, V: p.V})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIntegerBeyondFloatPrecision(t *testing.T) {
	v, flags := intValue(1<<53 + 1)
	pts, _, err := appendColumn(nil, testBase, secQual(0, flags), v, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Rounded to the nearest float64, ties to even: 2^53.
	if pts[0].V != 1<<53 {
		t.Errorf("2^53+1 read as %v", pts[0].V)
	}
	v, flags = intValue(math.MinInt64)
	pts, _, _ = appendColumn(nil, testBase, secQual(0, flags), v, 1, 0)
	if pts[0].V != -(1 << 63) {
		t.Errorf("MinInt64 read as %v", pts[0].V)
	}
}

func cell(q, v []byte, ts int64) hrpc.Cell {
	return hrpc.Cell{Family: familyData, Qualifier: q, Value: v, Timestamp: ts}
}

func TestRowDuplicatesAndOrder(t *testing.T) {
	one, f1 := intValue(1)
	two, _ := intValue(2)
	three, _ := intValue(3)
	four, _ := intValue(4)
	ms := int64(testBase) * 1000
	// A compacted column written at 10 holding 1s..3s, a raw point at 2s
	// written later (20), a millisecond point at 3000 ms written earlier (5),
	// an annotation, and a raw point at 1s written at the same time as
	// the compacted column (the later in the row wins).
	cq, cv := compact([][]byte{secQual(1, f1), secQual(2, f1), secQual(3, f1)}, [][]byte{one, one, one}, false)
	cells := []hrpc.Cell{
		cell(secQual(1, f1), four, 10),
		cell(secQual(2, f1), two, 20),
		cell(cq, cv, 10),
		cell(msQual(3000, f1), three, 5),
		cell([]byte{prefixAnnotation, 0, 1}, []byte("{}"), 10),
	}
	d := rowDecoder{}
	got, err := d.decode(nil, testBase, cells, 0, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Sample{{T: ms + 1000, V: 1}, {T: ms + 2000, V: 2}, {T: ms + 3000, V: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if d.stats.Duplicates != 3 || d.stats.Annotations != 1 || d.stats.Compacted != 1 || d.stats.Columns != 5 || d.stats.Samples != 3 {
		t.Errorf("stats %+v", d.stats)
	}

	// The range cuts, and a corrupt column fails the row or, skipped, is
	// counted.
	cells = append(cells, cell(secQual(9, 2), []byte{1, 2, 3}, 1))
	if _, err := d.decode(nil, testBase, cells, 0, math.MaxInt64); !errors.Is(err, errCorrupt) {
		t.Fatalf("corrupt column: %v", err)
	}
	d = rowDecoder{skipCorrupt: true}
	got, err = d.decode(nil, testBase, cells, ms+1500, ms+2500)
	if err != nil {
		t.Fatal(err)
	}
	if want := []store.Sample{{T: ms + 2000, V: 2}}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if d.stats.Corrupt != 1 || d.stats.OutOfRange != 2 {
		t.Errorf("stats %+v", d.stats)
	}
}
