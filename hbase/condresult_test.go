package hbase

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// TestConditionalRegionResult reads answers to conditional region actions
// as HBase 2.4+ gives them (index 0, the outcome in processed) and as an
// older server would (the condition ignored, the put applied, no outcome):
// the latter must fail the action, not read as "not written".
func TestConditionalRegionResult(t *testing.T) {
	c := New(Config{ZooKeeper: "127.0.0.1:1"})
	defer c.Close()
	r := &RegionInfo{Table: "t", Name: []byte("t,,1.0123456789abcdef0123456789abcdef.")}
	outcome := map[int]bool{}
	ops := &batchOps{
		size: func(int) int { return 1 },
		add: func(b *hrpc.Multi, region []byte, index uint32, i int) {
			b.AddCondMutation(region, index, &hrpc.Mutation{Type: hrpc.MutationPut, Row: []byte{byte(i)}}, &pb.Condition{})
		},
		onProcessed: func(i int, processed bool) { outcome[i] = processed },
	}
	// Actions 0-3, each a region action of its own (k = i).
	ch := newChunk([]*part{{addr: "rs:1", ops: ops, n: 4, runs: []regionRun{{r: r, actions: []int{0, 1, 2, 3}}}}})
	for _, tc := range []struct {
		action    int
		processed *bool
	}{{1, proto.Bool(true)}, {2, proto.Bool(false)}} {
		rar := &pb.RegionActionResult{ResultOrException: []*pb.ResultOrException{{Index: proto.Uint32(0)}}, Processed: tc.processed}
		retry, _, err := c.regionResult(ch, tc.action, rar, nil)
		if err != nil || len(retry) != 0 || ch.errs[tc.action] != nil {
			t.Fatalf("action %d: retry %v, %v, %v", tc.action, retry, err, ch.errs[tc.action])
		}
		if got, ok := outcome[tc.action]; !ok || got != *tc.processed {
			t.Errorf("action %d: outcome %v (reported %v), want %v", tc.action, got, ok, *tc.processed)
		}
	}
	old := &pb.RegionActionResult{ResultOrException: []*pb.ResultOrException{{Index: proto.Uint32(3)}}}
	retry, _, _ := c.regionResult(ch, 3, old, nil)
	if _, reported := outcome[3]; reported || len(retry) != 0 || !errors.Is(ch.errs[3], errNoConditionSupport) {
		t.Errorf("answer without an outcome: reported %v, retry %v, error %v; want an errNoConditionSupport", reported, retry, ch.errs[3])
	}
}
