package main

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// TestSettle: settling lasts until quiet polls in a row find no compaction,
// counts a failed compaction-state call as busy, reports the time until the
// quiet began (not until it was confirmed), and gives up at the timeout.
func TestSettle(t *testing.T) {
	poll := 5 * time.Millisecond
	cfg := settleConfig{tables: []string{"a", "b"}, quiet: 3, poll: poll, timeout: 10 * time.Second}
	m := &cpuMeter{pids: pidFlag{{"self", os.Getpid()}}}

	// Table b compacts for 4 polls, then its state call fails once, then
	// all is quiet: 5 busy polls, then 3 quiet ones.
	calls := map[string]int{}
	compacting := func(_ context.Context, table string) (bool, error) {
		calls[table]++
		switch n := calls[table]; {
		case table == "b" && n <= 4:
			return true, nil
		case table == "b" && n == 5:
			return false, errors.New("region splitting")
		}
		return false, nil
	}
	s, err := settle(context.Background(), cfg, compacting, m)
	if err != nil {
		t.Fatal(err)
	}
	if s.timedOut {
		t.Fatal("timed out")
	}
	if calls["b"] != 8 {
		t.Errorf("table b polled %d times, want 8 (5 busy, 3 quiet)", calls["b"])
	}
	if s.took < 5*poll || s.took >= 8*poll+time.Second {
		t.Errorf("took %v, want from the 5th poll (%v) on, before the 8th", s.took, 5*poll)
	}
	if _, ok := s.cpu["self"]; !ok {
		t.Errorf("no CPU for the meter's process: %v", s.cpu)
	}

	// Quiet from the start: nothing to wait for, nothing counted.
	s, err = settle(context.Background(), cfg, func(context.Context, string) (bool, error) { return false, nil }, m)
	if err != nil || s.took != 0 || s.cpu["total"] != 0 || s.timedOut {
		t.Errorf("quiet HBase: %+v, %v; want no time, no CPU", s, err)
	}

	// Never quiet: the timeout ends it, and says so.
	cfg.timeout = 50 * time.Millisecond
	s, err = settle(context.Background(), cfg, func(context.Context, string) (bool, error) { return true, nil }, m)
	if err != nil || !s.timedOut {
		t.Errorf("busy HBase: %+v, %v; want timed out", s, err)
	}
}
