package zk

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// fakeZK is a one-znode ZooKeeper server: it opens sessions, answers
// pings, and answers every getData with data.
func fakeZK(t *testing.T, data []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go serveFakeZK(nc, data)
		}
	}()
	return ln.Addr().String()
}

func readPacket(r io.Reader) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(l[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

func writePacket(w io.Writer, b []byte) error {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	_, err := w.Write(append(out, b...))
	return err
}

func serveFakeZK(nc net.Conn, data []byte) {
	defer nc.Close()
	req, err := readPacket(nc)
	if err != nil || len(req) < 16 {
		return
	}
	timeout := binary.BigEndian.Uint32(req[12:16])
	// connect response: protocol version, timeout, session id, password.
	resp := binary.BigEndian.AppendUint32(nil, 0)
	resp = binary.BigEndian.AppendUint32(resp, timeout)
	resp = binary.BigEndian.AppendUint64(resp, 1)
	resp = binary.BigEndian.AppendUint32(resp, 16)
	resp = append(resp, make([]byte, 16)...)
	if writePacket(nc, resp) != nil {
		return
	}
	for {
		req, err := readPacket(nc)
		if err != nil || len(req) < 8 {
			return
		}
		xid := req[:4]
		op := binary.BigEndian.Uint32(req[4:8])
		out := append([]byte(nil), xid...)
		out = binary.BigEndian.AppendUint64(out, 1) // zxid
		out = binary.BigEndian.AppendUint32(out, 0) // no error
		if op == 4 {                                // getData
			out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
			out = append(out, data...)
			out = append(out, make([]byte, 8*4+4*3+8+4*2+8)...) // Stat
		}
		if writePacket(nc, out) != nil {
			return
		}
	}
}

// TestQuorumWithOneUnresolvableHost: a quorum of several ZooKeeper
// servers, one of whose host names does not resolve (a decommissioned
// server, or in Kubernetes a StatefulSet pod that is down: a headless
// service publishes only ready pods), must still serve from the others,
// as ZooKeeper's own client does. With go-zookeeper's own host provider,
// which fails Connect when any one name fails to resolve, every read
// failed (nameHosts hands the names to the dialer instead).
func TestQuorumWithOneUnresolvableHost(t *testing.T) {
	sn := &pb.ServerName{HostName: proto.String("rs1.example"), Port: proto.Uint32(16020), StartCode: proto.Uint64(7)}
	addr := fakeZK(t, znode("1@h", &pb.MetaRegionServer{Server: sn}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The healthy server alone works: the fake is good enough.
	good := New(addr, "")
	defer good.Close()
	if s, err := good.Meta(ctx); err != nil || s.Port != 16020 {
		t.Fatalf("one healthy server: %+v %v", s, err)
	}

	c := New(addr+",zk-2.no-such-host.invalid:2181", "")
	defer c.Close()
	s, err := c.Meta(ctx)
	if err != nil || s.Port != 16020 {
		t.Fatalf("a healthy server and one whose name does not resolve: %+v %v", s, err)
	}
}

// TestNameHostsResolve: a name that does not resolve is left out, a name of
// several addresses gives each of them, an address is kept as given; when
// no name resolves the names themselves are dialled; and after a round of
// servers that all failed (retryStart) the names are resolved again, so a
// quorum back on new addresses under its names is found.
func TestNameHostsResolve(t *testing.T) {
	answers := map[string][]string{"zk-a": {"10.0.0.1", "10.0.0.2"}}
	h := &nameHosts{lookup: func(_ context.Context, host string) ([]string, error) {
		if a, ok := answers[host]; ok {
			return a, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}}
	if err := h.Init([]string{"zk-a:2181", "zk-gone:2181", "10.0.0.9:2182"}); err != nil {
		t.Fatal(err)
	}
	round := func() []string {
		var got []string
		for range h.Len() {
			s, _ := h.Next()
			got = append(got, s)
		}
		slices.Sort(got)
		return got
	}
	if got, want := round(), []string{"10.0.0.1:2181", "10.0.0.2:2181", "10.0.0.9:2182"}; !slices.Equal(got, want) {
		t.Fatalf("first round: %v, want %v", got, want)
	}
	// Nothing connected: the next Next starts a new round, resolved again.
	answers["zk-a"] = []string{"10.0.1.1"}
	s, retry := h.Next()
	if !retry {
		t.Fatal("Next after a failed round did not report retryStart")
	}
	got := append([]string{s}, func() []string {
		var more []string
		for range h.Len() - 1 {
			s, _ := h.Next()
			more = append(more, s)
		}
		return more
	}()...)
	slices.Sort(got)
	if want := []string{"10.0.0.9:2182", "10.0.1.1:2181"}; !slices.Equal(got, want) {
		t.Fatalf("round after the names moved: %v, want %v", got, want)
	}

	none := &nameHosts{lookup: h.lookup}
	if err := none.Init([]string{"zk-gone:2181"}); err != nil {
		t.Fatal(err)
	}
	if s, _ := none.Next(); s != "zk-gone:2181" {
		t.Fatalf("no name resolves: Next = %q, want the name itself", s)
	}
}
