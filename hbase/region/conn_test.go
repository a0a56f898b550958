package region

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// fakeServer accepts one connection, checks the preamble and header, and
// hands each request to handle, which answers through reply (in any order).
type fakeServer struct {
	ln     net.Listener
	header chan *pb.ConnectionHeader
	conns  chan net.Conn
}

type request struct {
	header *pb.RequestHeader
	msg    []byte
	cells  []byte
}

func newFakeServer(t testing.TB, handle func(req request, reply func(frame []byte))) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{ln: ln, header: make(chan *pb.ConnectionHeader, 1), conns: make(chan net.Conn, 1)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		s.conns <- nc
		r := bufio.NewReader(nc)
		pre := make([]byte, 10)
		if _, err := io.ReadFull(r, pre); err != nil {
			return
		}
		hb := make([]byte, binary.BigEndian.Uint32(pre[6:]))
		if _, err := io.ReadFull(r, hb); err != nil {
			return
		}
		var h pb.ConnectionHeader
		_ = proto.Unmarshal(hb, &h)
		s.header <- &h
		var wmu sync.Mutex
		reply := func(body []byte) {
			wmu.Lock()
			defer wmu.Unlock()
			_, _ = nc.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
			_, _ = nc.Write(body)
		}
		for {
			var lb [4]byte
			if _, err := io.ReadFull(r, lb[:]); err != nil {
				return
			}
			frame := make([]byte, 4+binary.BigEndian.Uint32(lb[:]))
			copy(frame, lb[:])
			if _, err := io.ReadFull(r, frame[4:]); err != nil {
				return
			}
			h, msg, cells := readRequest(t, frame)
			handle(request{h, msg, cells}, reply)
		}
	}()
	return s
}

func getCall(row string) *hrpc.Call {
	return hrpc.NewGetCall([]byte("t,,1.x."), &pb.Get{Row: []byte(row)})
}

// TestConnMultiplexing answers calls in reverse order; each caller must get
// its own answer.
func TestConnMultiplexing(t *testing.T) {
	const n = 20
	var mu sync.Mutex
	var held []request
	srv := newFakeServer(t, func(req request, reply func([]byte)) {
		mu.Lock()
		held = append(held, req)
		if len(held) < n {
			mu.Unlock()
			return
		}
		reqs := held
		mu.Unlock()
		for i := len(reqs) - 1; i >= 0; i-- {
			var g pb.GetRequest
			_ = proto.Unmarshal(reqs[i].msg, &g)
			row := g.GetGet().GetRow()
			cells := hrpc.AppendKeyValue(nil, row, []byte("f"), []byte("q"), 1, hrpc.TypePut, row)
			reply(appendResponse(nil, &pb.ResponseHeader{CallId: reqs[i].header.CallId},
				&pb.GetResponse{Result: &pb.Result{AssociatedCellCount: proto.Int32(1)}}, cells))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, srv.ln.Addr().String(), hrpc.ClientService, Options{User: "u"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h := <-srv.header; h.GetServiceName() != "ClientService" || h.GetUserInfo().GetEffectiveUser() != "u" {
		t.Fatalf("header %v", h)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		row := string(rune('a' + i))
		wg.Go(func() {
			call := getCall(row)
			block, err := c.Call(ctx, call)
			if err != nil {
				errs <- err
				return
			}
			cells, _, err := hrpc.ResultCells(nil, call.Response.(*pb.GetResponse).GetResult(), block)
			if err != nil || len(cells) != 1 || string(cells[0].Value) != row {
				errs <- errors.New("wrong answer for " + row)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestConnExceptionAndLoss(t *testing.T) {
	srv := newFakeServer(t, func(req request, reply func([]byte)) {
		var g pb.GetRequest
		_ = proto.Unmarshal(req.msg, &g)
		switch string(g.GetGet().GetRow()) {
		case "exc":
			reply(appendResponse(nil, &pb.ResponseHeader{CallId: req.header.CallId, Exception: &pb.ExceptionResponse{
				ExceptionClassName: proto.String(hrpc.NotServingRegion), StackTrace: proto.String("not here")}}, nil, nil))
		case "hang":
			// never answered
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, srv.ln.Addr().String(), hrpc.ClientService, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Call(ctx, getCall("exc"))
	var x *hrpc.Exception
	if !errors.As(err, &x) || x.Class != hrpc.NotServingRegion || x.Kind() != hrpc.Relocate {
		t.Fatalf("exception: %v", err)
	}
	// A call whose context ends gets the context's error; the connection
	// stays usable.
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = c.Call(short, getCall("hang"))
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung call: %v", err)
	}
	if c.Err() != nil {
		t.Fatalf("connection closed after a call timed out: %v", c.Err())
	}
	// Losing the connection fails every call in flight, and later ones.
	done := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() { _, err := c.Call(ctx, getCall("hang")); done <- err }()
	}
	time.Sleep(50 * time.Millisecond)
	(<-srv.conns).Close()
	for i := 0; i < 3; i++ {
		var ce *ConnError
		if err := <-done; !errors.As(err, &ce) {
			t.Errorf("call in flight on a lost connection: %v", err)
		}
	}
	<-c.Done()
	var ce *ConnError
	if _, err := c.Call(ctx, getCall("exc")); !errors.As(err, &ce) {
		t.Errorf("call on a closed connection: %v", err)
	}
}
