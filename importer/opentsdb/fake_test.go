package opentsdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// memTables is an in-memory HBase for the source: tables of sorted rows.
// It ignores filters (the source's probes read only keys anyway) and
// counts the calls made.
type memTables struct {
	mu     sync.Mutex
	rows   map[string]map[string][]hrpc.Cell // table -> key -> cells
	scans  int
	gets   int
	getErr error
}

func newMemTables() *memTables { return &memTables{rows: map[string]map[string][]hrpc.Cell{}} }

// put adds a cell, qualifiers kept in HBase's (bytewise) order.
func (m *memTables) put(table string, row, family, qual, value []byte, ts int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.rows[table]
	if t == nil {
		t = map[string][]hrpc.Cell{}
		m.rows[table] = t
	}
	cells := slices.DeleteFunc(t[string(row)], func(c hrpc.Cell) bool {
		return bytes.Equal(c.Family, family) && bytes.Equal(c.Qualifier, qual)
	})
	cells = append(cells, hrpc.Cell{Row: slices.Clone(row), Family: family, Qualifier: slices.Clone(qual),
		Value: slices.Clone(value), Timestamp: ts, Type: hrpc.TypePut})
	slices.SortFunc(cells, func(a, b hrpc.Cell) int {
		if c := bytes.Compare(a.Family, b.Family); c != 0 {
			return c
		}
		return bytes.Compare(a.Qualifier, b.Qualifier)
	})
	t[string(row)] = cells
}

func (m *memTables) scan(_ context.Context, table string, s *hrpc.Scan, _ hbase.ScanOptions) rowScanner {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.scans++
	var keys []string
	for k := range m.rows[table] {
		if k >= string(s.Start) && (len(s.Stop) == 0 || k < string(s.Stop)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	sc := &memScanner{}
	for _, k := range keys {
		var cells []hrpc.Cell
		for _, c := range m.rows[table][k] {
			if len(s.Families) == 0 || slices.ContainsFunc(s.Families, func(f []byte) bool { return bytes.Equal(f, c.Family) }) {
				cells = append(cells, c)
			}
		}
		if len(cells) > 0 {
			sc.rows = append(sc.rows, hbase.Row{Key: []byte(k), Cells: cells})
		}
	}
	return sc
}

func (m *memTables) getBatch(_ context.Context, table string, gets []*hrpc.Get) ([][]hrpc.Cell, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	if m.getErr != nil {
		return nil, m.getErr
	}
	out := make([][]hrpc.Cell, len(gets))
	for i, g := range gets {
		out[i] = m.rows[table][string(g.Row)]
	}
	return out, nil
}

type memScanner struct {
	rows []hbase.Row
	i    int
}

func (s *memScanner) Next() bool {
	if s.i >= len(s.rows) {
		return false
	}
	s.i++
	return true
}
func (s *memScanner) At() hbase.Row { return s.rows[s.i-1] }
func (s *memScanner) Err() error    { return nil }
func (s *memScanner) Close() error  { return nil }

// Encoders of OpenTSDB's format, as its TSDB.addPoint and compaction write
// it, for hand-built rows.

func secQual(offset int, flags byte) []byte {
	return binary.BigEndian.AppendUint16(nil, uint16(offset<<secShift)|uint16(flags))
}

func msQual(offsetMs int, flags byte) []byte {
	return binary.BigEndian.AppendUint32(nil, 0xF0000000|uint32(offsetMs)<<msShift|uint32(flags))
}

// intValue encodes v on the fewest bytes, as TSDB.addPoint(long) does.
func intValue(v int64) ([]byte, byte) {
	switch {
	case v == int64(int8(v)):
		return []byte{byte(v)}, 0
	case v == int64(int16(v)):
		return binary.BigEndian.AppendUint16(nil, uint16(v)), 1
	case v == int64(int32(v)):
		return binary.BigEndian.AppendUint32(nil, uint32(v)), 3
	}
	return binary.BigEndian.AppendUint64(nil, uint64(v)), 7
}

func float32Value(v float32) ([]byte, byte) {
	return binary.BigEndian.AppendUint32(nil, math.Float32bits(v)), flagFloat | 3
}

func float64Value(v float64) ([]byte, byte) {
	return binary.BigEndian.AppendUint64(nil, math.Float64bits(v)), flagFloat | 7
}

// compact joins single points' qualifiers and values into one compacted
// column, meta byte included.
func compact(quals, values [][]byte, mixed bool) (q, v []byte) {
	for i := range quals {
		q = append(q, quals[i]...)
		v = append(v, values[i]...)
	}
	if mixed {
		return q, append(v, 1)
	}
	return q, append(v, 0)
}
