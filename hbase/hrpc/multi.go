package hrpc

import (
	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// Multi collects the actions for one server: per region, mutations and
// gets, in one MultiRequest with one cell block in action order.
//
// A Multi keeps no reference to the mutations added to it: their cells
// are copied into the cell block and their rows into the Multi's own
// buffer, so a caller may reuse a mutation's bytes once it is added, even
// while the Multi is still on its way. (Gets are kept as given.)
type Multi struct {
	req   pb.MultiRequest
	cells []byte
	rows  []byte // copies of the mutations' rows
	last  []byte // region name of the last RegionAction

	// Slabs the per-action messages are cut from: one allocation per
	// slabSize actions instead of several per action.
	actions   []pb.Action
	mutations []pb.MutationProto
	indexes   []uint32
}

const slabSize = 256

// mutationTypes and cellCounts are shared, never written, pointer targets
// for the optional fields of MutationProto.
var (
	mutationTypes = [...]pb.MutationProto_MutationType{MutationAppend, MutationIncrement, MutationPut, MutationDelete}
	cellCounts    = func() (c [256]int32) {
		for i := range c {
			c[i] = int32(i)
		}
		return c
	}()
)

func (b *Multi) action(index uint32) *pb.Action {
	if len(b.actions) == cap(b.actions) {
		b.actions = make([]pb.Action, 0, slabSize)
		b.indexes = make([]uint32, 0, slabSize)
	}
	b.actions = b.actions[:len(b.actions)+1]
	b.indexes = append(b.indexes, index)
	a := &b.actions[len(b.actions)-1]
	a.Index = &b.indexes[len(b.indexes)-1]
	return a
}

// mutationProto is Mutation.Proto without allocations of its own.
func (b *Multi) mutationProto(m *Mutation) *pb.MutationProto {
	if m.Nonce != 0 || m.Durability != pb.MutationProto_USE_DEFAULT || int(m.Type) >= len(mutationTypes) || len(m.Cells) >= len(cellCounts) {
		p := m.Proto()
		p.Row = b.copyRow(m.Row)
		return p
	}
	if len(b.mutations) == cap(b.mutations) {
		b.mutations = make([]pb.MutationProto, 0, slabSize)
	}
	b.mutations = b.mutations[:len(b.mutations)+1]
	p := &b.mutations[len(b.mutations)-1]
	p.Row = b.copyRow(m.Row)
	p.MutateType = &mutationTypes[m.Type]
	p.AssociatedCellCount = &cellCounts[len(m.Cells)]
	return p
}

// copyRow returns a copy of row in the Multi's row buffer, which grows by
// slabs: rows copied before keep their place.
func (b *Multi) copyRow(row []byte) []byte {
	if cap(b.rows)-len(b.rows) < len(row) {
		b.rows = make([]byte, 0, max(4096, len(row)))
	}
	at := len(b.rows)
	b.rows = append(b.rows, row...)
	return b.rows[at:len(b.rows):len(b.rows)]
}

// region returns the RegionAction for name, reusing the last one when
// consecutive actions go to the same region.
func (b *Multi) region(name []byte) *pb.RegionAction {
	n := len(b.req.RegionAction)
	if n > 0 && string(b.last) == string(name) {
		return b.req.RegionAction[n-1]
	}
	ra := &pb.RegionAction{Region: RegionSpecifier(name)}
	b.req.RegionAction = append(b.req.RegionAction, ra)
	b.last = name
	return ra
}

// AddMutation adds a mutation; index is echoed in its result.
func (b *Multi) AddMutation(region []byte, index uint32, m *Mutation) {
	ra := b.region(region)
	a := b.action(index)
	a.Mutation = b.mutationProto(m)
	ra.Action = append(ra.Action, a)
	b.cells = m.AppendCells(b.cells)
}

// AddCondMutation adds a mutation applied only if cond holds, as its own
// RegionAction: HBase checks one condition per RegionAction and answers
// with the RegionActionResult's processed flag, echoing index 0 rather
// than index. The next action of any kind starts a new RegionAction.
func (b *Multi) AddCondMutation(region []byte, index uint32, m *Mutation, cond *pb.Condition) {
	ra := &pb.RegionAction{Region: RegionSpecifier(region), Condition: cond}
	b.req.RegionAction = append(b.req.RegionAction, ra)
	b.last = nil
	a := b.action(index)
	a.Mutation = b.mutationProto(m)
	ra.Action = append(ra.Action, a)
	b.cells = m.AppendCells(b.cells)
}

// AddGet adds a get; index is echoed in its result.
func (b *Multi) AddGet(region []byte, index uint32, g *pb.Get) {
	ra := b.region(region)
	a := b.action(index)
	a.Get = g
	ra.Action = append(ra.Action, a)
}

// Grow makes room for n more bytes of cells.
func (b *Multi) Grow(n int) {
	if cap(b.cells)-len(b.cells) < n {
		c := make([]byte, len(b.cells), len(b.cells)+n)
		copy(c, b.cells)
		b.cells = c
	}
}

// Len is the number of region actions.
func (b *Multi) Len() int { return len(b.req.RegionAction) }

// Call returns the call. The results come back as RegionActionResults in
// the order of the region actions.
func (b *Multi) Call(nonceGroup uint64) *Call {
	if nonceGroup != 0 {
		b.req.NonceGroup = proto.Uint64(nonceGroup)
	}
	return &Call{
		Service:  ClientService,
		Method:   "Multi",
		Request:  &b.req,
		Cells:    b.cells,
		Response: &pb.MultiResponse{},
	}
}
