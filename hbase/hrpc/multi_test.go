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

// TestMultiConditional checks that each conditional mutation is a
// RegionAction of its own, carrying its condition, and that actions after it
// do not join it.
func TestMultiConditional(t *testing.T) {
	var b Multi
	m := func(row string) *Mutation {
		return &Mutation{Type: MutationPut, Row: []byte(row), Cells: []MutationCell{{Family: []byte("f"), Type: TypePut, Timestamp: 1, Value: []byte(row)}}}
	}
	b.AddMutation([]byte("r1"), 0, m("a"))
	for i, row := range []string{"b", "c"} {
		cond, err := ValueCondition([]byte(row), []byte("f"), []byte("q"), nil)
		if err != nil {
			t.Fatal(err)
		}
		b.AddCondMutation([]byte("r1"), uint32(1+i), m(row), cond)
	}
	b.AddMutation([]byte("r1"), 3, m("d"))
	b.AddMutation([]byte("r1"), 4, m("e"))
	wire, err := proto.Marshal(b.Call(0).Request)
	if err != nil {
		t.Fatal(err)
	}
	var req pb.MultiRequest
	if err := proto.Unmarshal(wire, &req); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		rows string
		cond string
	}{{"a", ""}, {"b", "b"}, {"c", "c"}, {"de", ""}}
	if len(req.RegionAction) != len(want) {
		t.Fatalf("%d region actions, want %d", len(req.RegionAction), len(want))
	}
	for k, ra := range req.RegionAction {
		rows := ""
		for _, a := range ra.Action {
			rows += string(a.GetMutation().GetRow())
		}
		if rows != want[k].rows || string(ra.GetCondition().GetRow()) != want[k].cond {
			t.Errorf("region action %d: rows %q, condition row %q; want %q, %q", k, rows, ra.GetCondition().GetRow(), want[k].rows, want[k].cond)
		}
	}
	cells, rest, err := DecodeCells(nil, b.Call(0).Cells, 5)
	if err != nil || len(rest) != 0 {
		t.Fatalf("cell block: %v, %d bytes left", err, len(rest))
	}
	for i, c := range cells {
		if string(c.Value) != string(rune('a'+i)) {
			t.Errorf("cell %d is %q: cells out of action order", i, c.Value)
		}
	}
}

// TestMultiKeepsNoReference: the bytes of a mutation may be reused once it
// is added (a write that gave up waiting returns while its Multi may still
// be on its way), whichever way its proto is built.
func TestMultiKeepsNoReference(t *testing.T) {
	var b Multi
	row, q, v := []byte("row-1"), []byte("q"), []byte("value")
	b.AddMutation([]byte("r1"), 0, &Mutation{Type: MutationPut, Row: row, Cells: []MutationCell{{Family: []byte("f"), Qualifier: q, Type: TypePut, Value: v}}})
	b.AddMutation([]byte("r1"), 1, &Mutation{Type: MutationPut, Row: row, Nonce: 7, Cells: []MutationCell{{Family: []byte("f"), Qualifier: q, Type: TypePut, Value: v}}})
	for _, buf := range [][]byte{row, q, v} {
		for i := range buf {
			buf[i] = 'X'
		}
	}
	call := b.Call(0)
	for _, a := range call.Request.(*pb.MultiRequest).RegionAction[0].Action {
		if got := string(a.GetMutation().GetRow()); got != "row-1" {
			t.Errorf("action %d: row %q after the caller's bytes changed, want row-1", a.GetIndex(), got)
		}
	}
	cells, _, err := DecodeCells(nil, call.Cells, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		if string(c.Row) != "row-1" || string(c.Qualifier) != "q" || string(c.Value) != "value" {
			t.Errorf("cell %q/%q = %q after the caller's bytes changed", c.Row, c.Qualifier, c.Value)
		}
	}
}
