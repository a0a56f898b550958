package hbase

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// fakeServer is a region server on loopback that speaks just enough of
// the protocol for routing tests: it serves hbase:meta rows from a
// fakeMeta, and the rows of one table from a sorted list. Frozen, it
// accepts connections and reads requests but answers nothing, as a
// SIGSTOPped server does (the kernel still completes the handshake).
type fakeServer struct {
	t         testing.TB
	ln        net.Listener
	meta      *fakeMeta // where the table's region is
	holdsMeta bool      // whether this server answers for hbase:meta
	rows      []string  // the table's rows, sorted
	frozen    atomic.Bool

	mutates atomic.Int64 // Mutates applied
	mu      sync.Mutex
	scans   map[uint64]int // scanner id -> next row index
	nextID  uint64
	opens   []*pb.Scan // every scan opened here

	multis fakeMultis
}

// fakeMultis is how a fake server answers Multi calls: every mutation is
// applied unless a fault says otherwise.
type fakeMultis struct {
	// arrived receives every Multi request as it arrives, when set (and
	// when it has room).
	arrived chan *pb.MultiRequest
	// hold is how many of the next Multis wait for a token on release
	// before they are answered.
	hold    atomic.Int32
	release chan struct{}
	// busy is how many of the next Multis are answered RegionTooBusy for
	// every region action, applying nothing.
	busy atomic.Int32
	// actionFault, when set, may answer an action with an exception (the
	// action is then not applied).
	actionFault func(row []byte) *pb.NameBytesPair

	mu      sync.Mutex
	seen    map[string]int // row -> mutations of it received
	applied map[string]int // row -> mutations of it applied
}

// counts returns how often row was received and applied.
func (m *fakeMultis) counts(row string) (seen, applied int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen[row], m.applied[row]
}

// fakeMeta is hbase:meta's content: one region of table "t" covering
// every row, on the server named by addr.
type fakeMeta struct {
	addr atomic.Value // string
}

const fakeTable = "t"

var fakeRegion = []byte("t,,1.0123456789abcdef0123456789abcdef.")

func newFakeServer(t testing.TB, meta *fakeMeta, holdsMeta bool, rows []string) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{t: t, ln: ln, meta: meta, holdsMeta: holdsMeta, rows: rows, scans: map[uint64]int{}}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { nc.Close() })
			go s.serve(nc)
		}
	}()
	return s
}

func (s *fakeServer) addr() string { return s.ln.Addr().String() }

