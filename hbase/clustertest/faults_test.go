package clustertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase"
)

// healWatch polls meta with its own client from t0 on; ch gets the time at
// which every region of table was first served by a server other than dead
// (all regions served, when dead is ""), and is closed after five minutes
// without that.
type healWatch struct {
	ch <-chan time.Time
	mu sync.Mutex
	// last is meta's last answer, for a failure to show.
	last string
}

func watchHealed(cl *cluster, table, dead string) *healWatch {
	c := cl.client()
	ch := make(chan time.Time, 1)
	w := &healWatch{ch: ch}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for ctx.Err() == nil {
			rs, err := c.Regions(ctx, table)
			ok := err == nil
			for _, r := range rs {
				ok = ok && r.Addr != "" && r.Addr != dead
			}
			if ok {
				ch <- time.Now()
				return
			}
			w.note(rs, err)
			time.Sleep(200 * time.Millisecond)
		}
		close(ch)
	}()
	return w
}

func (w *healWatch) note(rs []*hbase.RegionInfo, err error) {
	var b strings.Builder
	if err != nil {
		fmt.Fprintf(&b, "error: %v", err)
	}
	for _, r := range rs {
		addr := r.Addr
		if addr == "" {
			addr = "no server"
		}
		fmt.Fprintf(&b, "\n  %q..%q: %s", r.Start, r.End, addr)
	}
	w.mu.Lock()
	w.last = time.Now().Format("15:04:05.000") + " " + b.String()
	w.mu.Unlock()
}

// wait returns when the regions were served again, or fails the test with
// meta's last answer and what the master logged about it.
func (w *healWatch) wait(t *testing.T, cl *cluster, stop func()) time.Time {
	t.Helper()
	healed, ok := <-w.ch
	if ok {
		return healed
	}
	stop()
	w.mu.Lock()
	last := w.last
	w.mu.Unlock()
	t.Fatalf("regions never served again; meta's last answer, %s\nthe master's warnings and assignments (last lines):\n%s",
		last, cl.logLines("master", 60, " WARN ", " ERROR ", "ServerCrashProcedure", "TransitRegionStateProcedure", "expired", "dead"))
	return time.Time{}
}

// check applies the common verdict of a fault test: nothing acknowledged
// lost, reads equal, errors only before the regions were served again, and
// no batch started after that stuck on the dead server.
func check(t *testing.T, l *load, fault string, t0, healed time.Time) {
	t.Helper()
	r := l.report(t0, healed)
	t.Logf("%s: regions served again after %v; %v", fault, healed.Sub(t0).Round(time.Millisecond), r)
	l.verify()
	if r.failedAfterHealed > 0 {
		t.Errorf("%d batches started more than %v after the regions were served again failed", r.failedAfterHealed, settle)
	}
	if r.slowAfterHealed >= rpcTimeout {
		t.Errorf("a batch started more than %v after the regions were served again took %v: stuck on the old server",
			settle, r.slowAfterHealed)
	}
	if r.failed > 0 && t0.Add(r.lastErr).After(healed.Add(settle)) {
		t.Errorf("errors until +%v, after the regions were served again at +%v", r.lastErr, healed.Sub(t0))
	}
	if r.failedScans > 0 {
		t.Errorf("%d scans failed or missed acknowledged rows: %s", r.failedScans, r.scanErr)
	}
	t.Logf("client stats: %s", stats(l.c.Stats()))
}

func stats(st hbase.Stats) string {
	s := fmt.Sprintf("retries %d, relocations %d:", st.Retries, st.Relocations)
	for _, r := range hbase.Reasons() {
		s += fmt.Sprintf(" %s=%d", r, st.RelocationsBy[r])
	}
	multis := uint64(0)
	for _, n := range st.CallsPerMulti {
		multis += n
	}
	return s + fmt.Sprintf("; %d write Multis carried %d calls", multis, st.CallsInMultis)
}

// TestFreezeRegionServer: SIGSTOP a region server for a minute, then
// SIGCONT; first the one without hbase:meta, then the one holding it. HBase
// declares it dead when its ZooKeeper session expires and reopens its
// regions on the other server; resumed, the server finds itself dead and
// exits. A frozen server keeps its TCP connections open and answers
// nothing: only silence tells the client to look elsewhere.
func TestFreezeRegionServer(t *testing.T) {
	for _, holdingMeta := range []bool{false, true} {
		name := map[bool]string{false: "without meta", true: "holding meta"}[holdingMeta]
		t.Run(name, func(t *testing.T) { freeze(t, holdingMeta) })
	}
}

