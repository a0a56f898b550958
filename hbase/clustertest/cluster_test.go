package clustertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/zk"
)

// EnvClusterDir names the run directory of the cluster the tests may
// freeze, kill and restart servers of (HBASE_RUN_DIR of
// scripts/hbase.sh cluster-start).
const EnvClusterDir = "PROMHBASE_TEST_CLUSTER_DIR"

// The client is configured as the adapter's defaults configure it:
// --hbase.rpc-timeout=10s, and a write has --write.timeout=30s.
const (
	rpcTimeout   = 10 * time.Second
	writeTimeout = 30 * time.Second
)

// cluster controls the servers of the test cluster through the script.
type cluster struct {
	t   *testing.T
	dir string
	zk  string
}

func newCluster(t *testing.T) *cluster {
	dir := os.Getenv(EnvClusterDir)
	if dir == "" {
		t.Skip(EnvClusterDir + " is not set: run scripts/test-faults.sh (make test-faults)")
	}
	return &cluster{t: t, dir: dir, zk: hbasetest.ZK(t)}
}

// script runs scripts/hbase.sh with the cluster's run directory.
func (cl *cluster) script(args ...string) string {
	cl.t.Helper()
	_, file, _, _ := runtime.Caller(0)
	sh := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "hbase.sh")
	cmd := exec.Command(sh, args...)
	cmd.Env = append(os.Environ(), "HBASE_RUN_DIR="+cl.dir)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		cl.t.Fatalf("hbase.sh %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return strings.TrimSpace(string(out))
}

func (cl *cluster) addr(n int) string { return cl.script("rs-addr", fmt.Sprint(n)) }

// running reports whether region server n has a live process.
func (cl *cluster) running(n int) bool {
	cmd := exec.Command(filepath.Join(cl.repo(), "scripts", "hbase.sh"), "rs-pid", fmt.Sprint(n))
	cmd.Env = append(os.Environ(), "HBASE_RUN_DIR="+cl.dir)
	return cmd.Run() == nil
}

func (cl *cluster) repo() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func (cl *cluster) client() *hbase.Client {
	c := hbase.New(hbase.Config{ZooKeeper: cl.zk, ZKRoot: hbasetest.ZKRoot(), RPCTimeout: rpcTimeout})
	cl.t.Cleanup(func() { c.Close() })
	return c
}

// splitKeys pre-split the table into regions "", k1, ..., k7: writes
// (keyed k0...k7) reach every region.
var splitKeys = []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7"}

// table creates a fresh table with regions on both servers and drops it
// when the test ends.
func (cl *cluster) table(c *hbase.Client, name string) string {
	cl.t.Helper()
	name = fmt.Sprintf("fault_%s_%d", name, time.Now().Unix()%1e6)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var keys [][]byte
	for _, k := range splitKeys {
		keys = append(keys, []byte(k))
	}
	if err := c.CreateTable(ctx, name, []hrpc.Family{{Name: "f", MaxVersions: 1}}, keys); err != nil {
		cl.t.Fatalf("create %s: %v", name, err)
	}
	cl.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.DisableTable(ctx, name); err == nil {
			_ = c.DeleteTable(ctx, name)
		}
	})
	cl.spread(c, name)
	return name
}

// spread moves regions so each server holds half of the table's regions:
// a server that was restarted gets regions only when they are moved to it.
//
// A move the master accepts can still end on the old server: the
// assignment that reopens the region picks another server when the
// destination is not ready for it yet (seen once with a server restarted
// three seconds before). So the regions not where they should be are moved
// again, a few times, until all are.
func (cl *cluster) spread(c *hbase.Client, table string) {
	cl.t.Helper()
	addrs := []string{cl.addr(1), cl.addr(2)}
	placed := func(rs []*hbase.RegionInfo) bool {
		for i, r := range rs {
			if r.Addr != addrs[i%2] {
				return false
			}
		}
		return true
	}
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		regions, err := c.Regions(ctx, table)
		if err != nil {
			cancel()
			cl.t.Fatal(err)
		}
		for i, r := range regions {
			want := addrs[i%2]
			if r.Addr == want {
				continue
			}
			key := r.Start
			if len(key) == 0 {
				key = []byte{0}
			}
			if err := moveSettled(ctx, c, table, key, want); err != nil {
				cancel()
				cl.t.Fatalf("move %s to %s: %v", r, want, err)
			}
		}
		cancel()
		if attempt == spreadAttempts {
			cl.waitPlaced(c, table, placed)
			return
		}
		if cl.placedWithin(c, table, placed, 20*time.Second) {
			return
		}
		cl.t.Logf("regions of %s not where they were moved after 20 s; moving them again", table)
	}
}

