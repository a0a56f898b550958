package hbase

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// testCondBatchOps is condBatchOps for n puts of row rows[i], recording
// outcomes in written.
func testCondBatchOps(t *testing.T, rows []string, written []bool) *batchOps {
	t.Helper()
	puts := make([]CondMutation, len(rows))
	for i, row := range rows {
		puts[i] = CondMutation{Mutation: &hrpc.Mutation{Type: hrpc.MutationPut, Row: []byte(row), Cells: []hrpc.MutationCell{{
			Family: []byte("f"), Qualifier: []byte("q"), Timestamp: hrpc.LatestTimestamp, Type: hrpc.TypePut, Value: []byte("v")}}},
			Family: []byte("f"), Qualifier: []byte("q")}
	}
	ops, err := condBatchOps(puts, written)
	if err != nil {
		t.Fatal(err)
	}
	// One byte an action, so that tests size Multis by action counts.
	ops.size = func(int) int { return 1 }
	return ops
}

// planChunks is the Multis a batch of the grouped actions sends, one per
// part, when it shares none.
func planChunks(byRegion map[*RegionInfo][]int, ops *batchOps) []*multiChunk {
	var out []*multiChunk
	for _, p := range plan(byRegion, ops) {
		out = append(out, newChunk([]*part{p}))
	}
	return out
}

// TestChunksEndEachRunWithABarrier checks the shape of a conditional
// batch's Multi: each region's conditional puts go ASYNC_WAL, and the run
// ends with an unconditional mutation of the table's durability in a row
// of the run, so that its WAL sync covers the run.
func TestChunksEndEachRunWithABarrier(t *testing.T) {
	c := New(Config{ZooKeeper: "127.0.0.1:1"})
	defer c.Close()
	r1 := &RegionInfo{Table: "t", Name: []byte("t,,1.a"), Addr: "rs1:16020"}
	r2 := &RegionInfo{Table: "t", Name: []byte("t,m,1.b"), Start: []byte("m"), Addr: "rs1:16020"}
	r3 := &RegionInfo{Table: "t", Name: []byte("t,t,1.c"), Start: []byte("t"), Addr: "rs2:16020"}
	rows := []string{"a", "b", "c", "n", "o", "u"}
	ops := testCondBatchOps(t, rows, make([]bool, len(rows)))
	chunks := planChunks(map[*RegionInfo][]int{r1: {0, 1, 2}, r2: {3, 4}, r3: {5}}, ops)
	if len(chunks) != 2 {
		t.Fatalf("%d chunks, want one per server", len(chunks))
	}
	type action struct {
		region, row string
		cond        bool
		durability  pb.MutationProto_Durability
	}
	var got []action
	for _, ch := range chunks {
		req := ch.multi.Call(0).Request.(*pb.MultiRequest)
		if len(req.RegionAction) != len(ch.regions) {
			t.Fatalf("chunk of %s: %d region actions, the chunk mirrors %d", ch.addr, len(req.RegionAction), len(ch.regions))
		}
		for _, ra := range req.RegionAction {
			m := ra.Action[0].Mutation
			got = append(got, action{string(ra.Region.Value), string(m.Row), ra.Condition != nil, m.GetDurability()})
		}
	}
	const async, def = pb.MutationProto_ASYNC_WAL, pb.MutationProto_USE_DEFAULT
	want := []action{
		{"t,,1.a", "a", true, async}, {"t,,1.a", "b", true, async}, {"t,,1.a", "c", true, async}, {"t,,1.a", "c", false, def},
		{"t,m,1.b", "n", true, async}, {"t,m,1.b", "o", true, async}, {"t,m,1.b", "o", false, def},
		{"t,t,1.c", "u", true, async}, {"t,t,1.c", "u", false, def},
	}
	if !slices.Equal(got, want) {
		t.Errorf("region actions\n got %v\nwant %v", got, want)
	}
	if b := chunks[0].barriers; !slices.Equal(b[3], []int{0, 1, 2}) || !slices.Equal(b[6], []int{4, 5}) || len(b) != 2 {
		t.Errorf("barriers of the first chunk: %v", b)
	}
}

// TestFailedBarrierRetriesItsRun checks that when a region's barrier fails,
// every action of its run is retried, those answered "written" and "not
// written" alike (neither outcome may be durable), while another region's
// run, whose barrier succeeded, keeps its outcomes.
func TestFailedBarrierRetriesItsRun(t *testing.T) {
	c := New(Config{ZooKeeper: "127.0.0.1:1"})
	defer c.Close()
	r1 := &RegionInfo{Table: "t", Name: []byte("t,,1.a"), Addr: "rs1:16020"}
	r2 := &RegionInfo{Table: "t", Name: []byte("t,m,1.b"), Start: []byte("m"), Addr: "rs1:16020"}
	rows := []string{"a", "b", "n", "o"}
	written := make([]bool, len(rows))
	ops := testCondBatchOps(t, rows, written)
	byRegion := map[*RegionInfo][]int{r1: {0, 1}, r2: {2, 3}}
	ch := planChunks(byRegion, ops)[0]
	cond := func(processed bool) *pb.RegionActionResult {
		return &pb.RegionActionResult{ResultOrException: []*pb.ResultOrException{{Index: proto.Uint32(0)}}, Processed: proto.Bool(processed)}
	}
	ok := &pb.RegionActionResult{ResultOrException: []*pb.ResultOrException{{Index: proto.Uint32(barrierIndex), Result: &pb.Result{}}}}
	failed := &pb.RegionActionResult{Exception: &pb.NameBytesPair{Name: proto.String("java.io.IOException"), Value: []byte("WAL sync failed")}}
	results := []*pb.RegionActionResult{cond(true), cond(false), failed, cond(true), cond(false), ok}
	retry, err := c.chunkResults(ch, results, nil)
	if err == nil {
		t.Error("a failed barrier reported no error")
	}
	slices.Sort(retry)
	if !slices.Equal(retry, []int{0, 1}) {
		t.Errorf("retry %v, want the failed barrier's run [0 1]", retry)
	}
	if !written[2] || written[3] {
		t.Errorf("outcomes of the run whose barrier held: %v", written[2:])
	}
	for i, err := range ch.errs {
		if err != nil {
			t.Errorf("action %d failed for good: %v", i, err)
		}
	}
	// No answer at all to a barrier is a failure too.
	results = []*pb.RegionActionResult{cond(true), cond(false), ok, cond(true), cond(false)}
	retry, _ = c.chunkResults(planChunks(byRegion, ops)[0], results, nil)
	slices.Sort(retry)
	if !slices.Equal(retry, []int{2, 3}) {
		t.Errorf("barrier without an answer: retry %v, want [2 3]", retry)
	}
}
