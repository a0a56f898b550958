package hbase

import (
	"bytes"
	"encoding/binary"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

func metaCells(name string, info *pb.RegionInfo, server string, startCode uint64) []hrpc.Cell {
	b, _ := proto.Marshal(info)
	cells := []hrpc.Cell{{Row: []byte(name), Family: []byte("info"), Qualifier: []byte("regioninfo"), Value: append([]byte("PBUF"), b...)}}
	if server != "" {
		cells = append(cells,
			hrpc.Cell{Row: []byte(name), Family: []byte("info"), Qualifier: []byte("server"), Value: []byte(server)},
			hrpc.Cell{Row: []byte(name), Family: []byte("info"), Qualifier: []byte("serverstartcode"), Value: binary.BigEndian.AppendUint64(nil, startCode)})
	}
	return append(cells, hrpc.Cell{Row: []byte(name), Family: []byte("info"), Qualifier: []byte("state"), Value: []byte("OPEN")})
}

func TestParseMetaRow(t *testing.T) {
	name := "ns1:tbl,m,1700000000000.0123456789abcdef0123456789abcdef."
	info := &pb.RegionInfo{RegionId: proto.Uint64(1700000000000), TableName: &pb.TableName{Namespace: []byte("ns1"), Qualifier: []byte("tbl")},
		StartKey: []byte("m"), EndKey: []byte("t")}
	r, err := ParseMetaRow(metaCells(name, info, "127.0.0.1:16020", 99))
	if err != nil {
		t.Fatal(err)
	}
	if r.Table != "ns1:tbl" || string(r.Start) != "m" || string(r.End) != "t" || r.Addr != "127.0.0.1:16020" || r.StartCode != 99 ||
		r.ID != 1700000000000 || string(r.Name) != name || string(r.EncodedName()) != "0123456789abcdef0123456789abcdef" {
		t.Fatalf("%+v", r)
	}
	if !r.Contains([]byte("m")) || !r.Contains([]byte("s\xff")) || r.Contains([]byte("t")) || r.Contains([]byte("l")) {
		t.Error("Contains is wrong at the bounds")
	}
	info.TableName.Namespace = []byte("default")
	info.Split = proto.Bool(true)
	r, err = ParseMetaRow(metaCells("tbl,m,1.x.", info, "", 0))
	if err != nil || r.Table != "tbl" || !r.Split || r.Addr != "" {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := ParseMetaRow([]hrpc.Cell{{Row: []byte("x"), Family: []byte("info"), Qualifier: []byte("regioninfo"), Value: []byte("nope")}}); err == nil {
		t.Error("regioninfo without PBUF accepted")
	}
	info.Split = nil
	info.StartKey, info.EndKey = []byte("t"), []byte("m")
	if r, err := ParseMetaRow(metaCells("tbl,t,1.x.", info, "h:1", 0)); err == nil {
		t.Errorf("region ending before its start accepted: %v", r)
	}
	info.EndKey = []byte("t")
	if r, err := ParseMetaRow(metaCells("tbl,t,1.x.", info, "h:1", 0)); err == nil {
		t.Errorf("empty region accepted: %v", r)
	}
	if _, err := ParseMetaRow([]hrpc.Cell{{Row: []byte("x"), Family: []byte("table"), Qualifier: []byte("state"), Value: []byte{8, 0}}}); err == nil {
		t.Error("row without regioninfo accepted")
	}
}

func TestMetaKey(t *testing.T) {
	if got := metaKey("t1", []byte("row")); !bytes.Equal(got, []byte("t1,row,99999999999999")) {
		t.Fatalf("%q", got)
	}
}

func TestRegionCache(t *testing.T) {
	var c regionCache
	reg := func(start, end, addr string) *RegionInfo {
		return &RegionInfo{Table: "t", Name: []byte("t," + start + ",1.x."), Start: []byte(start), End: []byte(end), Addr: addr}
	}
	a, b, d := reg("", "g", "s1"), reg("g", "p", "s2"), reg("p", "", "s1")
	c.add(b)
	c.add(d)
	c.add(a)
	for row, want := range map[string]*RegionInfo{"": a, "a": a, "g": b, "o\xff": b, "p": d, "zzz": d} {
		if got := c.lookup("t", []byte(row)); got != want {
			t.Errorf("lookup(%q) = %v, want %v", row, got, want)
		}
	}
	if c.lookup("other", []byte("a")) != nil {
		t.Error("lookup in an unknown table")
	}
	// A split of b replaces it.
	b1, b2 := reg("g", "k", "s2"), reg("k", "p", "s2")
	c.add(b1)
	if c.lookup("t", []byte("h")) != b1 || c.lookup("t", []byte("m")) != nil {
		t.Error("after adding the first daughter")
	}
	c.add(b2)
	if c.lookup("t", []byte("m")) != b2 {
		t.Error("after adding the second daughter")
	}
	c.remove(b1)
	if c.lookup("t", []byte("h")) != nil || c.lookup("t", []byte("m")) != b2 {
		t.Error("after remove")
	}
	c.removeServer("s1")
	if c.lookup("t", []byte("a")) != nil || c.lookup("t", []byte("z")) != nil || c.lookup("t", []byte("m")) != b2 {
		t.Error("after removeServer")
	}
	c.removeTable("t")
	if c.lookup("t", []byte("m")) != nil {
		t.Error("after removeTable")
	}
}
