package hbase

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// Tests of write coalescing against a fake region server, whose answers
// (and when it gives them) the tests decide. coalesce_hbase_test.go runs
// the same against the real HBase.

// newHeldCluster is a fake cluster whose region server, a, holds the
// first hold Multis until the test releases them, and reports every Multi
// that arrives. Its client sends one Multi of writes at a time to a server
// (WriteMultisInFlight 1), so that every call made while one is held
// waits for the next.
func newHeldCluster(t *testing.T, hold int32) *fakeCluster {
	t.Helper()
	return newHeldClusterInFlight(t, hold, 1)
}

func newHeldClusterInFlight(t *testing.T, hold int32, inFlight int) *fakeCluster {
	t.Helper()
	f := newFakeCluster(t, Config{RPCTimeout: 20 * time.Second, WriteMultisInFlight: inFlight}, nil)
	f.a.multis.arrived = make(chan *pb.MultiRequest, 64)
	f.a.multis.release = make(chan struct{})
	f.a.multis.hold.Store(hold)
	return f
}

// rowsOf is the mutations of batch call k: rows "c<k>-<i>".
func rowsOf(k, n int) []*hrpc.Mutation {
	muts := make([]*hrpc.Mutation, n)
	for i := range muts {
		muts[i] = put(fmt.Sprintf("c%d-%d", k, i), "f", "q", "v")
	}
	return muts
}

// startBatch runs MutateBatch in a goroutine; its error comes on the
// channel.
func startBatch(ctx context.Context, c *Client, muts []*hrpc.Mutation) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.MutateBatch(ctx, fakeTable, muts) }()
	return done
}

