package region

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// answerRow makes a fake server answer Gets of one row only; every other
// call waits forever, as on a server whose handlers are all busy.
func answerRow(row string) func(req request, reply func([]byte)) {
	return func(req request, reply func([]byte)) {
		var g pb.GetRequest
		_ = proto.Unmarshal(req.msg, &g)
		if string(g.GetGet().GetRow()) == row {
			reply(appendResponse(nil, &pb.ResponseHeader{CallId: req.header.CallId}, &pb.GetResponse{}, nil))
		}
	}
}

// TestConnStalled: a server that accepts the connection and never answers
// (SIGSTOP, a cut cable) gets its connection closed after StallTimeout,
// every call in flight failing with ErrStalled, long before their own
// deadlines.
func TestConnStalled(t *testing.T) {
	for _, withProbe := range []bool{false, true} {
		t.Run(map[bool]string{false: "no probe", true: "unanswered probe"}[withProbe], func(t *testing.T) {
			srv := newFakeServer(t, answerRow("never asked"))
			opts := Options{StallTimeout: 300 * time.Millisecond}
			if withProbe {
				opts.Probe = func() *hrpc.Call { return getCall("probe") }
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := Dial(ctx, srv.ln.Addr().String(), hrpc.ClientService, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			done := make(chan error, 3)
			for range 3 {
				go func() { _, err := c.Call(ctx, getCall("hang")); done <- err }()
			}
			for range 3 {
				var ce *ConnError
				if err := <-done; !errors.As(err, &ce) || !errors.Is(err, ErrStalled) {
					t.Fatalf("call on a silent server: %v", err)
				}
			}
			if ctx.Err() != nil {
				t.Fatal("the calls ran into their own deadline")
			}
			if !errors.Is(c.Err(), ErrStalled) {
				t.Fatalf("connection error %v, want ErrStalled", c.Err())
			}
		})
	}
}

// TestConnSlowButAlive: a server that answers the probe but not a slow
// call keeps its connection; the slow call ends with its own context.
func TestConnSlowButAlive(t *testing.T) {
	srv := newFakeServer(t, answerRow("probe"))
	opts := Options{StallTimeout: 100 * time.Millisecond, Probe: func() *hrpc.Call { return getCall("probe") }}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, srv.ln.Addr().String(), hrpc.ClientService, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	slow, cancelSlow := context.WithTimeout(ctx, 10*opts.StallTimeout)
	defer cancelSlow()
	if _, err := c.Call(slow, getCall("slow")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow call: %v, want its own deadline", err)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("a connection whose server answered probes was closed: %v", err)
	}
	if _, err := c.Call(ctx, getCall("probe")); err != nil {
		t.Fatalf("call after the slow one: %v", err)
	}
}

// TestConnIdleIsNotStalled: silence without calls waiting is no stall.
func TestConnIdleIsNotStalled(t *testing.T) {
	srv := newFakeServer(t, answerRow("a"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, srv.ln.Addr().String(), hrpc.ClientService, Options{StallTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-c.Done():
		t.Fatalf("idle connection closed: %v", c.Err())
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := c.Call(ctx, getCall("a")); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkConnCall: one call's round trip on a connection with the stall
// watch on, against a fake server that answers at once: the cost of the
// bookkeeping (send time, last-read time) on the hot path.
func BenchmarkConnCall(b *testing.B) {
	srv := newFakeServer(b, answerRow("a"))
	ctx := context.Background()
	c, err := Dial(ctx, srv.ln.Addr().String(), hrpc.ClientService,
		Options{StallTimeout: time.Second, Probe: func() *hrpc.Call { return getCall("a") }})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Call(ctx, getCall("a")); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestDialVerify: with Verify, a server that completes the handshake but
// answers nothing fails the dial with ErrStalled; one that answers the
// probe, even with an exception, is connected to.
func TestDialVerify(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := Options{Verify: 200 * time.Millisecond, Probe: func() *hrpc.Call { return getCall("probe") }}

	silent := newFakeServer(t, answerRow("never asked"))
	if _, err := Dial(ctx, silent.ln.Addr().String(), hrpc.ClientService, opts); !errors.Is(err, ErrStalled) {
		t.Fatalf("dial to a silent server: %v, want ErrStalled", err)
	}

	alive := newFakeServer(t, func(req request, reply func([]byte)) {
		reply(appendResponse(nil, &pb.ResponseHeader{CallId: req.header.CallId, Exception: &pb.ExceptionResponse{
			ExceptionClassName: proto.String(hrpc.NotServingRegion), StackTrace: proto.String("not here")}}, nil, nil))
	})
	c, err := Dial(ctx, alive.ln.Addr().String(), hrpc.ClientService, opts)
	if err != nil {
		t.Fatalf("dial to a server answering with an exception: %v", err)
	}
	c.Close()
}