// spreadAttempts bounds the rounds of moves spread makes.
const spreadAttempts = 3

// waitPlaced polls meta until ok holds for the table's regions.
func (cl *cluster) waitPlaced(c *hbase.Client, table string, ok func([]*hbase.RegionInfo) bool) {
	cl.t.Helper()
	if !cl.placedWithin(c, table, ok, 3*time.Minute) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rs, err := c.Regions(ctx, table)
		cl.t.Fatalf("regions of %s not placed as wanted: %v %v", table, rs, err)
	}
}

// placedWithin polls meta until ok holds for the table's regions or d has
// passed; it reports whether ok held.
func (cl *cluster) placedWithin(c *hbase.Client, table string, ok func([]*hbase.RegionInfo) bool, d time.Duration) bool {
	cl.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		rs, err := c.Regions(ctx, table)
		if err == nil && ok(rs) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// restore makes region server n a live member of the cluster again: a
// server the master declared dead (frozen past its ZooKeeper session, then
// resumed) aborts by itself, but only some seconds after it runs again, and
// until then it holds its port; it is resumed, given a minute to exit, killed
// if it has not, and started anew. restore returns once ZooKeeper lists n
// as live, so that moves to it are not dropped by the master.
func (cl *cluster) restore(n int) {
	cl.t.Helper()
	if cl.running(n) && cl.live(n) {
		return
	}
	if cl.running(n) {
		cl.script("rs-cont", fmt.Sprint(n))
		waitExit(cl, n)
		if cl.running(n) {
			cl.script("rs-kill", fmt.Sprint(n))
		}
	}
	cl.script("rs-start", fmt.Sprint(n))
	for deadline := time.Now().Add(time.Minute); !cl.live(n); {
		if time.Now().After(deadline) {
			cl.t.Fatalf("region server %d started but not live in ZooKeeper after a minute", n)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// live reports whether ZooKeeper lists region server n among the live ones.
func (cl *cluster) live(n int) bool {
	cl.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	z := zk.New(cl.zk, hbasetest.ZKRoot())
	defer z.Close()
	servers, err := z.RegionServers(ctx)
	if err != nil {
		cl.t.Logf("list live region servers: %v", err)
		return false
	}
	addr := cl.addr(n)
	for _, s := range servers {
		if s.Addr() == addr {
			return true
		}
	}
	return false
}

// metaServer returns the number of the region server holding hbase:meta.
func (cl *cluster) metaServer(c *hbase.Client) int {
	cl.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr, err := c.MetaLocation(ctx)
	if err != nil {
		cl.t.Fatal(err)
	}
	for n := 1; n <= 2; n++ {
		if cl.addr(n) == addr {
			return n
		}
	}
	cl.t.Fatalf("hbase:meta on %s, neither region server", addr)
	return 0
}

// moveAll moves every region of table to the other server, one after the
// other, calling between after each move, and returns the regions as they
// were.
func (cl *cluster) moveAll(ctx context.Context, c *hbase.Client, table string, between func()) []*hbase.RegionInfo {
	cl.t.Helper()
	other := map[string]string{cl.addr(1): cl.addr(2), cl.addr(2): cl.addr(1)}
	regions, err := c.Regions(ctx, table)
	if err != nil {
		cl.t.Fatal(err)
	}
	for _, r := range regions {
		key := r.Start
		if len(key) == 0 {
			key = []byte{0}
		}
		if err := moveSettled(ctx, c, table, key, other[r.Addr]); err != nil {
			cl.t.Fatalf("move %s: %v", r, err)
		}
		between()
	}
	return regions
}

// moveSettled moves the region holding key to addr, waiting out a
// transition still under way (the master refuses to move a region that is
// opening or closing, as after the test's own rebalancing).
func moveSettled(ctx context.Context, c *hbase.Client, table string, key []byte, addr string) error {
	for {
		err := c.MoveRegion(ctx, table, key, addr)
		if err == nil || !strings.Contains(err.Error(), "in transition") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// logLines returns the last n lines of process proc's log (master, rs1,
// rs2, zk) that contain any of keep.
func (cl *cluster) logLines(proc string, n int, keep ...string) string {
	b, err := os.ReadFile(filepath.Join(cl.dir, "logs", proc+".log"))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, k := range keep {
			if strings.Contains(line, k) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}
