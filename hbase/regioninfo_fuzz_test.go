package hbase

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// FuzzParseMetaRow feeds the hbase:meta row decoder any regioninfo value,
// server and start code. A row it takes must give a region a lookup can
// trust: its own name, the server as written, and a key range that holds
// its start key.
func FuzzParseMetaRow(f *testing.F) {
	info, _ := proto.Marshal(&pb.RegionInfo{RegionId: proto.Uint64(1700000000000),
		TableName: &pb.TableName{Namespace: []byte("ns1"), Qualifier: []byte("tbl")}, StartKey: []byte("m"), EndKey: []byte("t")})
	f.Add([]byte("ns1:tbl,m,1700000000000.0123456789abcdef0123456789abcdef."), append([]byte("PBUF"), info...), "127.0.0.1:16020", []byte{0, 0, 0, 0, 0, 0, 0, 99})
	inverted, _ := proto.Marshal(&pb.RegionInfo{TableName: &pb.TableName{Qualifier: []byte("tbl")}, StartKey: []byte("t"), EndKey: []byte("m")})
	f.Add([]byte("tbl,t,1.x."), append([]byte("PBUF"), inverted...), "h:1", []byte(nil))
	f.Add([]byte("x"), []byte("PBUF"), "", []byte(nil))
	f.Add([]byte("x"), []byte("nope"), "h:1", []byte{1})
	f.Fuzz(func(t *testing.T, row, regionInfo []byte, server string, startCode []byte) {
		cells := []hrpc.Cell{
			{Row: row, Family: []byte("info"), Qualifier: []byte("regioninfo"), Value: regionInfo},
			{Row: row, Family: []byte("info"), Qualifier: []byte("server"), Value: []byte(server)},
			{Row: row, Family: []byte("info"), Qualifier: []byte("serverstartcode"), Value: startCode},
		}
		r, err := ParseMetaRow(cells)
		if err != nil {
			return
		}
		if !bytes.Equal(r.Name, row) || r.Addr != server {
			t.Fatalf("row %q server %q: parsed %v", row, server, r)
		}
		if !r.Contains(r.Start) {
			t.Fatalf("accepted %v, which does not hold its own start key", r)
		}
		_ = r.EncodedName()
		_ = r.String()
	})
}
