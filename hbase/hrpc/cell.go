package hrpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// CellType is the type byte of a KeyValue.
type CellType uint8

// Cell types as HBase writes them in a KeyValue.
const (
	TypePut                 CellType = 4
	TypeDelete              CellType = 8
	TypeDeleteFamilyVersion CellType = 10
	TypeDeleteColumn        CellType = 12
	TypeDeleteFamily        CellType = 14
)

// LatestTimestamp in a cell asks the server to stamp it with its own clock.
const LatestTimestamp int64 = 1<<63 - 1

// KeyValueCodec is the Java class that names the cell-block format below.
const KeyValueCodec = "org.apache.hadoop.hbase.codec.KeyValueCodec"

// Limits of the KeyValue format.
const (
	MaxRowLen    = 1<<15 - 1
	MaxFamilyLen = 1<<7 - 1
)

// Cell is one decoded KeyValue. Its slices point into the cell block it was
// decoded from; copy them to keep them past the block's life.
type Cell struct {
	Row       []byte
	Family    []byte
	Qualifier []byte
	Timestamp int64
	Type      CellType
	Value     []byte
}

// keyOverhead is the fixed part of a KeyValue key: row length (2), family
// length (1), timestamp (8), type (1).
const keyOverhead = 2 + 1 + 8 + 1

// AppendKeyValue appends one cell in KeyValueCodec form:
// u32 total, u32 key length, u32 value length, key, value.
// The caller checks the row and family limits (CheckCell).
func AppendKeyValue(dst, row, family, qualifier []byte, ts int64, typ CellType, value []byte) []byte {
	keyLen := keyOverhead + len(row) + len(family) + len(qualifier)
	dst = binary.BigEndian.AppendUint32(dst, uint32(8+keyLen+len(value)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(keyLen))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(value)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(row)))
	dst = append(dst, row...)
	dst = append(dst, byte(len(family)))
	dst = append(dst, family...)
	dst = append(dst, qualifier...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	dst = append(dst, byte(typ))
	return append(dst, value...)
}

// CheckCell reports whether a row and family fit the KeyValue format.
func CheckCell(row, family []byte) error {
	if len(row) == 0 {
		return errors.New("empty row key")
	}
	if len(row) > MaxRowLen {
		return fmt.Errorf("row key of %d bytes exceeds %d", len(row), MaxRowLen)
	}
	if len(family) > MaxFamilyLen {
		return fmt.Errorf("family of %d bytes exceeds %d", len(family), MaxFamilyLen)
	}
	return nil
}

// ErrCellBlock reports a malformed cell block.
var ErrCellBlock = errors.New("malformed cell block")

// DecodeKeyValue decodes the KeyValue at the start of b and returns it with
// the bytes that follow. It does not allocate.
func DecodeKeyValue(b []byte) (Cell, []byte, error) {
	if len(b) < 12 {
		return Cell{}, nil, fmt.Errorf("%w: %d bytes left, need a 12-byte header", ErrCellBlock, len(b))
	}
	total := uint64(binary.BigEndian.Uint32(b))
	keyLen := uint64(binary.BigEndian.Uint32(b[4:]))
	valLen := uint64(binary.BigEndian.Uint32(b[8:]))
	if total != 8+keyLen+valLen || total+4 > uint64(len(b)) || keyLen < keyOverhead {
		return Cell{}, nil, fmt.Errorf("%w: lengths %d/%d/%d with %d bytes left", ErrCellBlock, total, keyLen, valLen, len(b))
	}
	key := b[12 : 12+keyLen]
	value := b[12+keyLen : 4+total]
	rowLen := uint64(binary.BigEndian.Uint16(key))
	if rowLen+keyOverhead > keyLen {
		return Cell{}, nil, fmt.Errorf("%w: row length %d in key of %d", ErrCellBlock, rowLen, keyLen)
	}
	famLen := uint64(key[2+rowLen])
	qualStart := 3 + rowLen + famLen
	if rowLen+famLen+keyOverhead > keyLen {
		return Cell{}, nil, fmt.Errorf("%w: family length %d in key of %d", ErrCellBlock, famLen, keyLen)
	}
	tsAt := keyLen - 9
	c := Cell{
		Row:       key[2 : 2+rowLen : 2+rowLen],
		Family:    key[3+rowLen : qualStart : qualStart],
		Qualifier: key[qualStart:tsAt:tsAt],
		Timestamp: int64(binary.BigEndian.Uint64(key[tsAt:])),
		Type:      CellType(key[keyLen-1]),
		Value:     value[:len(value):len(value)],
	}
	return c, b[4+total:], nil
}

// DecodeCells appends n cells decoded from the start of block to dst and
// returns dst with the rest of the block.
func DecodeCells(dst []Cell, block []byte, n int) ([]Cell, []byte, error) {
	for i := 0; i < n; i++ {
		var c Cell
		var err error
		c, block, err = DecodeKeyValue(block)
		if err != nil {
			return dst, nil, fmt.Errorf("cell %d of %d: %w", i, n, err)
		}
		dst = append(dst, c)
	}
	return dst, block, nil
}

// maxQuotedKey is the most of a key QuoteKey shows.
const maxQuotedKey = 64

// QuoteKey quotes a row key for an error message: whole when short, else its
// first bytes and its length. A row key may be up to 32 KiB (a label value
// in the UID table), and an error quoting all of it fills a log line.
func QuoteKey(key []byte) string {
	if len(key) <= maxQuotedKey {
		return strconv.Quote(string(key))
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(string(key[:maxQuotedKey])), len(key))
}