func freeze(t *testing.T, holdingMeta bool) {
	cl := newCluster(t)
	cl.restore(1)
	cl.restore(2)
	c := cl.client()
	table := cl.table(c, "freeze")
	n := cl.metaServer(c)
	if !holdingMeta {
		n = 3 - n
	}
	dead := cl.addr(n)
	l := startLoad(t, c, table)
	l.waitAcked(20)

	t0 := time.Now()
	cl.script("rs-stop", fmt.Sprint(n))
	healed := watchHealed(cl, table, dead).wait(t, cl, l.stop)
	resumeFrozen(cl, n, t0)
	l.waitAcked(50)
	l.stop()
	role := map[bool]string{false: "", true: ", holding hbase:meta"}[holdingMeta]
	check(t, l, fmt.Sprintf("SIGSTOP region server %d (%s%s) for 1m", n, dead, role), t0, healed)
	waitExit(cl, n)
	cl.restore(n)
}

// frozenFor is how long a frozen server stays frozen at least.
const frozenFor = time.Minute

// resumeFrozen resumes frozen server n frozenFor after t0, once its regions
// are served elsewhere. Not before: on HDFS a server resumed while the
// master still splits its WAL is fenced off by lease recovery, but on the
// local file system of these tests nothing stops it from writing into the
// files the master is recovering, and what HBase then does is no test of
// the client. (In CI on 2026-11-27 the regions of a server frozen for a
// minute were not served again within five; its logs were gone, so
// whether this was why is not known: a failure now shows meta's last
// answer and the master's log.)
func resumeFrozen(cl *cluster, n int, t0 time.Time) {
	time.Sleep(time.Until(t0.Add(frozenFor)))
	cl.script("rs-cont", fmt.Sprint(n))
}

// waitExit waits for a resumed zombie server to exit by itself.
func waitExit(cl *cluster, n int) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && cl.running(n); {
		time.Sleep(time.Second)
	}
	if cl.running(n) {
		cl.t.Logf("region server %d still runs after being resumed", n)
	}
}

// TestKillRegionServer: SIGKILL the region server holding hbase:meta. The
// master splits its WAL and reopens meta and its regions on the other
// server; the client finds meta again through ZooKeeper.
func TestKillRegionServer(t *testing.T) {
	cl := newCluster(t)
	cl.restore(1)
	cl.restore(2)
	c := cl.client()
	table := cl.table(c, "kill")
	n := cl.metaServer(c)
	dead := cl.addr(n)
	l := startLoad(t, c, table)
	l.waitAcked(20)

	t0 := time.Now()
	cl.script("rs-kill", fmt.Sprint(n))
	healed := watchHealed(cl, table, dead).wait(t, cl, l.stop)
	l.waitAcked(50)
	l.stop()
	check(t, l, fmt.Sprintf("SIGKILL region server %d (%s, holding hbase:meta)", n, dead), t0, healed)
	cl.restore(n)
}

// TestMoveAndSplitUnderLoad: every region moves to the other server and
// two regions split while writes and scans go on. Nothing may fail.
func TestMoveAndSplitUnderLoad(t *testing.T) {
	cl := newCluster(t)
	cl.restore(1)
	cl.restore(2)
	c := cl.client()
	table := cl.table(c, "move")
	admin := cl.client()
	l := startLoad(t, c, table)
	l.waitAcked(20)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t0 := time.Now()
	regions := cl.moveAll(ctx, admin, table, func() { l.waitAcked(5) })
	for _, key := range []string{"k2-w1", "k5-w3"} {
		if err := admin.SplitRegion(ctx, table, []byte(key)); err != nil {
			t.Fatalf("split at %q: %v", key, err)
		}
		l.waitAcked(5)
	}
	cl.waitPlaced(admin, table, func(rs []*hbase.RegionInfo) bool { return len(rs) == len(regions)+2 })
	healed := time.Now()
	l.waitAcked(20)
	l.stop()
	r := l.report(t0, healed)
	check(t, l, "8 moves and 2 splits", t0, healed)
	if r.failed > 0 {
		t.Errorf("%d batches failed while regions moved and split", r.failed)
	}
}
