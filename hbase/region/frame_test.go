package region

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

func TestConnectionHeader(t *testing.T) {
	b, err := AppendConnectionHeader(nil, hrpc.ClientService, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b[:6], []byte("HBas\x00\x50")) {
		t.Fatalf("preamble %q", b[:6])
	}
	n := binary.BigEndian.Uint32(b[6:])
	if int(n) != len(b)-10 {
		t.Fatalf("length %d for %d bytes", n, len(b)-10)
	}
	var h pb.ConnectionHeader
	if err := proto.Unmarshal(b[10:], &h); err != nil {
		t.Fatal(err)
	}
	if h.GetServiceName() != "ClientService" || h.GetUserInfo().GetEffectiveUser() != "bob" || h.GetCellBlockCodecClass() != hrpc.KeyValueCodec {
		t.Fatalf("%v", &h)
	}
}

// readRequest parses a request frame as a server does.
func readRequest(t testing.TB, frame []byte) (*pb.RequestHeader, []byte, []byte) {
	t.Helper()
	n := binary.BigEndian.Uint32(frame)
	if int(n) != len(frame)-4 {
		t.Fatalf("frame length %d for %d bytes", n, len(frame)-4)
	}
	rest := frame[4:]
	hb, k := protowire.ConsumeBytes(rest)
	if k < 0 {
		t.Fatal("header length")
	}
	var h pb.RequestHeader
	if err := proto.Unmarshal(hb, &h); err != nil {
		t.Fatal(err)
	}
	rest = rest[k:]
	mb, k := protowire.ConsumeBytes(rest)
	if k < 0 {
		t.Fatal("message length")
	}
	return &h, mb, rest[k:]
}

func TestRequestFrame(t *testing.T) {
	cells := hrpc.AppendKeyValue(nil, []byte("r"), []byte("f"), []byte("q"), 1, hrpc.TypePut, []byte("v"))
	call := &hrpc.Call{Method: "Mutate", Priority: hrpc.HighPriority, Request: &pb.MutateRequest{
		Region: hrpc.RegionSpecifier([]byte("t,,1.abc.")), Mutation: &pb.MutationProto{Row: []byte("r")}}, Cells: cells}
	frame, err := AppendRequest([]byte("prefix"), 7, call, 1500)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(frame, []byte("prefix")) {
		t.Fatal("prefix lost")
	}
	h, msg, block := readRequest(t, frame[6:])
	if h.GetCallId() != 7 || h.GetMethodName() != "Mutate" || !h.GetRequestParam() || h.GetPriority() != 200 ||
		h.GetTimeout() != 1500 || int(h.GetCellBlockMeta().GetLength()) != len(cells) {
		t.Fatalf("header %v", h)
	}
	var m pb.MutateRequest
	if err := proto.Unmarshal(msg, &m); err != nil || string(m.GetMutation().GetRow()) != "r" {
		t.Fatalf("message %v %v", &m, err)
	}
	if !bytes.Equal(block, cells) {
		t.Fatal("cell block differs")
	}
}

// appendResponse builds a response frame body (no length prefix) as a
// server does.
func appendResponse(dst []byte, h *pb.ResponseHeader, m proto.Message, cells []byte) []byte {
	if len(cells) > 0 {
		h.CellBlockMeta = &pb.CellBlockMeta{Length: proto.Uint32(uint32(len(cells)))}
	}
	hb, _ := proto.Marshal(h)
	dst = protowire.AppendBytes(dst, hb)
	if m != nil {
		mb, _ := proto.Marshal(m)
		dst = protowire.AppendBytes(dst, mb)
	}
	return append(dst, cells...)
}

func TestParseResponse(t *testing.T) {
	cells := hrpc.AppendKeyValue(nil, []byte("r"), []byte("f"), []byte("q"), 1, hrpc.TypePut, []byte("v"))
	frame := appendResponse(nil, &pb.ResponseHeader{CallId: proto.Uint32(3)},
		&pb.GetResponse{Result: &pb.Result{AssociatedCellCount: proto.Int32(1)}}, cells)
	var r Response
	if err := ParseResponse(frame, &r); err != nil {
		t.Fatal(err)
	}
	var g pb.GetResponse
	if err := proto.Unmarshal(r.Message, &g); err != nil || g.GetResult().GetAssociatedCellCount() != 1 {
		t.Fatalf("%v %v", &g, err)
	}
	if r.Header.GetCallId() != 3 || !bytes.Equal(r.Cells, cells) {
		t.Fatalf("%v %x", &r.Header, r.Cells)
	}

	exc := appendResponse(nil, &pb.ResponseHeader{CallId: proto.Uint32(4), Exception: &pb.ExceptionResponse{
		ExceptionClassName: proto.String(hrpc.NotServingRegion), StackTrace: proto.String("gone")}}, nil, nil)
	if err := ParseResponse(exc, &r); err != nil || r.Header.GetException().GetExceptionClassName() != hrpc.NotServingRegion || r.Message != nil {
		t.Fatalf("%v %v", err, &r.Header)
	}

	for name, bad := range map[string][]byte{
		"empty":          nil,
		"cut header":     frame[:3],
		"cell block big": appendResponse(nil, &pb.ResponseHeader{CallId: proto.Uint32(1), CellBlockMeta: &pb.CellBlockMeta{Length: proto.Uint32(1000)}}, nil, nil),
		"stray bytes":    append(appendResponse(nil, &pb.ResponseHeader{CallId: proto.Uint32(1)}, &pb.GetResponse{}, nil), 0x01),
	} {
		if err := ParseResponse(bad, &r); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: got %v, want ErrFrame", name, err)
		}
	}
}

func FuzzParseResponse(f *testing.F) {
	cells := hrpc.AppendKeyValue(nil, []byte("r"), []byte("f"), []byte("q"), 1, hrpc.TypePut, []byte("v"))
	f.Add(appendResponse(nil, &pb.ResponseHeader{CallId: proto.Uint32(3)}, &pb.ScanResponse{CellsPerResult: []uint32{1}, ScannerId: proto.Uint64(9)}, cells))
	f.Add(appendResponse(nil, &pb.ResponseHeader{CallId: proto.Uint32(4), Exception: &pb.ExceptionResponse{ExceptionClassName: proto.String("x")}}, nil, nil))
	f.Add([]byte{0x02, 0x08, 0x01})
	f.Fuzz(func(t *testing.T, frame []byte) {
		var r Response
		if err := ParseResponse(frame, &r); err != nil {
			return
		}
		// A parsed frame's pieces lie inside it, and a scan answer built
		// on them decodes or fails cleanly.
		if len(r.Cells) > len(frame) || len(r.Message) > len(frame) {
			t.Fatal("pieces larger than the frame")
		}
		var s pb.ScanResponse
		if proto.Unmarshal(r.Message, &s) == nil {
			_, _, _ = hrpc.DecodeScanResults(nil, nil, &s, r.Cells)
		}
	})
}
