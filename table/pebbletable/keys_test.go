package pebbletable

import (
	"bytes"
	"testing"
)

func FuzzCellKey(f *testing.F) {
	f.Add([]byte("a"), []byte("a\x00"), byte(0), []byte("q"), []byte(""))
	f.Add([]byte("\x00"), []byte("\x00\x00"), byte(255), []byte(""), []byte("\x00"))
	f.Add([]byte("a\x00\xff"), []byte("a\x01"), byte(1), []byte("\xff"), []byte("\x00\x01"))
	f.Add([]byte("ab"), []byte("a\xff"), byte(7), []byte("x"), []byte("x"))
	f.Fuzz(func(t *testing.T, row1, row2 []byte, fam byte, q1, q2 []byte) {
		k1 := appendCellKey(nil, 7, row1, fam, q1)
		k2 := appendCellKey(nil, 7, row2, fam, q2)
		if len(k1) != cellKeyLen(row1, q1) {
			t.Fatalf("cellKeyLen = %d, key has %d bytes", cellKeyLen(row1, q1), len(k1))
		}
		for _, c := range []struct{ key, row, q []byte }{{k1, row1, q1}, {k2, row2, q2}} {
			row, n, gotFam, q, ok := splitCellKey([]byte("junk"), c.key[tableLen:])
			if !ok || !bytes.Equal(row[4:], c.row) || gotFam != fam || !bytes.Equal(q, c.q) {
				t.Fatalf("splitCellKey(%q) = %q, %d, %q, %v; want %q, %d, %q", c.key, row[4:], gotFam, q, ok, c.row, fam, c.q)
			}
			if !bytes.Equal(c.key[:tableLen+n], appendRowPrefix(nil, 7, c.row)) {
				t.Fatalf("row prefix length %d of %q", n, c.key)
			}
		}
		// Keys sort as (row, qualifier) do; a row's cells are contiguous.
		want := bytes.Compare(row1, row2)
		if want == 0 {
			want = bytes.Compare(q1, q2)
		}
		if got := bytes.Compare(k1, k2); got != want {
			t.Fatalf("key order %d, want %d: rows %q %q, qualifiers %q %q", got, want, row1, row2, q1, q2)
		}
		// Scan bounds: esc(start) <= key(row) iff start <= row.
		lower := appendEscapedRow(appendTablePrefix(nil, 7), row2)
		if (bytes.Compare(lower, k1) <= 0) != (bytes.Compare(row2, row1) <= 0) {
			t.Fatalf("bound %q vs key %q disagrees with rows %q vs %q", lower, k1, row2, row1)
		}
		// The key past row1 sorts after all its cells and before any greater row.
		past := appendRowPrefix(nil, 7, row1)
		past[len(past)-1] = pastRow
		if bytes.Compare(k1, past) >= 0 {
			t.Fatalf("past-row key %q not after cell %q", past, k1)
		}
		if bytes.Compare(row1, row2) < 0 && bytes.Compare(past, k2) >= 0 {
			t.Fatalf("past-row key %q of %q not before cell %q of %q", past, row1, k2, row2)
		}
	})
}

func TestSplitCellKeyCorrupt(t *testing.T) {
	for _, k := range []string{"", "abc", "a\x00", "a\x00\x01", "a\x00\x07b"} {
		if _, _, _, _, ok := splitCellKey(nil, []byte(k)); ok {
			t.Errorf("splitCellKey(%q) accepted a corrupt key", k)
		}
	}
}

func TestPrefixSuccessor(t *testing.T) {
	for in, want := range map[string]string{"a": "b", "a\xff": "b", "\x01\x00\x00\x00\x07": "\x01\x00\x00\x00\x08", "\xff\xff": ""} {
		if got := prefixSuccessor([]byte(in)); string(got) != want {
			t.Errorf("prefixSuccessor(%q) = %q, want %q", in, got, want)
		}
	}
}
