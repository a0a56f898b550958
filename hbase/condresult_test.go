package hbase

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

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
	ops := &batchOps{onProcessed: func(i int, processed bool) { outcome[i] = processed }}
	errs := make([]error, 4)
	for _, tc := range []struct {
		action    int
		processed *bool
	}{{1, proto.Bool(true)}, {2, proto.Bool(false)}} {
		rar := &pb.RegionActionResult{ResultOrException: []*pb.ResultOrException{{Index: proto.Uint32(0)}}, Processed: tc.processed}
		retry, _, err := c.regionResult([]int{tc.action}, r, rar, nil, errs, ops)
		if err != nil || len(retry) != 0 || errs[tc.action] != nil {
			t.Fatalf("action %d: retry %v, %v, %v", tc.action, retry, err, errs[tc.action])
		}
		if got, ok := outcome[tc.action]; !ok || got != *tc.processed {
			t.Errorf("action %d: outcome %v (reported %v), want %v", tc.action, got, ok, *tc.processed)
		}
	}
	old := &pb.RegionActionResult{ResultOrException: []*pb.ResultOrException{{Index: proto.Uint32(3)}}}
	retry, _, _ := c.regionResult([]int{3}, r, old, nil, errs, ops)
	if _, reported := outcome[3]; reported || len(retry) != 0 || !errors.Is(errs[3], errNoConditionSupport) {
		t.Errorf("answer without an outcome: reported %v, retry %v, error %v; want an errNoConditionSupport", reported, retry, errs[3])
	}
}
