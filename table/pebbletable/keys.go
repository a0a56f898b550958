package pebbletable

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// All tables share one Pebble keyspace:
//
//	catalog entry: 0x00 'T' <table name>                      -> JSON tableRecord
//	cell:          0x01 <table id: 4, BE> esc(row) 0x00 0x01
//	                    <family index: 1> <qualifier>          -> <timestamp ms: 8, BE> <value>
//
// esc writes a row byte 0x00 as 0x00 0xFF and every other byte as itself, and
// 0x00 0x01 ends the row. The encoding is prefix-free (a row never reads as the
// start of another) and preserves bytewise row order, also when one row is a
// prefix of another: the shorter row's terminator 0x00 0x01 sorts before any
// continuation, be it an escaped zero (0x00 0xFF) or a byte above 0x00. The
// family index is fixed when the family is made and recorded in the catalog:
// CreateTable numbers the families in name order, so cells of a row come out
// sorted by (family name, qualifier); AddFamily gives the added family the
// next free index, so existing keys keep their family, and reads of such a
// table sort each row's cells by family. The qualifier is last and therefore
// needs no escaping.
const (
	catalogPrefix = 0x00
	catalogTable  = 'T'
	cellPrefix    = 0x01

	escMark  = 0x00 // first byte of an escape pair or of the row terminator
	escZero  = 0xFF // 0x00 escMark escZero: a row byte 0x00
	rowEnd   = 0x01 // escMark rowEnd: end of the row
	pastRow  = 0x02 // escMark pastRow: sorts after every cell of the row, before the next row
	tableLen = 5    // cellPrefix + table id
)

// appendTablePrefix appends the prefix shared by all cells of table id.
func appendTablePrefix(dst []byte, id uint32) []byte {
	return binary.BigEndian.AppendUint32(append(dst, cellPrefix), id)
}

// appendEscapedRow appends esc(row), without the terminator.
func appendEscapedRow(dst, row []byte) []byte {
	// Row keys are short and dense in zero bytes (fixed-width big-endian
	// fields), so a plain byte loop beats searching for the zeros.
	// Grown by no more than the key needs: Put writes the key into a
	// slice of Pebble's batch sized to it exactly, which a larger
	// growth would move out of (the batch then held garbage where the
	// key should be, for rows of more than a few dozen bytes).
	dst = slices.Grow(dst, len(row))
	for _, b := range row {
		if b == escMark {
			dst = append(dst, escMark, escZero)
		} else {
			dst = append(dst, b)
		}
	}
	return dst
}

// appendRowPrefix appends the prefix shared by all cells of a row of table id.
func appendRowPrefix(dst []byte, id uint32, row []byte) []byte {
	dst = appendEscapedRow(appendTablePrefix(dst, id), row)
	return append(dst, escMark, rowEnd)
}

// cellKeyLen is the length of the key that appendCellKey writes.
func cellKeyLen(row, qualifier []byte) int {
	return tableLen + len(row) + bytes.Count(row, []byte{escMark}) + 2 + 1 + len(qualifier)
}

// appendCellKey appends the key of the cell (row, family, qualifier) of table id.
func appendCellKey(dst []byte, id uint32, row []byte, family byte, qualifier []byte) []byte {
	dst = appendRowPrefix(dst, id, row)
	dst = append(dst, family)
	return append(dst, qualifier...)
}

// splitCellKey splits what follows the table prefix of a cell key into the
// row prefix length (escaped row and terminator), the row decoded and
// appended to dst, the family index and the qualifier.
func splitCellKey(dst, rest []byte) (row []byte, prefixLen int, family byte, qualifier []byte, ok bool) {
	row = dst
	i := 0
	for {
		j := bytes.IndexByte(rest[i:], escMark)
		if j < 0 || i+j+1 >= len(rest) {
			return row, 0, 0, nil, false
		}
		row = append(row, rest[i:i+j]...)
		i += j
		switch rest[i+1] {
		case escZero:
			row = append(row, escMark)
			i += 2
		case rowEnd:
			i += 2
			if i >= len(rest) {
				return row, 0, 0, nil, false
			}
			return row, i, rest[i], rest[i+1:], true
		default:
			return row, 0, 0, nil, false
		}
	}
}

// prefixSuccessor returns the smallest key greater than every key that starts
// with prefix, or nil when there is none (prefix is all 0xFF).
func prefixSuccessor(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xFF {
			s := append([]byte(nil), prefix[:i+1]...)
			s[i]++
			return s
		}
	}
	return nil
}

// appendCatalogKey appends the catalog key of the table name.
func appendCatalogKey(dst []byte, name string) []byte {
	return append(append(dst, catalogPrefix, catalogTable), name...)
}

// cellValue encodes a stored cell value: the timestamp, then the value.
const tsLen = 8

func putCellValue(dst []byte, ts int64, value []byte) {
	binary.BigEndian.PutUint64(dst, uint64(ts))
	copy(dst[tsLen:], value)
}

func cellTimestamp(v []byte) int64 { return int64(binary.BigEndian.Uint64(v)) }
