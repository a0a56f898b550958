package hbasetable

import (
	"bytes"
	"context"
	"fmt"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/table"
)

// Table is one HBase table.
type Table struct {
	c    *hbase.Client
	name string
}

var (
	_ table.Table     = (*Table)(nil)
	_ table.Compacter = (*Table)(nil)
)

// Compact flushes every region of the table and major-compacts them,
// waiting until the compactions end.
func (t *Table) Compact(ctx context.Context) error {
	if err := t.c.FlushTable(ctx, t.name); err != nil {
		return fmt.Errorf("hbasetable: compact %s: %w", t.name, err)
	}
	if err := t.c.MajorCompactTable(ctx, t.name); err != nil {
		return fmt.Errorf("hbasetable: compact %s: %w", t.name, err)
	}
	return nil
}

// CompactFamily flushes each region, so that what its memstore holds of
// the family reaches files, and queues a major compaction of the family
// in it, which rewrites its files without the deleted cells and their
// markers.
func (t *Table) CompactFamily(ctx context.Context, family string) error {
	if err := t.c.FlushAndCompactFamily(ctx, t.name, family); err != nil {
		return fmt.Errorf("hbasetable: %w", err)
	}
	return nil
}

// mutations groups cells into one mutation per run of cells of one row.
// Rows are usually given together, so this is one mutation per row. The
// mutations and their cells are cut from two allocations: a put of many
// samples is the write path's hot loop.
func mutations(cells []table.Cell, typ func(c *table.Cell) (hrpc.MutationCell, bool)) []*hrpc.Mutation {
	runs := 0
	for i := range cells {
		if i == 0 || !bytes.Equal(cells[i-1].Row, cells[i].Row) {
			runs++
		}
	}
	slab := make([]hrpc.Mutation, runs)
	out := make([]*hrpc.Mutation, runs)
	mcs := make([]hrpc.MutationCell, 0, len(cells))
	k, start := -1, 0
	for i := range cells {
		c := &cells[i]
		if i == 0 || !bytes.Equal(cells[i-1].Row, c.Row) {
			if k >= 0 {
				slab[k].Cells = mcs[start:len(mcs):len(mcs)]
			}
			k, start = k+1, len(mcs)
			slab[k].Row = c.Row
			out[k] = &slab[k]
		}
		if mc, ok := typ(c); ok {
			mcs = append(mcs, mc)
		}
	}
	if k >= 0 {
		slab[k].Cells = mcs[start:len(mcs):len(mcs)]
	}
	return out
}

// Put writes the cells with one batched Multi per region server, shared
// with concurrent Puts and Deletes unless the DB was opened with
// DisableWriteCoalescing. The cells' bytes are the caller's again when Put
// returns, even when it gave up on a cancelled context.
func (t *Table) Put(ctx context.Context, cells []table.Cell) error {
	if len(cells) == 0 {
		return nil
	}
	// Cells of one put nearly always share their family: convert it once.
	var fam string
	var famb []byte
	muts := mutations(cells, func(c *table.Cell) (hrpc.MutationCell, bool) {
		if famb == nil || c.Family != fam {
			fam, famb = c.Family, []byte(c.Family)
		}
		return hrpc.MutationCell{Family: famb, Qualifier: c.Qualifier, Timestamp: c.Timestamp, Type: hrpc.TypePut, Value: c.Value}, true
	})
	for _, m := range muts {
		m.Type = hrpc.MutationPut
	}
	if err := t.c.MutateBatch(ctx, t.name, muts); err != nil {
		return fmt.Errorf("hbasetable: put %d cells into %s: %w", len(cells), t.name, err)
	}
	return nil
}

