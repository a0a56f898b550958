package hrpc

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// Mutation types.
const (
	MutationAppend    = pb.MutationProto_APPEND
	MutationIncrement = pb.MutationProto_INCREMENT
	MutationPut       = pb.MutationProto_PUT
	MutationDelete    = pb.MutationProto_DELETE
)

// MutationCell is one cell of a Mutation. Its Type is TypePut for puts and
// increments, one of the delete types for deletes.
type MutationCell struct {
	Family    []byte
	Qualifier []byte
	Timestamp int64 // LatestTimestamp: the server's clock
	Type      CellType
	Value     []byte
}

// Mutation changes one row. Its cells travel in the cell block.
type Mutation struct {
	Type  pb.MutationProto_MutationType
	Row   []byte
	Cells []MutationCell
	// Nonce, when not zero, lets the server recognise a retried
	// increment or append and apply it once.
	Nonce uint64
	// Durability, when not USE_DEFAULT, overrides the table's WAL
	// durability for this mutation.
	Durability pb.MutationProto_Durability
}

// Check validates the row and families against the KeyValue format.
func (m *Mutation) Check() error {
	if len(m.Row) == 0 {
		return fmt.Errorf("mutation: empty row key")
	}
	for _, c := range m.Cells {
		if err := CheckCell(m.Row, c.Family); err != nil {
			return fmt.Errorf("mutation of row %s: %w", QuoteKey(m.Row), err)
		}
		if len(c.Family) == 0 {
			return fmt.Errorf("mutation of row %s: empty family", QuoteKey(m.Row))
		}
	}
	return nil
}

// Proto builds the MutationProto that announces the cells.
func (m *Mutation) Proto() *pb.MutationProto {
	p := &pb.MutationProto{
		Row:                 m.Row,
		MutateType:          m.Type.Enum(),
		AssociatedCellCount: proto.Int32(int32(len(m.Cells))),
	}
	if m.Nonce != 0 {
		p.Nonce = proto.Uint64(m.Nonce)
	}
	if m.Durability != pb.MutationProto_USE_DEFAULT {
		p.Durability = m.Durability.Enum()
	}
	return p
}

// AppendCells appends the mutation's cells to a cell block.
func (m *Mutation) AppendCells(dst []byte) []byte {
	for i := range m.Cells {
		c := &m.Cells[i]
		dst = AppendKeyValue(dst, m.Row, c.Family, c.Qualifier, c.Timestamp, c.Type, c.Value)
	}
	return dst
}

// CellsSize is the size of the mutation's cells in a cell block.
func (m *Mutation) CellsSize() int {
	n := 0
	for i := range m.Cells {
		c := &m.Cells[i]
		n += 4 + 12 + keyOverhead + len(m.Row) + len(c.Family) + len(c.Qualifier) + len(c.Value)
	}
	return n
}

// NewMutateCall addresses one mutation, optionally conditional, to a region.
func NewMutateCall(region []byte, m *Mutation, cond *pb.Condition, nonceGroup uint64) *Call {
	req := &pb.MutateRequest{Region: RegionSpecifier(region), Mutation: m.Proto(), Condition: cond}
	if m.Nonce != 0 {
		req.NonceGroup = proto.Uint64(nonceGroup)
	}
	return &Call{
		Service:  ClientService,
		Method:   "Mutate",
		Request:  req,
		Cells:    m.AppendCells(make([]byte, 0, m.CellsSize())),
		Response: &pb.MutateResponse{},
	}
}

// ValueCondition builds the condition "cell (row, family, qualifier)
// equals expected". An empty expected also matches an absent cell: that is
// how HBase spells "absent" (and an empty-valued cell matches it too).
func ValueCondition(row, family, qualifier, expected []byte) (*pb.Condition, error) {
	cmp, err := BinaryComparator{Value: expected}.ComparatorProto()
	if err != nil {
		return nil, err
	}
	return &pb.Condition{
		Row: row, Family: family, Qualifier: qualifier,
		CompareType: pb.CompareType_EQUAL.Enum(), Comparator: cmp,
	}, nil
}
