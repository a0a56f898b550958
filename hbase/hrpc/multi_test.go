package hrpc

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

func TestMulti(t *testing.T) {
	var b Multi
	for i := 0; i < 600; i++ {
		region := []byte("r1")
		if i >= 300 {
			region = []byte("r2")
		}
		m := &Mutation{Type: MutationPut, Row: []byte{byte(i >> 8), byte(i)}, Cells: []MutationCell{{Family: []byte("f"), Type: TypePut, Timestamp: LatestTimestamp}}}
		if i == 5 {
			m.Type, m.Cells = MutationDelete, nil
		}
		b.AddMutation(region, uint32(i), m)
	}
	b.AddGet([]byte("r2"), 600, &pb.Get{Row: []byte("g")})
	call := b.Call(7)
	wire, err := proto.Marshal(call.Request)
	if err != nil {
		t.Fatal(err)
	}
	var req pb.MultiRequest
	if err := proto.Unmarshal(wire, &req); err != nil {
		t.Fatal(err)
	}
	if len(req.RegionAction) != 2 || req.GetNonceGroup() != 7 || len(req.RegionAction[0].Action) != 300 || len(req.RegionAction[1].Action) != 301 {
		t.Fatalf("%d region actions", len(req.RegionAction))
	}
	cells, rest, err := DecodeCells(nil, call.Cells, 599)
	if err != nil || len(rest) != 0 {
		t.Fatalf("cell block: %v, %d bytes left", err, len(rest))
	}
	n := 0
	for _, ra := range req.RegionAction {
		for _, a := range ra.Action {
			i := int(a.GetIndex())
			if i == 600 {
				if string(a.GetGet().GetRow()) != "g" {
					t.Errorf("get action: %v", a)
				}
				continue
			}
			if i != n {
				t.Fatalf("action %d has index %d", n, i)
			}
			m := a.GetMutation()
			wantType, wantCells := pb.MutationProto_PUT, int32(1)
			if i == 5 {
				wantType, wantCells = pb.MutationProto_DELETE, 0
			}
			if m.GetMutateType() != wantType || m.GetAssociatedCellCount() != wantCells || m.GetRow()[1] != byte(i) {
				t.Fatalf("action %d: %v", i, m)
			}
			n++
		}
	}
	if cells[598].Row[1] != byte(599%256) {
		t.Errorf("cells out of action order")
	}
}