// Delete removes columns, families or rows, in all versions.
func (t *Table) Delete(ctx context.Context, cells []table.Cell) error {
	if len(cells) == 0 {
		return nil
	}
	muts := mutations(cells, func(c *table.Cell) (hrpc.MutationCell, bool) {
		switch {
		case c.Family == "":
			return hrpc.MutationCell{}, false // the whole row: a delete without cells
		case c.Qualifier == nil:
			return hrpc.MutationCell{Family: []byte(c.Family), Timestamp: hrpc.LatestTimestamp, Type: hrpc.TypeDeleteFamily}, true
		default:
			return hrpc.MutationCell{Family: []byte(c.Family), Qualifier: c.Qualifier, Timestamp: hrpc.LatestTimestamp, Type: hrpc.TypeDeleteColumn}, true
		}
	})
	// A whole-row delete among cells of that row covers the rest.
	var wholeRows map[string]bool
	for _, c := range cells {
		if c.Family == "" {
			if wholeRows == nil {
				wholeRows = make(map[string]bool)
			}
			wholeRows[string(c.Row)] = true
		}
	}
	for _, m := range muts {
		m.Type = hrpc.MutationDelete
		if wholeRows[string(m.Row)] {
			m.Cells = nil
		}
	}
	if err := t.c.MutateBatch(ctx, t.name, muts); err != nil {
		return fmt.Errorf("hbasetable: delete from %s: %w", t.name, err)
	}
	return nil
}

// convert appends the cells as table cells. The byte slices are the
// client's answer buffers, which nothing else refers to; only the family
// needs a string, shared while it repeats.
func convert(dst []table.Cell, cells []hrpc.Cell, fam *string) []table.Cell {
	for i := range cells {
		c := &cells[i]
		if *fam != string(c.Family) {
			*fam = string(c.Family)
		}
		dst = append(dst, table.Cell{Row: c.Row, Family: *fam, Qualifier: c.Qualifier, Timestamp: c.Timestamp, Value: c.Value})
	}
	return dst
}

// Get reads rows with batched Multi gets.
func (t *Table) Get(ctx context.Context, family string, keys [][]byte) ([]table.Row, error) {
	gets := make([]*hrpc.Get, len(keys))
	var fams [][]byte
	if family != "" {
		fams = [][]byte{[]byte(family)}
	}
	for i, k := range keys {
		gets[i] = &hrpc.Get{Row: k, Families: fams}
	}
	res, err := t.c.GetBatch(ctx, t.name, gets)
	if err != nil {
		return nil, fmt.Errorf("hbasetable: get %d rows from %s: %w", len(keys), t.name, err)
	}
	n := 0
	for _, r := range res {
		n += len(r)
	}
	all := make([]table.Cell, 0, n)
	rows := make([]table.Row, len(keys))
	fam := family
	for i, r := range res {
		start := len(all)
		all = convert(all, r, &fam)
		rows[i] = table.Row{Key: keys[i], Cells: all[start:len(all):len(all)]}
	}
	return rows, nil
}

// Increment adds delta to a counter cell.
func (t *Table) Increment(ctx context.Context, row []byte, family string, qualifier []byte, delta int64) (int64, error) {
	n, err := t.c.Increment(ctx, t.name, row, []byte(family), qualifier, delta)
	if err != nil {
		return 0, fmt.Errorf("hbasetable: %w", err)
	}
	return n, nil
}

// CheckAndPut writes put if the cell holds expected (absent when nil).
func (t *Table) CheckAndPut(ctx context.Context, row []byte, family string, qualifier, expected []byte, put []table.Cell) (bool, error) {
	m, err := putMutation(row, put)
	if err != nil {
		return false, err
	}
	ok, err := t.c.CheckAndPut(ctx, t.name, m, []byte(family), qualifier, expected)
	if err != nil {
		return false, fmt.Errorf("hbasetable: %w", err)
	}
	return ok, nil
}

// putMutation makes the put of a conditional write: cells of row only.
func putMutation(row []byte, put []table.Cell) (*hrpc.Mutation, error) {
	m := &hrpc.Mutation{Type: hrpc.MutationPut, Row: row, Cells: make([]hrpc.MutationCell, 0, len(put))}
	for _, c := range put {
		if !bytes.Equal(c.Row, row) {
			return nil, fmt.Errorf("hbasetable: check-and-put of row %s with a cell of row %s", hrpc.QuoteKey(row), hrpc.QuoteKey(c.Row))
		}
		m.Cells = append(m.Cells, hrpc.MutationCell{Family: []byte(c.Family), Qualifier: c.Qualifier, Timestamp: c.Timestamp, Type: hrpc.TypePut, Value: c.Value})
	}
	return m, nil
}

