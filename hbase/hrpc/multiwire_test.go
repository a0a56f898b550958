package hrpc

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// marshalDelimited is what AppendMultiRequest must equal: proto's bytes
// with their length first.
func marshalDelimited(t *testing.T, m *pb.MultiRequest) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return append(protowire.AppendVarint(nil, uint64(len(b))), b...)
}

// randomMultiRequest builds the requests Multi builds, and the optional
// fields it leaves unset or sets, at random.
func randomMultiRequest(rng *rand.Rand) *pb.MultiRequest {
	bytesOf := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	m := &pb.MultiRequest{}
	if rng.IntN(3) == 0 {
		m.NonceGroup = proto.Uint64(rng.Uint64())
	}
	for range rng.IntN(4) {
		ra := &pb.RegionAction{Region: RegionSpecifier(bytesOf(rng.IntN(200)))}
		if rng.IntN(4) == 0 {
			ra.Atomic = proto.Bool(rng.IntN(2) == 0)
		}
		for range rng.IntN(300) {
			a := &pb.Action{}
			if rng.IntN(8) != 0 {
				a.Index = proto.Uint32(rng.Uint32() >> rng.UintN(32))
			}
			if rng.IntN(8) != 0 {
				mp := &pb.MutationProto{}
				if rng.IntN(8) != 0 {
					mp.Row = bytesOf(rng.IntN(300))
				}
				if rng.IntN(8) != 0 {
					mp.MutateType = pb.MutationProto_MutationType(rng.IntN(4)).Enum()
				}
				if rng.IntN(4) == 0 {
					mp.Timestamp = proto.Uint64(rng.Uint64() >> rng.UintN(64))
				}
				if rng.IntN(4) == 0 {
					mp.Durability = pb.MutationProto_Durability(rng.IntN(5)).Enum()
				}
				if rng.IntN(8) != 0 {
					mp.AssociatedCellCount = proto.Int32(int32(rng.Uint32()) >> rng.UintN(32))
				}
				if rng.IntN(4) == 0 {
					mp.Nonce = proto.Uint64(rng.Uint64())
				}
				a.Mutation = mp
			}
			ra.Action = append(ra.Action, a)
		}
		m.RegionAction = append(m.RegionAction, ra)
	}
	return m
}

func TestAppendMultiRequestAsProto(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		m := randomMultiRequest(rng)
		prefix := []byte("prefix")
		got, ok := AppendMultiRequest(prefix, m)
		if !ok {
			t.Fatalf("request %d: not encoded: %v", i, m)
		}
		if want := marshalDelimited(t, m); !bytes.Equal(got[len(prefix):], want) || !bytes.HasPrefix(got, []byte("prefix")) {
			t.Fatalf("request %d: %x, proto gives %x", i, got[len(prefix):], want)
		}
	}
}

// A Multi's own request, mutations over two regions, goes the fast way.
func TestAppendMultiRequestOfMulti(t *testing.T) {
	var b Multi
	for i := range 600 {
		region := []byte("region-a")
		if i >= 300 {
			region = []byte("region-b")
		}
		b.AddMutation(region, uint32(i), &Mutation{Row: []byte{byte(i), byte(i >> 8)}, Type: MutationPut,
			Cells: []MutationCell{{Family: []byte("r"), Qualifier: []byte("q"), Timestamp: 1, Type: TypePut, Value: []byte("v")}}})
	}
	req := b.Call(7).Request.(*pb.MultiRequest)
	got, ok := AppendMultiRequest(nil, req)
	if !ok || !bytes.Equal(got, marshalDelimited(t, req)) {
		t.Fatalf("a Multi's request: ok %v, bytes differ from proto's", ok)
	}
}

// What it does not encode it leaves to proto, appending nothing.
func TestAppendMultiRequestDeclines(t *testing.T) {
	region := RegionSpecifier([]byte("r"))
	for name, m := range map[string]*pb.MultiRequest{
		"get":          {RegionAction: []*pb.RegionAction{{Region: region, Action: []*pb.Action{{Get: &pb.Get{Row: []byte("x")}}}}}},
		"condition":    {RegionAction: []*pb.RegionAction{{Region: region, Condition: &pb.Condition{Row: []byte("x")}}}},
		"column value": {RegionAction: []*pb.RegionAction{{Region: region, Action: []*pb.Action{{Mutation: &pb.MutationProto{ColumnValue: []*pb.MutationProto_ColumnValue{{Family: []byte("f")}}}}}}}},
		"no region":    {RegionAction: []*pb.RegionAction{{}}},
		"nil action":   {RegionAction: []*pb.RegionAction{{Region: region, Action: []*pb.Action{nil}}}},
	} {
		if got, ok := AppendMultiRequest([]byte("x"), m); ok || string(got) != "x" {
			t.Errorf("%s: encoded (%v, %q), want it declined", name, ok, got)
		}
	}
}

func BenchmarkAppendMultiRequest(b *testing.B) {
	var mb Multi
	for i := range 2000 {
		row := []byte("\x07metricHOURtagktagvtagktagv0000")
		row[len(row)-1] = byte(i)
		mb.AddMutation([]byte("region"), uint32(i), &Mutation{Row: row, Type: MutationPut,
			Cells: []MutationCell{{Family: []byte("r"), Qualifier: []byte("qq"), Timestamp: 1, Type: TypePut, Value: []byte("12345678")}}})
	}
	req := mb.Call(0).Request.(*pb.MultiRequest)
	var buf []byte
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = AppendMultiRequest(buf[:0], req)
		}
	})
	b.Run("proto", func(b *testing.B) {
		b.ReportAllocs()
		o := proto.MarshalOptions{}
		for b.Loop() {
			buf = protowire.AppendVarint(buf[:0], uint64(o.Size(req)))
			buf, _ = o.MarshalAppend(buf, req)
		}
	})
}
