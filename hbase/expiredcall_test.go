package hbase

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// TestExpiredCallKeepsConnection: a call made once its context's deadline
// has passed but before the context's timer fired (stalledCtx: what a
// goroutine that wakes right at, or a process that stalled past, its
// deadline sees) fails alone. region.Conn.Call answers it at once with
// context.DeadlineExceeded, sending nothing; Client.call once took that for
// an attempt that timed out on a silent server (nothing read since the
// call began) and classify for a lost server (context.DeadlineExceeded is a
// net.Error): the healthy connection was closed, every call in flight on
// it failed (here another caller's Multi, which was then sent again) and
// the server was marked silent.
func TestExpiredCallKeepsConnection(t *testing.T) {
	// The deadline passed a millisecond ago; the context's timer fires a
	// few milliseconds late (a busy runtime, a GC pause, a process that
	// stalled): until then Err is nil and Done open.
	checkExpiredCallAlone(t, func(ctx context.Context) (context.Context, context.CancelFunc) {
		lagging, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		return stalledCtx{lagging, time.Now().Add(-time.Millisecond)}, cancel
	})
}

// checkExpiredCallAlone puts another caller's write in flight on server
// a's connection (held by a), makes a call under the context expire gives,
// whose deadline passes before its timer fires, and checks that the call
// failed alone: the connection open, a not marked silent, no relocation
// counted as stalled, and the other write sent once.
func checkExpiredCallAlone(t *testing.T, expire func(context.Context) (context.Context, context.CancelFunc)) {
	t.Helper()
	f := newHeldCluster(t, 1)
	ctx := testCtx(t)
	inFlight := startBatch(ctx, f.c, rowsOf(0, 1))
	<-f.a.multis.arrived
	conn := f.c.conns[connKey{f.a.addr(), hrpc.ClientService}]
	if conn == nil || conn.Err() != nil {
		t.Fatal("no open connection to a")
	}
	time.Sleep(50 * time.Millisecond) // the last frame read is in the past

	expired, cancel := expire(ctx)
	defer cancel()
	err := f.c.Mutate(expired, fakeTable, put("late", "f", "q", "v"))
	if err == nil {
		t.Fatal("a call past its deadline succeeded")
	}
	t.Logf("expired call: %v", err)

	if cerr := conn.Err(); cerr != nil {
		t.Errorf("a call that was never sent closed the healthy connection to a: %v", cerr)
	}
	f.c.mu.Lock()
	_, silent := f.c.silent[f.a.addr()]
	f.c.mu.Unlock()
	if silent {
		t.Errorf("server a marked silent by a call that was never sent")
	}
	if n := f.c.Stats().RelocationsBy[Stalled]; n != 0 {
		t.Errorf("%d relocations counted as stalled, want 0", n)
	}

	f.a.multis.release <- struct{}{}
	if err := <-inFlight; err != nil {
		t.Fatalf("the other caller's write: %v", err)
	}
	if seen, _ := f.a.multis.counts("c0-0"); seen != 1 {
		t.Errorf("the other caller's write was sent %d times, want 1 (its Multi failed with the connection and went again)", seen)
	}
}

// pausingCtx is a context whose deadline passes while the goroutine that
// reads it inside region.(*Conn).Call is held up (the process stalls, or
// the goroutine is descheduled) between Client.call reading `start` and
// Conn.Call looking at the deadline; its timer has not fired yet (Err nil).
type pausingCtx struct {
	context.Context
	deadline time.Time
	stalled  *atomic.Bool // the stall happened (else the test proves nothing)
}

func (c pausingCtx) Deadline() (time.Time, bool) {
	pcs := make([]uintptr, 8)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "region.(*Conn).Call") {
			// The stall: until just past the deadline.
			time.Sleep(time.Until(c.deadline) + time.Millisecond)
			c.stalled.Store(true)
			break
		}
		if !more {
			break
		}
	}
	return c.deadline, true
}

// TestDeadlinePassedAfterStart: the case of TestExpiredCallKeepsConnection
// (the operation's deadline passed before its context's timer fired, so
// Conn.Call refuses to send the call), the deadline passing just after
// Client.call began the attempt rather than before: the call fails alone
// too. Compared with the attempt's start, not the time of the refusal, it
// was again taken for an attempt that timed out on a silent server.
func TestDeadlinePassedAfterStart(t *testing.T) {
	stalled := &atomic.Bool{}
	checkExpiredCallAlone(t, func(ctx context.Context) (context.Context, context.CancelFunc) {
		lagging, cancel := context.WithTimeout(ctx, 5*time.Second)
		return pausingCtx{lagging, time.Now().Add(20 * time.Millisecond), stalled}, cancel
	})
	if !stalled.Load() {
		t.Fatal("the call never stalled in region.(*Conn).Call's look at its deadline (renamed?): nothing tested")
	}
}
