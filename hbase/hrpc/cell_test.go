package hrpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

func TestKeyValueRoundTrip(t *testing.T) {
	cells := []Cell{
		{Row: []byte("row"), Family: []byte("f"), Qualifier: []byte("q"), Timestamp: 42, Type: TypePut, Value: []byte("value")},
		{Row: []byte{0, 0xff}, Family: []byte("fam"), Qualifier: nil, Timestamp: LatestTimestamp, Type: TypeDeleteFamily, Value: nil},
		{Row: []byte("r"), Family: nil, Qualifier: []byte("only-qualifier"), Timestamp: -1, Type: TypeDeleteColumn, Value: []byte{}},
		{Row: bytes.Repeat([]byte("x"), MaxRowLen), Family: bytes.Repeat([]byte("y"), MaxFamilyLen), Qualifier: []byte("q"), Timestamp: 1, Type: TypePut, Value: bytes.Repeat([]byte("z"), 1<<16)},
	}
	var block []byte
	for _, c := range cells {
		block = AppendKeyValue(block, c.Row, c.Family, c.Qualifier, c.Timestamp, c.Type, c.Value)
	}
	got, rest, err := DecodeCells(nil, block, len(cells))
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes left", len(rest))
	}
	for i := range cells {
		w, g := cells[i], got[i]
		if !bytes.Equal(w.Row, g.Row) || !bytes.Equal(w.Family, g.Family) || !bytes.Equal(w.Qualifier, g.Qualifier) ||
			w.Timestamp != g.Timestamp || w.Type != g.Type || !bytes.Equal(w.Value, g.Value) {
			t.Errorf("cell %d: got %+v, want %+v", i, g, w)
		}
	}
	// Appending to a decoded slice must not overwrite the next field.
	_ = append(got[0].Row, 'X')
	if !bytes.Equal(got[0].Family, []byte("f")) {
		t.Errorf("append to Row clobbered Family: %q", got[0].Family)
	}
}

// TestKeyValueWireFormat pins the layout byte for byte (HBase's KeyValue).
func TestKeyValueWireFormat(t *testing.T) {
	got := AppendKeyValue(nil, []byte("r"), []byte("f"), []byte("q"), 0x0102030405060708, TypePut, []byte("v"))
	want := []byte{
		0, 0, 0, 24, // 8 + key 15 + value 1
		0, 0, 0, 15, // key length: 2+1+1+1+1+8+1
		0, 0, 0, 1, // value length
		0, 1, 'r', 1, 'f', 'q', 1, 2, 3, 4, 5, 6, 7, 8, 4,
		'v',
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
}

func TestDecodeKeyValueErrors(t *testing.T) {
	good := AppendKeyValue(nil, []byte("row"), []byte("f"), []byte("q"), 1, TypePut, []byte("v"))
	bad := map[string][]byte{
		"short header":   good[:8],
		"truncated":      good[:len(good)-1],
		"total mismatch": func() []byte { b := bytes.Clone(good); binary.BigEndian.PutUint32(b, 99); return b }(),
		"row too long": func() []byte {
			b := bytes.Clone(good)
			binary.BigEndian.PutUint16(b[12:], 200)
			return b
		}(),
		"family too long": func() []byte {
			b := bytes.Clone(good)
			b[12+2+3] = 100
			return b
		}(),
		"key too short": func() []byte {
			b := bytes.Clone(good)
			binary.BigEndian.PutUint32(b[0:], 8+3+uint32(len(good)-12-3))
			binary.BigEndian.PutUint32(b[4:], 3)
			binary.BigEndian.PutUint32(b[8:], uint32(len(good)-12-3))
			return b
		}(),
	}
	for name, b := range bad {
		if _, _, err := DecodeKeyValue(b); !errors.Is(err, ErrCellBlock) {
			t.Errorf("%s: got %v, want ErrCellBlock", name, err)
		}
	}
	if _, _, err := DecodeCells(nil, good, 2); !errors.Is(err, ErrCellBlock) {
		t.Errorf("two cells from a block of one: %v", err)
	}
}

func FuzzDecodeCells(f *testing.F) {
	f.Add(AppendKeyValue(nil, []byte("row"), []byte("f"), []byte("q"), 1, TypePut, []byte("v")), 1)
	f.Add(AppendKeyValue(AppendKeyValue(nil, []byte("a"), nil, nil, 0, TypeDelete, nil), []byte("b"), []byte("f"), []byte("q"), -1, TypePut, []byte("xyz")), 2)
	f.Add([]byte{0, 0, 0, 20, 0, 0, 0, 12, 0, 0, 0, 0}, 1)
	f.Fuzz(func(t *testing.T, block []byte, n int) {
		if n < 0 || n > 1000 {
			return
		}
		cells, rest, err := DecodeCells(nil, block, n)
		if err != nil {
			return
		}
		// Whatever decodes must encode back to the same bytes.
		var again []byte
		for _, c := range cells {
			again = AppendKeyValue(again, c.Row, c.Family, c.Qualifier, c.Timestamp, c.Type, c.Value)
		}
		if !bytes.Equal(again, block[:len(block)-len(rest)]) {
			t.Fatalf("re-encoding differs:\n%x\n%x", again, block[:len(block)-len(rest)])
		}
	})
}

func BenchmarkAppendKeyValue(b *testing.B) {
	row := bytes.Repeat([]byte("r"), 40)
	fam, qual, val := []byte("t"), []byte{0, 1, 2, 3}, []byte{1, 2, 3, 4, 5, 6, 7, 8}
	buf := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if len(buf) > 1<<20-100 {
			buf = buf[:0]
		}
		buf = AppendKeyValue(buf, row, fam, qual, int64(i), TypePut, val)
	}
}

func BenchmarkDecodeCells(b *testing.B) {
	row := bytes.Repeat([]byte("r"), 40)
	var block []byte
	const n = 1000
	for i := 0; i < n; i++ {
		block = AppendKeyValue(block, row, []byte("t"), []byte{0, 1, 2, 3}, int64(i), TypePut, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	}
	cells := make([]Cell, 0, n)
	b.ReportAllocs()
	b.SetBytes(int64(len(block)))
	for i := 0; i < b.N; i++ {
		var err error
		if cells, _, err = DecodeCells(cells[:0], block, n); err != nil {
			b.Fatal(err)
		}
	}
}

// TestQuoteKey: short keys are quoted whole, as %q would; long ones by
// their first bytes and their length, so that an error about a row key of
// 33,000 bytes stays a short line.
func TestQuoteKey(t *testing.T) {
	for _, c := range []struct {
		key  []byte
		want string
	}{
		{nil, `""`},
		{[]byte("row\x00\xff"), `"row\x00\xff"`},
		{bytes.Repeat([]byte("k"), maxQuotedKey), `"` + strings.Repeat("k", maxQuotedKey) + `"`},
		{bytes.Repeat([]byte("k"), maxQuotedKey+1), `"` + strings.Repeat("k", maxQuotedKey) + `"... (65 bytes)`},
	} {
		if got := QuoteKey(c.key); got != c.want {
			t.Errorf("QuoteKey(%d bytes) = %s, want %s", len(c.key), got, c.want)
		}
	}
	m := Mutation{Row: bytes.Repeat([]byte("r"), 33000), Cells: []MutationCell{{Family: []byte("f"), Qualifier: []byte("q")}}}
	err := m.Check()
	if err == nil || !strings.Contains(err.Error(), "33000 bytes exceeds") || len(err.Error()) > 200 {
		t.Fatalf("Check of a 33,000-byte row: %v", err)
	}
}
