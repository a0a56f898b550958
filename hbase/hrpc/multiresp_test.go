package hrpc

import (
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// randomMultiResponse builds what a region server answers a Multi of
// mutations, with the optional fields set or not at random; exceptions
// makes some results-or-exceptions and region action results exceptions,
// which UnmarshalMultiResponse leaves to proto.
func randomMultiResponse(rng *rand.Rand, exceptions bool) *pb.MultiResponse {
	m := &pb.MultiResponse{}
	if rng.IntN(4) == 0 {
		m.Processed = proto.Bool(rng.IntN(2) == 0)
	}
	for range rng.IntN(4) {
		rar := &pb.RegionActionResult{}
		if rng.IntN(4) == 0 {
			rar.Processed = proto.Bool(rng.IntN(2) == 0)
		}
		if exceptions && rng.IntN(8) == 0 {
			rar.Exception = &pb.NameBytesPair{Name: proto.String("org.apache.hadoop.hbase.NotServingRegionException")}
		}
		for range rng.IntN(300) {
			roe := &pb.ResultOrException{}
			if rng.IntN(10) > 0 {
				roe.Index = proto.Uint32(rng.Uint32N(1 << uint(rng.IntN(32))))
			}
			switch rng.IntN(10) {
			case 0:
			case 1:
				roe.Result = &pb.Result{AssociatedCellCount: proto.Int32(rng.Int32()), Exists: proto.Bool(rng.IntN(2) == 0),
					Stale: proto.Bool(rng.IntN(2) == 0), Partial: proto.Bool(rng.IntN(2) == 0)}
			default:
				roe.Result = &pb.Result{} // a put's answer
			}
			if exceptions && rng.IntN(50) == 0 {
				roe.Exception = &pb.NameBytesPair{Name: proto.String("org.apache.hadoop.hbase.RegionTooBusyException"), Value: []byte("busy")}
			}
			rar.ResultOrException = append(rar.ResultOrException, roe)
		}
		m.RegionActionResult = append(m.RegionActionResult, rar)
	}
	return m
}

// withLoadStats appends the field HBase adds to every Multi's answer and
// the generated MultiResponse does not declare (regionStatistics, 3), empty
// or not.
func withLoadStats(rng *rand.Rand, b []byte) []byte {
	stats := protowire.AppendTag(nil, 1, protowire.BytesType)
	stats = protowire.AppendBytes(stats, []byte{1, 1, 'r'})
	if rng.IntN(2) == 0 {
		stats = nil
	}
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	return protowire.AppendBytes(b, stats)
}

// checkAsProto: whatever UnmarshalMultiResponse decodes equals what
// proto.Unmarshal decodes from the same bytes, unknown fields included;
// what it declines leaves the message as it was.
func checkAsProto(t *testing.T, b []byte) (decoded bool) {
	t.Helper()
	want := &pb.MultiResponse{}
	wantErr := proto.Unmarshal(b, want)
	got := &pb.MultiResponse{Processed: proto.Bool(true)}
	if !UnmarshalMultiResponse(b, got) {
		if !proto.Equal(got, &pb.MultiResponse{Processed: proto.Bool(true)}) {
			t.Fatalf("declined %x but changed the message: %v", b, got)
		}
		return false
	}
	if wantErr != nil {
		t.Fatalf("decoded %x, which proto refuses: %v", b, wantErr)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("decoded %x as\n%v\nproto:\n%v", b, got, want)
	}
	return true
}

func TestUnmarshalMultiResponseAsProto(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	decoded := 0
	for i := range 2000 {
		m := randomMultiResponse(rng, i%2 == 1)
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if rng.IntN(2) == 0 {
			b = withLoadStats(rng, b)
		}
		if checkAsProto(t, b) {
			decoded++
		}
		if i%2 == 0 && !checkAsProto(t, b) {
			t.Fatalf("declined an answer without exceptions: %v", m)
		}
	}
	if decoded < 1000 {
		t.Errorf("decoded %d of 2000 answers, want at least the 1000 without exceptions", decoded)
	}
}

// TestUnmarshalMultiResponseDeclines: the forms left to proto.
func TestUnmarshalMultiResponseDeclines(t *testing.T) {
	marshal := func(m *pb.MultiResponse) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	roe := func(r *pb.ResultOrException) []byte {
		return marshal(&pb.MultiResponse{RegionActionResult: []*pb.RegionActionResult{{ResultOrException: []*pb.ResultOrException{r}}}})
	}
	// A result with a field the generated Result does not declare.
	odd := protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 1)
	odd = protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), odd)
	odd = protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), odd)
	odd = protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), odd)
	for name, b := range map[string][]byte{
		"region exception":                 marshal(&pb.MultiResponse{RegionActionResult: []*pb.RegionActionResult{{Exception: &pb.NameBytesPair{Name: proto.String("x")}}}}),
		"action exception":                 roe(&pb.ResultOrException{Index: proto.Uint32(1), Exception: &pb.NameBytesPair{Name: proto.String("x")}}),
		"cells in the message":             roe(&pb.ResultOrException{Result: &pb.Result{Cell: []*pb.Cell{{Row: []byte("r")}}}}),
		"region action result as a varint": protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1),
		"truncated":                        marshal(randomMultiResponse(rand.New(rand.NewPCG(3, 4)), false))[:7],
		"unknown field in a result":        odd,
	} {
		if checkAsProto(t, b) {
			t.Errorf("%s: decoded, want it left to proto", name)
		}
	}
}

// FuzzUnmarshalMultiResponse: on any bytes, UnmarshalMultiResponse either
// declines or agrees with proto.
func FuzzUnmarshalMultiResponse(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 8 {
		b, err := proto.Marshal(randomMultiResponse(rng, i%2 == 1))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(withLoadStats(rng, b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAsProto(t, b)
	})
}

// BenchmarkUnmarshalMultiResponse: the answer to a Multi of 200 puts in one
// region, as HBase sends it.
func BenchmarkUnmarshalMultiResponse(b *testing.B) {
	rar := &pb.RegionActionResult{}
	for i := range 200 {
		rar.ResultOrException = append(rar.ResultOrException, &pb.ResultOrException{Index: proto.Uint32(uint32(i)), Result: &pb.Result{}})
	}
	msg, err := proto.Marshal(&pb.MultiResponse{RegionActionResult: []*pb.RegionActionResult{rar}})
	if err != nil {
		b.Fatal(err)
	}
	msg = withLoadStats(rand.New(rand.NewPCG(1, 1)), msg)
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m pb.MultiResponse
			if !UnmarshalMultiResponse(msg, &m) {
				b.Fatal("declined")
			}
		}
	})
	b.Run("proto", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m pb.MultiResponse
			if err := proto.Unmarshal(msg, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
