package zk

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

func znode(id string, m proto.Message) []byte {
	b := []byte{0xFF}
	b = binary.BigEndian.AppendUint32(b, uint32(len(id)))
	b = append(b, id...)
	b = append(b, "PBUF"...)
	pbBytes, _ := proto.Marshal(m)
	return append(b, pbBytes...)
}

func TestParse(t *testing.T) {
	sn := &pb.ServerName{HostName: proto.String("rs1.example"), Port: proto.Uint32(16020), StartCode: proto.Uint64(77)}
	s, err := ParseMeta(znode("1234@host", &pb.MetaRegionServer{Server: sn}))
	if err != nil || s.Addr() != "rs1.example:16020" || s.StartCode != 77 {
		t.Fatalf("meta: %+v %v", s, err)
	}
	s, err = ParseMaster(znode("", &pb.Master{Master: sn}))
	if err != nil || s.Addr() != "rs1.example:16020" {
		t.Fatalf("master: %+v %v", s, err)
	}
	for name, data := range map[string][]byte{
		"empty":     nil,
		"no marker": []byte("PBUF"),
		"id too long": func() []byte {
			b := znode("id", &pb.Master{Master: sn})
			binary.BigEndian.PutUint32(b[1:], 1000)
			return b
		}(),
		"no magic":        append([]byte{0xFF, 0, 0, 0, 0}, "XBUF"...),
		"no server":       znode("id", &pb.Master{Master: &pb.ServerName{HostName: proto.String("")}}),
		"port past 65535": znode("id", &pb.Master{Master: &pb.ServerName{HostName: proto.String("rs1"), Port: proto.Uint32(70000)}}),
		"bad proto":       append([]byte{0xFF, 0, 0, 0, 0, 'P', 'B', 'U', 'F'}, 0x0a, 0x50),
	} {
		if _, err := ParseMaster(data); !errors.Is(err, ErrZnode) {
			t.Errorf("%s: got %v, want ErrZnode", name, err)
		}
	}
}

func TestParseServerName(t *testing.T) {
	s, err := ParseServerName("rs1.example,16020,1795474897660")
	if err != nil || s.Addr() != "rs1.example:16020" || s.StartCode != 1795474897660 {
		t.Fatalf("%+v %v", s, err)
	}
	for _, bad := range []string{"", "rs1,16020", ",16020,1", "rs1,0,1", "rs1,70000,1", "rs1,x,1", "rs1,1,-1", "rs1,1,2,3"} {
		if _, err := ParseServerName(bad); !errors.Is(err, ErrZnode) {
			t.Errorf("%q: got %v, want ErrZnode", bad, err)
		}
	}
}

func TestNewQuorum(t *testing.T) {
	c := New(" a:1, b ,", "")
	if len(c.servers) != 2 || c.servers[0] != "a:1" || c.servers[1] != "b:2181" || c.root != "/hbase" {
		t.Fatalf("%+v", c)
	}
}

func TestLookup(t *testing.T) {
	c := New(hbasetest.ZK(t), hbasetest.ZKRoot())
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	meta, err := c.Meta(ctx)
	if err != nil || meta.Port == 0 {
		t.Fatalf("meta: %+v %v", meta, err)
	}
	master, err := c.Master(ctx)
	if err != nil || master.Port == 0 || master.Port == meta.Port {
		t.Fatalf("master: %+v %v (meta %+v)", master, err, meta)
	}
	rs, err := c.RegionServers(ctx)
	if err != nil || len(rs) == 0 {
		t.Fatalf("region servers: %v %v", rs, err)
	}
	found := false
	for _, s := range rs {
		found = found || s == meta
	}
	if !found {
		t.Fatalf("meta's server %+v (with its start code) not among the live region servers %+v", meta, rs)
	}
	bad := New(hbasetest.ZK(t), "/no-such-root")
	defer bad.Close()
	if _, err := bad.Meta(ctx); err == nil {
		t.Fatal("meta under a missing root: no error")
	}
}
