package zk

import (
	"errors"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// FuzzParseZnode feeds the meta and master znode decoders what ZooKeeper
// might hold: anything. They must refuse with ErrZnode or give a server a
// client can dial.
func FuzzParseZnode(f *testing.F) {
	sn := &pb.ServerName{HostName: proto.String("rs1.example"), Port: proto.Uint32(16020), StartCode: proto.Uint64(77)}
	f.Add(znode("1234@host", &pb.MetaRegionServer{Server: sn}))
	f.Add(znode("", &pb.Master{Master: sn}))
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
	f.Add([]byte{0xFF, 0, 0, 0, 0, 'P', 'B', 'U', 'F', 0x0a, 0x50})
	f.Fuzz(func(t *testing.T, data []byte) {
		for name, parse := range map[string]func([]byte) (Server, error){"meta": ParseMeta, "master": ParseMaster} {
			s, err := parse(data)
			if err != nil {
				if !errors.Is(err, ErrZnode) {
					t.Fatalf("%s: error %v is not ErrZnode", name, err)
				}
				continue
			}
			if s.Host == "" || s.Port <= 0 || s.Port > 65535 {
				t.Fatalf("%s: accepted server %+v", name, s)
			}
		}
	})
}

// FuzzParseServerName checks that a name is taken only when it says a
// server exactly: printed back as HBase prints it, it parses the same.
func FuzzParseServerName(f *testing.F) {
	for _, s := range []string{"rs1.example,16020,1795474897660", "rs1,0,1", ",1,2", "a,65535,18446744073709551615", "a,b,c,d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		s, err := ParseServerName(name)
		if err != nil {
			if !errors.Is(err, ErrZnode) {
				t.Fatalf("%q: error %v is not ErrZnode", name, err)
			}
			return
		}
		if s.Host == "" || s.Port <= 0 || s.Port > 65535 {
			t.Fatalf("%q: accepted %+v", name, s)
		}
		again, err := ParseServerName(s.Host + "," + strconv.Itoa(s.Port) + "," + strconv.FormatUint(s.StartCode, 10))
		if err != nil || again != s {
			t.Fatalf("%q: parsed %+v, printed back and parsed %+v, %v", name, s, again, err)
		}
	})
}
