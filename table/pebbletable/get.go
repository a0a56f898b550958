package pebbletable

import (
	"bytes"
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prom-hbase/prom-hbase/table"
)

// Get implements table.Table. The rows it returns are the caller's.
func (t *tbl) Get(ctx context.Context, family string, keys [][]byte) ([]table.Row, error) {
	if err := t.db.enter(ctx); err != nil {
		return nil, err
	}
	defer t.db.exit()
	fam := -1
	if family != "" {
		f, err := t.family(family)
		if err != nil {
			return nil, fmt.Errorf("get: %w", err)
		}
		fam = int(f)
	}
	it, err := t.db.pdb.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: t.prefix, UpperBound: t.end})
	if err != nil {
		return nil, fmt.Errorf("get in %q: %w", t.name, err)
	}
	defer it.Close()
	fs := t.fams.Load() // after the iterator: it knows every family the iterator sees
	g := getter{t: t, it: it, fams: fs, cutoffs: t.cutoffs(nil, fs, t.db.nowMillis())}
	rows := make([]table.Row, len(keys))
	for i, key := range keys {
		rows[i].Key = key
		if rows[i].Cells, err = g.row(key, fam); err != nil {
			return nil, fmt.Errorf("get in %q: %w", t.name, err)
		}
	}
	return rows, nil
}

// getter reads the rows of one Get. A row's cells are gathered in scratch,
// then copied into a slab of exactly-sized room; qualifiers and values go to
// byte slabs. Slabs grow geometrically up to a bound, so what a Get
// allocates follows what it returns, whatever the sizes and the order of the
// rows. (Sizing every row from the first ones made a wide first row cost
// its size once per key.)
type getter struct {
	t       *tbl
	it      *pebble.Iterator
	fams    *famSet
	cutoffs []int64
	prefix  []byte
	scratch []table.Cell
	slab    slab
}

// row reads the visible cells of one row, restricted to family fam unless
// it is negative.
func (g *getter) row(key []byte, fam int) ([]table.Cell, error) {
	g.prefix = appendRowPrefix(g.prefix[:0], g.t.id, key)
	seek := g.prefix
	if fam >= 0 {
		seek = append(g.prefix, byte(fam))
	}
	g.scratch = g.scratch[:0]
	unsorted := false
	for g.it.SeekGE(seek); g.it.Valid(); g.it.Next() {
		k := g.it.Key()
		if !bytes.HasPrefix(k, seek) {
			break
		}
		v, err := g.it.ValueAndErr()
		if err != nil {
			return nil, err
		}
		if len(v) < tsLen {
			return nil, fmt.Errorf("corrupt cell value of %d bytes", len(v))
		}
		f := k[len(g.prefix)]
		family, ok := g.fams.name(f)
		if !ok {
			return nil, errFamilyByte(k)
		}
		ts := cellTimestamp(v)
		if ts < g.cutoffs[f] {
			continue
		}
		if n := len(g.scratch); n > 0 && family < g.scratch[n-1].Family {
			unsorted = true
		}
		g.scratch = append(g.scratch, table.Cell{
			Row:       key,
			Family:    family,
			Qualifier: g.slab.bytes(k[len(g.prefix)+1:]),
			Timestamp: ts,
			Value:     g.slab.bytes(v[tsLen:]),
		})
	}
	if err := g.it.Error(); err != nil {
		return nil, err
	}
	if len(g.scratch) == 0 {
		return nil, nil
	}
	if unsorted {
		sortCells(g.scratch)
	}
	cells := g.slab.cells(len(g.scratch))
	copy(cells, g.scratch)
	return cells, nil
}

// slab hands out cells and bytes from shared allocations. A new slab is
// twice the last one, between slabMin and slabMax items, and never smaller
// than the request: the room left unused is under one slab of slabMax.
type slab struct {
	c     []table.Cell
	b     []byte
	nextC int
	nextB int
}

const (
	slabMinCells = 16
	slabMaxCells = 4096
	slabMinBytes = 1 << 10
	slabMaxBytes = 256 << 10
)

func nextSlab(next *int, lo, hi, need int) int {
	n := max(*next, lo)
	*next = min(2*n, hi)
	return max(n, need)
}

// cells returns room for n cells, its capacity n.
func (s *slab) cells(n int) []table.Cell {
	if cap(s.c)-len(s.c) < n {
		s.c = make([]table.Cell, 0, nextSlab(&s.nextC, slabMinCells, slabMaxCells, n))
	}
	out := s.c[len(s.c) : len(s.c)+n : len(s.c)+n]
	s.c = s.c[:len(s.c)+n]
	return out
}

// bytes returns a copy of p, its capacity len(p). An empty p gives an
// empty slice, not nil: a nil qualifier means "the whole family" to Delete.
func (s *slab) bytes(p []byte) []byte {
	if len(p) == 0 {
		return []byte{}
	}
	if cap(s.b)-len(s.b) < len(p) {
		s.b = make([]byte, 0, nextSlab(&s.nextB, slabMinBytes, slabMaxBytes, len(p)))
	}
	start := len(s.b)
	s.b = append(s.b, p...)
	return s.b[start:len(s.b):len(s.b)]
}