// waitQueued waits until n parts wait in the client's queue for addr.
func waitQueued(t *testing.T, c *Client, addr string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c.writes.mu.Lock()
		got := 0
		if wq := c.writes.servers[addr]; wq != nil {
			got = len(wq.waiting)
		}
		c.writes.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d parts queued for %s, want %d", got, addr, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// regionActionRows lists, per region action of a Multi, its rows.
func regionActionRows(req *pb.MultiRequest) [][]string {
	var out [][]string
	for _, ra := range req.GetRegionAction() {
		var rows []string
		for _, a := range ra.GetAction() {
			rows = append(rows, string(a.GetMutation().GetRow()))
		}
		out = append(out, rows)
	}
	return out
}

// TestSharedMultiCarriesWaitingCalls: calls that arrive while a Multi is
// in flight to their server go together in the next one, their mutations
// of one region in one RegionAction, each call's in its order, and each
// call returns once its own are acknowledged.
func TestSharedMultiCarriesWaitingCalls(t *testing.T) {
	f := newHeldCluster(t, 1)
	ctx := testCtx(t)
	first := startBatch(ctx, f.c, rowsOf(0, 3))
	<-f.a.multis.arrived // held
	const waiting = 5
	var calls []<-chan error
	for k := 1; k <= waiting; k++ {
		calls = append(calls, startBatch(ctx, f.c, rowsOf(k, 4)))
		waitQueued(t, f.c, f.a.addr(), k)
	}
	f.a.multis.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for k, done := range calls {
		if err := <-done; err != nil {
			t.Fatalf("call %d: %v", k+1, err)
		}
	}
	shared := <-f.a.multis.arrived
	got := regionActionRows(shared)
	var want []string
	for k := 1; k <= waiting; k++ {
		for _, m := range rowsOf(k, 4) {
			want = append(want, string(m.Row))
		}
	}
	if len(got) != 1 || !slices.Equal(got[0], want) {
		t.Fatalf("the second Multi's region actions: %v, want one holding %v", got, want)
	}
	st := f.c.Stats()
	if st.CallsPerMulti[0] != 1 || st.CallsPerMulti[3] != 1 || st.CallsInMultis != 1+waiting {
		t.Errorf("calls per Multi %v (sum %d): want one Multi of 1 call and one of 5", st.CallsPerMulti, st.CallsInMultis)
	}
	for k := 0; k <= waiting; k++ {
		n := 4
		if k == 0 {
			n = 3
		}
		for _, m := range rowsOf(k, n) {
			if seen, applied := f.a.multis.counts(string(m.Row)); seen != 1 || applied != 1 {
				t.Errorf("row %s sent %d times, applied %d, want once", m.Row, seen, applied)
			}
		}
	}
}

// sharedRound holds a first Multi, queues the calls behind it, and
// releases it, so that the calls share the next Multi. It returns their
// errors, in order.
func sharedRound(t *testing.T, f *fakeCluster, calls [][]*hrpc.Mutation, beforeRelease func()) []error {
	t.Helper()
	ctx := testCtx(t)
	for len(f.a.multis.arrived) > 0 {
		<-f.a.multis.arrived // of an earlier round
	}
	f.a.multis.hold.Store(1)
	first := startBatch(ctx, f.c, []*hrpc.Mutation{put("first", "f", "q", "v")})
	<-f.a.multis.arrived // held
	var dones []<-chan error
	for k, muts := range calls {
		dones = append(dones, startBatch(ctx, f.c, muts))
		waitQueued(t, f.c, f.a.addr(), k+1)
	}
	beforeRelease()
	f.a.multis.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if rows := regionActionRows(<-f.a.multis.arrived); len(rows) != 1 {
		t.Fatalf("the shared Multi has %d region actions, want 1", len(rows))
	}
	errs := make([]error, len(dones))
	for k, done := range dones {
		errs[k] = <-done
	}
	return errs
}

// wantSent checks how often the fake server received and applied rows.
func wantSent(t *testing.T, f *fakeCluster, muts []*hrpc.Mutation, seen, applied int) {
	t.Helper()
	for _, m := range muts {
		if s, a := f.a.multis.counts(string(m.Row)); s != seen || a != applied {
			t.Errorf("row %s received %d times, applied %d; want %d and %d", m.Row, s, a, seen, applied)
		}
	}
}

// TestSharedMultiErrorsStayWithTheirCall: in a shared Multi, an action
// that fails for good fails its own call, at its own position, and no
// other; an action the server asks to retry is retried alone, by its call;
// a region action refused whole is retried by every call in it.
func TestSharedMultiErrorsStayWithTheirCall(t *testing.T) {
	f := newHeldCluster(t, 0)
	flaky := "c2-1"
	f.a.multis.actionFault = func(row []byte) *pb.NameBytesPair {
		switch {
		case strings.HasSuffix(string(row), "-bad"):
			return fakeException("org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException", "no family")
		case string(row) == flaky:
			flaky = "" // once; the fake answers under its lock
			return fakeException(pkgRegionTooBusy, "busy for a moment")
		}
		return nil
	}
	bad := rowsOf(1, 4)
	bad[1].Row = []byte("c1-1-bad")
	bad[3].Row = []byte("c1-3-bad")
	calls := [][]*hrpc.Mutation{rowsOf(0, 3), bad, rowsOf(2, 4), rowsOf(3, 2)}
	errs := sharedRound(t, f, calls, func() {})
	var be *BatchError
	if !errors.As(errs[1], &be) {
		t.Fatalf("the call with bad actions: %v, want a *BatchError", errs[1])
	}
	for i, err := range be.Errs {
		if failed := err != nil; failed != (i == 1 || i == 3) {
			t.Errorf("action %d of the call with bad actions: error %v", i, err)
		}
	}
	if be.Failed != 2 {
		t.Errorf("%d actions failed, want 2", be.Failed)
	}
	for k, err := range errs {
		if k != 1 && err != nil {
			t.Errorf("call %d, all of whose actions are good: %v", k, err)
		}
	}
	wantSent(t, f, []*hrpc.Mutation{bad[0], bad[2]}, 1, 1)
	wantSent(t, f, []*hrpc.Mutation{calls[2][0], calls[2][2], calls[2][3]}, 1, 1)
	wantSent(t, f, calls[2][1:2], 2, 1) // the flaky one, retried alone
	wantSent(t, f, slices.Concat(calls[0], calls[3]), 1, 1)

	// A region action refused whole: every call in it retries, once.
	calls = [][]*hrpc.Mutation{rowsOf(4, 3), rowsOf(5, 2)}
	errs = sharedRound(t, f, calls, func() { f.a.multis.busy.Store(1) })
	for k, err := range errs {
		if err != nil {
			t.Errorf("call %d of the Multi refused whole: %v", k, err)
		}
	}
	wantSent(t, f, slices.Concat(calls...), 2, 1)
	if st := f.c.Stats(); st.Retries == 0 {
		t.Errorf("no retry counted: %+v", st)
	}
}

// TestCancelledCallLeavesSharedMultis: a call whose context ends returns at
// once, whether its mutations wait in the queue (they are then never sent)
// or are in a Multi in flight (the others in that Multi still get their
// answer), and the calls queued behind it go on.
func TestCancelledCallLeavesSharedMultis(t *testing.T) {
	f := newHeldCluster(t, 2)
	ctx := testCtx(t)
	first := startBatch(ctx, f.c, rowsOf(0, 1))
	<-f.a.multis.arrived // held
	ctxQueued, cancelQueued := context.WithCancel(ctx)
	ctxFlying, cancelFlying := context.WithCancel(ctx)
	queued := startBatch(ctxQueued, f.c, rowsOf(1, 2))
	waitQueued(t, f.c, f.a.addr(), 1)
	flying := startBatch(ctxFlying, f.c, rowsOf(2, 2))
	waitQueued(t, f.c, f.a.addr(), 2)
	other := startBatch(ctx, f.c, rowsOf(3, 2))
	waitQueued(t, f.c, f.a.addr(), 3)

	// Still queued: out of the queue, nothing sent.
	cancelQueued()
	if err := <-queued; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled queued call: %v, want context.Canceled", err)
	}
	waitQueued(t, f.c, f.a.addr(), 2)
	// The first Multi answered, the next carries the other two, held.
	f.a.multis.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if rows := regionActionRows(<-f.a.multis.arrived); len(rows) != 1 || len(rows[0]) != 4 {
		t.Fatalf("second Multi: %v, want the two calls' four rows in one region action", rows)
	}
	cancelFlying()
	if err := <-flying; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call in flight: %v, want context.Canceled", err)
	}
	f.a.multis.release <- struct{}{}
	if err := <-other; err != nil {
		t.Fatalf("the call sharing the Multi with a cancelled one: %v", err)
	}
	for _, m := range rowsOf(1, 2) {
		if seen, _ := f.a.multis.counts(string(m.Row)); seen != 0 {
			t.Errorf("row %s of the call cancelled while queued was sent %d times", m.Row, seen)
		}
	}
	for _, m := range rowsOf(2, 2) {
		// Its Multi was on its way: the write lands, as any write whose
		// answer its caller did not wait for may.
		if _, applied := f.a.multis.counts(string(m.Row)); applied != 1 {
			t.Errorf("row %s of the call cancelled in flight applied %d times, want 1", m.Row, applied)
		}
	}
}

