package hbase

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// fakeCluster is a meta server and two region servers, a and b, with the
// table's one region on a. The client is pointed at meta directly; no
// ZooKeeper is involved.
type fakeCluster struct {
	meta       *fakeMeta
	metaServer *fakeServer
	a, b       *fakeServer
	c          *Client
}

func newFakeCluster(t *testing.T, cfg Config, rows []string) *fakeCluster {
	f := &fakeCluster{meta: &fakeMeta{}}
	f.metaServer = newFakeServer(t, f.meta, true, nil)
	f.a = newFakeServer(t, f.meta, false, rows)
	f.b = newFakeServer(t, f.meta, false, rows)
	f.meta.addr.Store(f.a.addr())
	cfg.ZooKeeper = "127.0.0.1:1" // never asked: meta's location is set below
	f.c = New(cfg)
	f.c.meta = f.metaServer.addr()
	t.Cleanup(func() { f.c.Close() })
	return f
}

// moveToB freezes a, and after a while makes meta say the region is on b,
// as the master does once a's ZooKeeper session has expired.
func (f *fakeCluster) moveToB(after time.Duration) {
	f.a.frozen.Store(true)
	time.AfterFunc(after, func() { f.meta.addr.Store(f.b.addr()) })
}

// TestWritesLeaveFrozenServer reproduces the finding of issue 12: a region
// server that keeps its connections open and answers nothing. Writes in
// flight on it and writes after must go where meta says the region went,
// within their deadline, instead of knocking on the frozen server until it
// ends.
func TestWritesLeaveFrozenServer(t *testing.T) {
	f := newFakeCluster(t, Config{RPCTimeout: time.Second}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.c.Mutate(ctx, fakeTable, put("r0", "f", "q", "v")); err != nil {
		t.Fatal(err)
	}
	if f.a.mutates.Load() != 1 {
		t.Fatal("the first write did not go to a")
	}
	f.moveToB(1500 * time.Millisecond)
	const writers = 8
	errs := make(chan error, writers)
	for i := range writers {
		go func() { errs <- f.c.Mutate(ctx, fakeTable, put(fmt.Sprint("r", i+1), "f", "q", "v")) }()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Errorf("write while a is frozen: %v", err)
		}
	}
	if got := f.b.mutates.Load(); got != writers {
		t.Errorf("%d writes reached b, want %d", got, writers)
	}
	st := f.c.Stats()
	if st.RelocationsBy[Stalled]+st.RelocationsBy[Timeout] == 0 {
		t.Errorf("no relocation for silence or timeout counted: %+v", st)
	}
	t.Logf("stats: %+v", st)
}

// TestScanLeavesFrozenServer: a scan reading from a server that freezes
// reopens on the region's new server from the row after the last one it
// returned, and returns every row once.
func TestScanLeavesFrozenServer(t *testing.T) {
	var rows []string
	for i := range 50 {
		rows = append(rows, fmt.Sprintf("row%03d", i))
	}
	f := newFakeCluster(t, Config{RPCTimeout: time.Second}, rows)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sc := f.c.Scan(ctx, fakeTable, &hrpc.Scan{}, ScanOptions{RowsPerCall: 10})
	defer sc.Close()
	var got []string
	for sc.Next() {
		got = append(got, string(sc.At().Key))
		if len(got) == 15 {
			f.moveToB(500 * time.Millisecond)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("after %d rows: %v", len(got), err)
	}
	if fmt.Sprint(got) != fmt.Sprint(rows) {
		t.Fatalf("rows %v, want %v", got, rows)
	}
	f.b.mu.Lock()
	defer f.b.mu.Unlock()
	if len(f.b.opens) != 1 || string(f.b.opens[0].GetStartRow()) != "row019" || f.b.opens[0].GetIncludeStartRow() {
		t.Fatalf("scans opened on b: %v; want one, from row019 exclusive", f.b.opens)
	}
}

// TestMetaServerLost: when the server cached as holding hbase:meta refuses
// connections (killed) or answers nothing (frozen), the client forgets it
// and asks ZooKeeper again, instead of retrying the old address until the
// deadline. ZooKeeper is unreachable here, so the operation still fails;
// what matters is that meta's location was dropped.
func TestMetaServerLost(t *testing.T) {
	for _, frozen := range []bool{false, true} {
		t.Run(map[bool]string{false: "killed", true: "frozen"}[frozen], func(t *testing.T) {
			f := newFakeCluster(t, Config{RPCTimeout: time.Second}, nil)
			if frozen {
				f.metaServer.frozen.Store(true)
			} else {
				f.metaServer.ln.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			// Regions reads hbase:meta itself (a scan of meta's region),
			// the path that stayed on a killed meta server.
			_, err := f.c.Regions(ctx, fakeTable)
			if err == nil {
				t.Fatal("read meta without its server")
			}
			t.Logf("without meta: %v", err)
			f.c.mu.Lock()
			meta := f.c.meta
			f.c.mu.Unlock()
			if meta != "" {
				t.Errorf("meta still cached at %s", meta)
			}
			if n := f.c.Stats().RelocationsBy[MetaMoved]; n == 0 {
				t.Errorf("no meta relocation counted: %+v", f.c.Stats())
			}
		})
	}
}
