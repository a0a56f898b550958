package pebbletable

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prom-hbase/prom-hbase/table"
)

// modelCell is a cell of the in-memory model the fuzz test checks against.
type modelCell struct {
	row, family, qualifier string
	value                  string
}

func (c modelCell) less(d modelCell) int {
	if r := strings.Compare(c.row, d.row); r != 0 {
		return r
	}
	if r := strings.Compare(c.family, d.family); r != 0 {
		return r
	}
	return strings.Compare(c.qualifier, d.qualifier)
}

// FuzzTableModel runs a program of puts, deletes and scans, decoded from the
// fuzz input, against a table and a sorted-slice model, and compares every
// scan. Rows come from a tiny alphabet around the escape byte so that
// prefixes, zero bytes and 0xFF collide often; some are repeated to up to
// a kilobyte.
func FuzzTableModel(f *testing.F) {
	f.Add([]byte("\x00\x01\x02\x03\x10\x11\x12\x13\x20\x21\x30\x31\x40"))
	f.Add([]byte("\x00\x05\x05\x05\x00\x06\x00\x00\x30\x05\x40\x00\x41\x06\x02"))
	f.Add([]byte("\x00\x00\x00\x01\x00\x07\x07\x00\x20\x07\x40\x07\x00\x42\x00\x07"))
	f.Add([]byte("\x08\xc5\xff\x05\x09\x00\x80\x05\x18\x01\xfe\x05\x30\x00\x00"))
	alphabet := []byte{0x00, 0x01, 'a', 0xFF}
	db := openTest(f, f.TempDir(), Options{SweepInterval: -1})
	n := 0
	f.Fuzz(func(t *testing.T, prog []byte) {
		ctx := context.Background()
		n++
		// Every run gets a table of its own in the one database.
		tt, err := table.EnsureTable(ctx, db, table.TableSpec{Name: fmt.Sprint("model", n), Families: []table.FamilySpec{{Name: "b"}, {Name: "a"}}})
		if err != nil {
			t.Fatal(err)
		}
		var model []modelCell
		pr := progReader(prog)
		next := pr.next
		key := func() string {
			b := next()
			k := make([]byte, 0, 3)
			for i := range int(b>>6) + 1 {
				k = append(k, alphabet[(b>>(2*i))&3])
			}
			return string(k[:int(b>>6)%3+1])
		}
		fam := func(b byte) string { return string(rune('a' + b&1)) }
		for len(pr) > 0 {
			op := next()
			switch op >> 4 % 5 {
			case 0, 1: // put
				c := modelCell{row: key(), family: fam(op), qualifier: key()[:int(op>>1)&1], value: key()}
				if op&8 != 0 {
					// A long row (up to 1 KB), as a UID table's rows of
					// label values are: its key once went unwritten.
					c.row += strings.Repeat(c.row, int(next())*4/len(c.row))
				}
				if err := tt.Put(ctx, []table.Cell{{Row: []byte(c.row), Family: c.family, Qualifier: []byte(c.qualifier), Timestamp: 1, Value: []byte(c.value)}}); err != nil {
					t.Fatal(err)
				}
				i, found := slices.BinarySearchFunc(model, c, modelCell.less)
				if found {
					model[i] = c
				} else {
					model = slices.Insert(model, i, c)
				}
			case 2: // delete a column, a family or a row
				d := table.Cell{Row: []byte(key())}
				switch op & 3 {
				case 1:
					d.Family = fam(op >> 2)
				case 2, 3:
					d.Family, d.Qualifier = fam(op>>2), []byte(key()[:int(op>>3)&1])
				}
				if err := tt.Delete(ctx, []table.Cell{d}); err != nil {
					t.Fatal(err)
				}
				model = slices.DeleteFunc(model, func(c modelCell) bool {
					return c.row == string(d.Row) && (d.Family == "" || c.family == d.Family && (d.Qualifier == nil || c.qualifier == string(d.Qualifier)))
				})
			default: // scan
				opts := table.ScanOptions{FirstCellOnly: op&1 != 0, KeyOnly: op&2 != 0}
				if op&4 != 0 {
					opts.Family = fam(op >> 3)
				}
				b := next()
				if b&1 != 0 {
					opts.Start = []byte(key())
				}
				// Qualifiers are empty or one byte of the alphabet.
				switch b >> 1 & 3 {
				case 1:
					opts.QualifierPrefixes = [][]byte{{0x01}, {0xFF}}
				case 2:
					opts.QualifierPrefixes = [][]byte{{'a'}}
				case 3:
					opts.QualifierPrefixes = [][]byte{{0x00}, {'a'}}
				}
				if b := next(); b&1 != 0 {
					opts.Stop = []byte(key())
				}
				if op&8 != 0 {
					opts.Filter = &table.KeyFilter{Fuzzy: []table.FuzzyKey{{Key: []byte{0, 'a'}, Mask: []byte{1, 0}}}}
				}
				checkModelScan(t, tt, opts, model)
			}
		}
		checkModelScan(t, tt, table.ScanOptions{}, model)
	})
}

// progReader hands out a fuzz program's bytes one by one, then zeros.
type progReader []byte

func (p *progReader) next() byte {
	if len(*p) == 0 {
		return 0
	}
	b := (*p)[0]
	*p = (*p)[1:]
	return b
}

func checkModelScan(t *testing.T, tt table.Table, opts table.ScanOptions, model []modelCell) {
	t.Helper()
	var want []modelCell
	for _, c := range model {
		switch {
		case opts.Start != nil && c.row < string(opts.Start),
			opts.Stop != nil && c.row >= string(opts.Stop),
			opts.Family != "" && c.family != opts.Family,
			opts.Filter != nil && !(len(c.row) >= 2 && c.row[1] == 'a'),
			opts.QualifierPrefixes != nil && !slices.ContainsFunc(opts.QualifierPrefixes, func(p []byte) bool {
				return strings.HasPrefix(c.qualifier, string(p))
			}),
			opts.FirstCellOnly && len(want) > 0 && want[len(want)-1].row == c.row:
			continue
		}
		if opts.KeyOnly {
			c.value = ""
		}
		want = append(want, c)
	}
	sc := tt.Scan(context.Background(), opts)
	defer sc.Close()
	var got []modelCell
	for sc.Next() {
		r := sc.At()
		for _, c := range r.Cells {
			if !bytes.Equal(c.Row, r.Key) {
				t.Fatalf("cell row %q in row %q", c.Row, r.Key)
			}
			got = append(got, modelCell{row: string(c.Row), family: c.Family, qualifier: string(c.Qualifier), value: string(c.Value)})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("scan %+v:\ngot  %q\nwant %q", opts, got, want)
	}
}