// stalledCtx is a context whose deadline has passed but whose timer has
// not fired: what a process that stalled past a deadline finds on waking,
// Err nil and Done open, until its runtime runs the timer.
type stalledCtx struct {
	context.Context
	deadline time.Time
}

func (c stalledCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// TestStalledCallLeavesSharedMultis: a call whose deadline passes while
// it waits for a shared Multi is not carried by it, even before its
// context says so: the call that shares the Multi with it keeps it going,
// and its mutations would land after its caller's deadline.
func TestStalledCallLeavesSharedMultis(t *testing.T) {
	f := newHeldCluster(t, 1)
	ctx := testCtx(t)
	first := startBatch(ctx, f.c, rowsOf(0, 1))
	<-f.a.multis.arrived // held; the region is in the client's cache
	stalled := startBatch(stalledCtx{ctx, time.Now().Add(100 * time.Millisecond)}, f.c, rowsOf(1, 2))
	waitQueued(t, f.c, f.a.addr(), 1)
	live := startBatch(ctx, f.c, rowsOf(2, 2))
	waitQueued(t, f.c, f.a.addr(), 2)
	time.Sleep(150 * time.Millisecond)
	f.a.multis.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-stalled; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if err := <-live; err != nil {
		t.Fatalf("the call queued beside it: %v", err)
	}
	if rows := regionActionRows(<-f.a.multis.arrived); len(rows) != 1 || !slices.Equal(rows[0], []string{"c2-0", "c2-1"}) {
		t.Fatalf("second Multi: %v, want the live call's two rows alone", rows)
	}
	for _, m := range rowsOf(1, 2) {
		if seen, _ := f.a.multis.counts(string(m.Row)); seen != 0 {
			t.Errorf("row %s of the call past its deadline was sent %d times", m.Row, seen)
		}
	}
}

// TestAbandonedMultiFreesItsServer: when every call a Multi carries has
// given up, the Multi is abandoned and the next one goes.
func TestAbandonedMultiFreesItsServer(t *testing.T) {
	f := newHeldCluster(t, 1)
	ctx := testCtx(t)
	ctxGone, cancel := context.WithCancel(ctx)
	gone := startBatch(ctxGone, f.c, rowsOf(0, 1))
	<-f.a.multis.arrived // held, and never released in this test
	next := startBatch(ctx, f.c, rowsOf(1, 1))
	waitQueued(t, f.c, f.a.addr(), 1)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if err := <-next; err != nil {
		t.Fatalf("the call queued behind an abandoned Multi: %v", err)
	}
	f.a.multis.release <- struct{}{}
}

// TestNewChunkMergesRegions: the Multi of several calls' parts has one
// RegionAction per region, holding every call's actions for it in call
// order, and each action's answer index maps back to its call's position.
func TestNewChunkMergesRegions(t *testing.T) {
	r1 := &RegionInfo{Table: "t", Name: []byte("t,,1.a"), Addr: "rs1:16020"}
	r2 := &RegionInfo{Table: "t", Name: []byte("t,m,1.b"), Start: []byte("m"), Addr: "rs1:16020"}
	r2again := *r2 // the same region located by another call
	u := &RegionInfo{Table: "u", Name: []byte("u,,1.c"), Addr: "rs1:16020"}
	opsFor := func(rows ...string) *batchOps {
		muts := make([]*hrpc.Mutation, len(rows))
		for i, row := range rows {
			muts[i] = put(row, "f", "q", "v")
		}
		return &batchOps{n: len(rows), size: func(i int) int { return muts[i].CellsSize() }, cellBlock: true, writes: true,
			add: func(b *hrpc.Multi, region []byte, index uint32, i int) { b.AddMutation(region, index, muts[i]) }}
	}
	a := plan(map[*RegionInfo][]int{r1: {0, 2}, r2: {1}}, opsFor("a0", "n1", "a2"))
	b := plan(map[*RegionInfo][]int{&r2again: {1, 0}}, opsFor("o0", "n1"))
	c := plan(map[*RegionInfo][]int{u: {0}, r1: {1}}, opsFor("u0", "b1"))
	if len(a) != 1 || len(b) != 1 || len(c) != 1 {
		t.Fatalf("parts: %d %d %d, want one each (one server)", len(a), len(b), len(c))
	}
	ch := newChunk([]*part{a[0], b[0], c[0]})
	got := regionActionRows(ch.multi.Call(0).Request.(*pb.MultiRequest))
	want := [][]string{{"a0", "a2", "b1"}, {"n1", "n1", "o0"}, {"u0"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("region actions %v, want %v", got, want)
	}
	if len(ch.regions) != 3 {
		t.Fatalf("the chunk mirrors %d region actions, want 3", len(ch.regions))
	}
	var refs []actionRef
	for _, g := range slices.Concat(ch.actions...) {
		refs = append(refs, ch.who[g])
	}
	wantRefs := []actionRef{{0, 0, 0}, {0, 2, 0}, {2, 1, 0}, {0, 1, 1}, {1, 1, 1}, {1, 0, 1}, {2, 0, 2}}
	if !slices.Equal(refs, wantRefs) {
		t.Errorf("actions (part, position, region action) %v, want %v", refs, wantRefs)
	}
}

// TestFullMultisGoInParallel: a call bigger than a Multi does not wait for
// its own Multis one after the other: when a full Multi's worth waits, it
// goes beside the one in flight, as it did with Multis of its own; the
// rest, less than a Multi, waits to share the next.
func TestFullMultisGoInParallel(t *testing.T) {
	f := newHeldCluster(t, 2)
	ctx := testCtx(t)
	big := rowsOf(0, 2*maxMultiActions+10) // two full parts and a small one
	done := startBatch(ctx, f.c, big)
	for k := range 2 {
		select {
		case req := <-f.a.multis.arrived: // held
			if n := len(regionActionRows(req)[0]); n != maxMultiActions {
				t.Errorf("Multi %d carries %d actions, want %d", k, n, maxMultiActions)
			}
		case <-ctx.Done():
			t.Fatalf("only %d of the call's full Multis were sent while the first was held", k)
		}
	}
	waitQueued(t, f.c, f.a.addr(), 1)
	for range 2 {
		f.a.multis.release <- struct{}{}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantSent(t, f, big, 1, 1)
}

// TestMultisInFlightBeforeSharing: with WriteMultisInFlight 3, the first
// three calls each go at once in a Multi of their own, all three held by
// the server at the same time; the calls after them wait, and share the
// Multi that goes once one of the three is answered.
func TestMultisInFlightBeforeSharing(t *testing.T) {
	const inFlight, waiting = 3, 4
	f := newHeldClusterInFlight(t, inFlight, inFlight)
	ctx := testCtx(t)
	var first []<-chan error
	for k := range inFlight {
		first = append(first, startBatch(ctx, f.c, rowsOf(k, 2)))
		select {
		case req := <-f.a.multis.arrived: // held
			if got := regionActionRows(req); len(got) != 1 || len(got[0]) != 2 || got[0][0] != fmt.Sprintf("c%d-0", k) {
				t.Fatalf("Multi %d carries %v, want call %d's 2 rows alone", k, got, k)
			}
		case <-ctx.Done():
			t.Fatalf("call %d waited while %d Multis were in flight, fewer than %d", k, k, inFlight)
		}
	}
	var calls []<-chan error
	for k := inFlight; k < inFlight+waiting; k++ {
		calls = append(calls, startBatch(ctx, f.c, rowsOf(k, 3)))
		waitQueued(t, f.c, f.a.addr(), k-inFlight+1)
	}
	f.a.multis.release <- struct{}{}
	shared := <-f.a.multis.arrived
	var want []string
	for k := inFlight; k < inFlight+waiting; k++ {
		for _, m := range rowsOf(k, 3) {
			want = append(want, string(m.Row))
		}
	}
	if got := regionActionRows(shared); len(got) != 1 || !slices.Equal(got[0], want) {
		t.Fatalf("the Multi after the first answer: %v, want one region action holding %v", got, want)
	}
	for range inFlight - 1 {
		f.a.multis.release <- struct{}{}
	}
	for k, done := range append(first, calls...) {
		if err := <-done; err != nil {
			t.Fatalf("call %d: %v", k, err)
		}
	}
	st := f.c.Stats()
	if st.CallsPerMulti[0] != inFlight || st.CallsPerMulti[2] != 1 || st.CallsInMultis != inFlight+waiting {
		t.Errorf("calls per Multi %v (sum %d): want %d Multis of 1 call and one of %d", st.CallsPerMulti, st.CallsInMultis, inFlight, waiting)
	}
}