// CheckAndPutBatch applies the conditional puts with one Multi per region
// server. On error, written holds the outcomes known.
func (t *Table) CheckAndPutBatch(ctx context.Context, puts []table.CondPut) ([]bool, error) {
	if len(puts) == 0 {
		return []bool{}, nil
	}
	cps := make([]hbase.CondMutation, len(puts))
	for i := range puts {
		p := &puts[i]
		m, err := putMutation(p.Row, p.Put)
		if err != nil {
			return nil, err
		}
		cps[i] = hbase.CondMutation{Mutation: m, Family: []byte(p.Family), Qualifier: p.Qualifier, Expected: p.Expected}
	}
	written, err := t.c.CheckAndMutateBatch(ctx, t.name, cps)
	if err != nil {
		return written, fmt.Errorf("hbasetable: check-and-put %d rows in %s: %w", len(puts), t.name, err)
	}
	return written, nil
}

// DeleteVersions removes exactly the versions given, with one batched
// Multi per region server.
func (t *Table) DeleteVersions(ctx context.Context, cells []table.Cell) error {
	if len(cells) == 0 {
		return nil
	}
	for i := range cells {
		if cells[i].Timestamp == table.LatestTimestamp || cells[i].Family == "" {
			return fmt.Errorf("hbasetable: delete versions from %s: cell %d: want a family and an exact timestamp", t.name, i)
		}
	}
	muts := mutations(cells, func(c *table.Cell) (hrpc.MutationCell, bool) {
		return hrpc.MutationCell{Family: []byte(c.Family), Qualifier: c.Qualifier, Timestamp: c.Timestamp, Type: hrpc.TypeDelete}, true
	})
	for _, m := range muts {
		m.Type = hrpc.MutationDelete
	}
	if err := t.c.MutateBatch(ctx, t.name, muts); err != nil {
		return fmt.Errorf("hbasetable: delete %d versions from %s: %w", len(cells), t.name, err)
	}
	return nil
}

// versionDelete is the delete mutation of exactly the versions cells (of
// one row, each with a family and an exact timestamp).
func versionDelete(cells []table.Cell) (hrpc.Mutation, error) {
	m := hrpc.Mutation{Type: hrpc.MutationDelete, Cells: make([]hrpc.MutationCell, len(cells))}
	for i := range cells {
		c := &cells[i]
		if c.Timestamp == table.LatestTimestamp || c.Family == "" {
			return m, fmt.Errorf("cell %d: want a family and an exact timestamp", i)
		}
		m.Cells[i] = hrpc.MutationCell{Family: []byte(c.Family), Qualifier: c.Qualifier, Timestamp: c.Timestamp, Type: hrpc.TypeDelete}
	}
	return m, nil
}

// CheckAndDeleteBatch applies the conditional deletions with one Multi per
// region server, each a delete mutation of its row under its condition. On
// error, deleted holds the outcomes known.
func (t *Table) CheckAndDeleteBatch(ctx context.Context, dels []table.CondDelete) ([]bool, error) {
	if len(dels) == 0 {
		return []bool{}, nil
	}
	if err := table.CheckCondDeletes(dels); err != nil {
		return nil, fmt.Errorf("hbasetable: check-and-delete in %s: %w", t.name, err)
	}
	slab := make([]hrpc.Mutation, len(dels))
	cms := make([]hbase.CondMutation, len(dels))
	for i := range dels {
		d := &dels[i]
		var err error
		if slab[i], err = versionDelete(d.Delete); err != nil {
			return nil, fmt.Errorf("hbasetable: check-and-delete in %s, deletion %d: %w", t.name, i, err)
		}
		slab[i].Row = d.Row
		cms[i] = hbase.CondMutation{Mutation: &slab[i], Family: []byte(d.Family), Qualifier: d.Qualifier, Expected: d.Expected}
	}
	deleted, err := t.c.CheckAndMutateBatch(ctx, t.name, cms)
	if err != nil {
		return deleted, fmt.Errorf("hbasetable: check-and-delete %d rows in %s: %w", len(dels), t.name, err)
	}
	return deleted, nil
}
