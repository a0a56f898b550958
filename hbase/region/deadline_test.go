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

// seenCall is what the fake server was sent: a Get's row and the timeout
// its header carried.
type seenCall struct {
	row       string
	timeoutMs uint32
}

func rowOf(call *hrpc.Call) string {
	if g, ok := call.Request.(*pb.GetRequest); ok {
		return string(g.GetGet().GetRow())
	}
	return ""
}

// TestConnSendsNoCallGivenUp: a call whose caller gave up while it waited
// for the writer (held here as a process stalled just before its write
// would hold it) never reaches the server; the call ahead of it carries
// the time left to its deadline when it is written, not when it was
// queued; the next call goes as usual.
func TestConnSendsNoCallGivenUp(t *testing.T) {
	seen := make(chan seenCall, 10)
	srv := newFakeServer(t, func(req request, reply func([]byte)) {
		var g pb.GetRequest
		_ = proto.Unmarshal(req.msg, &g)
		seen <- seenCall{string(g.GetGet().GetRow()), req.header.GetTimeout()}
		reply(appendResponse(nil, &pb.ResponseHeader{CallId: req.header.CallId}, &pb.GetResponse{}, nil))
	})
	const held = 500 * time.Millisecond
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	hook := func(call *hrpc.Call) {
		if rowOf(call) == "first" {
			entered <- struct{}{}
			<-release
		}
	}
	beforeWrite.Store(&hook)
	defer beforeWrite.Store(nil)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, srv.ln.Addr().String(), hrpc.ClientService, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first := make(chan error, 1)
	go func() { _, err := c.Call(ctx, getCall("first")); first <- err }()
	<-entered
	queuedCtx, cancelQueued := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelQueued()
	queued := make(chan error, 1)
	go func() { _, err := c.Call(queuedCtx, getCall("queued")); queued <- err }()
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = c.Call(short, getCall("given up"))
	cancelShort()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call queued behind a held writer: %v, want its deadline", err)
	}
	time.Sleep(held)
	close(release)
	for name, ch := range map[string]chan error{"first": first, "queued": queued} {
		if err := <-ch; err != nil {
			t.Fatalf("%s call: %v", name, err)
		}
	}
	if _, err := c.Call(ctx, getCall("next")); err != nil {
		t.Fatalf("call after the writer went on: %v", err)
	}
	sent := map[string]uint32{}
	for range 3 {
		s := <-seen
		sent[s.row] = s.timeoutMs
	}
	for _, row := range []string{"first", "queued", "next"} {
		if _, ok := sent[row]; !ok {
			t.Fatalf("server was sent %v, want first, queued and next", sent)
		}
	}
	select {
	case s := <-seen:
		t.Fatalf("server was also sent %q", s.row)
	case <-time.After(100 * time.Millisecond):
	}
	// Queued with 30 s to go, written once the writer was let go.
	if ms := sent["queued"]; ms == 0 || ms > uint32((30*time.Second-held)/time.Millisecond) {
		t.Errorf("queued call's header timeout %d ms, want what was left when it was written, under %v", ms, 30*time.Second-held)
	}
}

// TestStillWantedDropsExpired: a call still waiting whose deadline has
// passed by the time the writer takes it (its caller stalled with the
// writer, and not yet back to notice) is answered with DeadlineExceeded
// and not sent; one with time left is sent with that time.
func TestStillWantedDropsExpired(t *testing.T) {
	c := &Conn{addr: "rs:16020", pending: map[uint32]*pending{}}
	expired := &pending{id: 1, call: getCall("late"), deadline: time.Now().Add(-time.Millisecond), reply: make(chan reply, 1)}
	live := &pending{id: 2, call: getCall("live"), deadline: time.Now().Add(time.Minute), reply: make(chan reply, 1)}
	none := &pending{id: 3, call: getCall("no deadline"), reply: make(chan reply, 1)}
	for _, p := range []*pending{expired, live, none} {
		c.pending[p.id] = p
	}
	if _, ok := c.stillWanted(expired); ok {
		t.Fatal("expired call would be sent")
	}
	if r := <-expired.reply; !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("expired call answered %v, want DeadlineExceeded", r.err)
	}
	if _, ok := c.pending[expired.id]; ok {
		t.Fatal("expired call still pending")
	}
	if ms, ok := c.stillWanted(live); !ok || ms < 59_000 || ms > 60_000 {
		t.Fatalf("live call: timeout %d ms, sent %v; want about a minute, sent", ms, ok)
	}
	if ms, ok := c.stillWanted(none); !ok || ms != 0 {
		t.Fatalf("call without deadline: timeout %d ms, sent %v; want 0, sent", ms, ok)
	}
	delete(c.pending, live.id)
	if _, ok := c.stillWanted(live); ok {
		t.Fatal("call its caller forgot would be sent")
	}
}