func (s *fakeServer) serve(nc net.Conn) {
	r := bufio.NewReader(nc)
	pre := make([]byte, 10)
	if _, err := io.ReadFull(r, pre); err != nil {
		return
	}
	if _, err := io.ReadFull(r, make([]byte, binary.BigEndian.Uint32(pre[6:]))); err != nil {
		return
	}
	var wmu sync.Mutex
	for {
		var lb [4]byte
		if _, err := io.ReadFull(r, lb[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(lb[:]))
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		if s.frozen.Load() {
			continue
		}
		hb, n := protowire.ConsumeBytes(frame)
		var h pb.RequestHeader
		if n < 0 || proto.Unmarshal(hb, &h) != nil {
			return
		}
		mb, _ := protowire.ConsumeBytes(frame[n:])
		answer := func() {
			resp, cells, exc := s.handle(h.GetMethodName(), mb)
			out := appendFakeResponse(&pb.ResponseHeader{CallId: h.CallId, Exception: exc}, resp, cells)
			wmu.Lock()
			_, _ = nc.Write(out)
			wmu.Unlock()
		}
		if h.GetMethodName() == "Multi" {
			go answer() // a held Multi must not hold the calls behind it
			continue
		}
		answer()
	}
}

func appendFakeResponse(h *pb.ResponseHeader, m proto.Message, cells []byte) []byte {
	if len(cells) > 0 {
		h.CellBlockMeta = &pb.CellBlockMeta{Length: proto.Uint32(uint32(len(cells)))}
	}
	var body []byte
	hb, _ := proto.Marshal(h)
	body = protowire.AppendBytes(body, hb)
	if h.Exception == nil {
		mb, _ := proto.Marshal(m)
		body = protowire.AppendBytes(body, mb)
	}
	body = append(body, cells...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func notServing(region []byte) *pb.ExceptionResponse {
	return &pb.ExceptionResponse{ExceptionClassName: proto.String(hrpc.NotServingRegion),
		StackTrace: proto.String(fmt.Sprintf("%s: region %q is not online", hrpc.NotServingRegion, region))}
}

// handle answers one call: a message, its cell block, or an exception.
func (s *fakeServer) handle(method string, msg []byte) (proto.Message, []byte, *pb.ExceptionResponse) {
	switch method {
	case "Get":
		var req pb.GetRequest
		_ = proto.Unmarshal(msg, &req)
		if string(req.GetRegion().GetValue()) != string(metaRegionName) || !s.holdsMeta {
			return nil, nil, notServing(req.GetRegion().GetValue())
		}
		return &pb.GetResponse{Result: &pb.Result{Exists: proto.Bool(false)}}, nil, nil
	case "Mutate":
		var req pb.MutateRequest
		_ = proto.Unmarshal(msg, &req)
		if string(req.GetRegion().GetValue()) != string(fakeRegion) || s.meta.addr.Load() != s.addr() {
			return nil, nil, notServing(req.GetRegion().GetValue())
		}
		s.mutates.Add(1)
		return &pb.MutateResponse{Processed: proto.Bool(true)}, nil, nil
	case "Multi":
		var req pb.MultiRequest
		_ = proto.Unmarshal(msg, &req)
		return s.multi(&req), nil, nil
	case "Scan":
		var req pb.ScanRequest
		_ = proto.Unmarshal(msg, &req)
		if string(req.GetRegion().GetValue()) == string(metaRegionName) {
			return s.metaScan()
		}
		return s.scan(&req)
	}
	return nil, nil, &pb.ExceptionResponse{ExceptionClassName: proto.String("org.apache.hadoop.hbase.DoNotRetryIOException"),
		StackTrace: proto.String("fake server: no method " + method), DoNotRetry: proto.Bool(true)}
}

// metaScan answers a meta lookup with the table's one region.
func (s *fakeServer) metaScan() (proto.Message, []byte, *pb.ExceptionResponse) {
	if !s.holdsMeta {
		return nil, nil, notServing(metaRegionName)
	}
	info := &pb.RegionInfo{RegionId: proto.Uint64(1), TableName: &pb.TableName{Namespace: []byte("default"), Qualifier: []byte(fakeTable)}}
	var block []byte
	cells := metaCells(string(fakeRegion), info, s.meta.addr.Load().(string), 1)
	for _, c := range cells {
		block = hrpc.AppendKeyValue(block, c.Row, c.Family, c.Qualifier, 1, hrpc.TypePut, c.Value)
	}
	return &pb.ScanResponse{CellsPerResult: []uint32{uint32(len(cells))}, MoreResults: proto.Bool(false)}, block, nil
}

// scan opens or continues a scanner over the table's rows.
func (s *fakeServer) scan(req *pb.ScanRequest) (proto.Message, []byte, *pb.ExceptionResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, at := req.GetScannerId(), 0
	if req.Scan != nil {
		if s.meta.addr.Load() != s.addr() {
			return nil, nil, notServing(req.GetRegion().GetValue())
		}
		s.opens = append(s.opens, req.GetScan())
		start := string(req.GetScan().GetStartRow())
		for at < len(s.rows) && (s.rows[at] < start || (s.rows[at] == start && !req.GetScan().GetIncludeStartRow())) {
			at++
		}
		s.nextID++
		id = s.nextID
	} else if pos, ok := s.scans[id]; ok {
		at = pos
	} else {
		return nil, nil, &pb.ExceptionResponse{ExceptionClassName: proto.String(hrpc.UnknownScanner), StackTrace: proto.String("no scanner")}
	}
	if req.GetCloseScanner() {
		delete(s.scans, id)
		return &pb.ScanResponse{}, nil, nil
	}
	resp := &pb.ScanResponse{ScannerId: proto.Uint64(id)}
	var block []byte
	for n := 0; n < int(req.GetNumberOfRows()) && at < len(s.rows); n++ {
		block = hrpc.AppendKeyValue(block, []byte(s.rows[at]), []byte("f"), []byte("q"), 1, hrpc.TypePut, []byte("v"))
		resp.CellsPerResult = append(resp.CellsPerResult, 1)
		at++
	}
	more := at < len(s.rows)
	resp.MoreResults = proto.Bool(more)
	resp.MoreResultsInRegion = proto.Bool(more)
	if more {
		s.scans[id] = at
	} else {
		delete(s.scans, id)
	}
	return resp, block, nil
}

// multi answers a Multi of mutations of the fake region.
func (s *fakeServer) multi(req *pb.MultiRequest) *pb.MultiResponse {
	m := &s.multis
	busy := m.busy.Add(-1) >= 0
	if m.arrived != nil {
		select {
		case m.arrived <- req:
		default:
		}
	}
	if m.hold.Add(-1) >= 0 {
		<-m.release
	}
	resp := &pb.MultiResponse{}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen, m.applied = map[string]int{}, map[string]int{}
	}
	for _, ra := range req.GetRegionAction() {
		res := &pb.RegionActionResult{}
		resp.RegionActionResult = append(resp.RegionActionResult, res)
		for _, a := range ra.GetAction() {
			m.seen[string(a.GetMutation().GetRow())]++
		}
		switch {
		case string(ra.GetRegion().GetValue()) != string(fakeRegion) || s.meta.addr.Load() != s.addr():
			res.Exception = fakeException(hrpc.NotServingRegion, "not here")
			continue
		case busy:
			res.Exception = fakeException(pkgRegionTooBusy, "busy")
			continue
		}
		for _, a := range ra.GetAction() {
			roe := &pb.ResultOrException{Index: a.Index}
			row := a.GetMutation().GetRow()
			if m.actionFault != nil {
				roe.Exception = m.actionFault(row)
			}
			if roe.Exception == nil {
				roe.Result = &pb.Result{}
				m.applied[string(row)]++
			}
			res.ResultOrException = append(res.ResultOrException, roe)
		}
	}
	return resp
}

const pkgRegionTooBusy = "org.apache.hadoop.hbase.RegionTooBusyException"

func fakeException(class, msg string) *pb.NameBytesPair {
	return &pb.NameBytesPair{Name: proto.String(class), Value: []byte(class + ": " + msg)}
}
