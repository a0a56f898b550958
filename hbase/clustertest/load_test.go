package clustertest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
)

// Load shape: a handful of writers, each sending small batches that touch
// every region, paced so that two CPUs also run HBase.
const (
	writers      = 4
	rowsPerBatch = 16
	batchPause   = 50 * time.Millisecond
	scanPause    = 2 * time.Second
)

// op is one batch or one full scan of the load.
type op struct {
	start, end time.Time
	err        error
}

// load writes batches while scans check what was acknowledged, until
// stopped. A batch is acknowledged when MutateBatch returns nil, as the
// adapter acknowledges a request only then.
type load struct {
	t     *testing.T
	c     *hbase.Client
	table string

	mu     sync.Mutex
	acked  []string // keys of acknowledged rows, in acknowledgement order
	writes []op
	scans  []op

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startLoad(t *testing.T, c *hbase.Client, table string) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{t: t, c: c, table: table, cancel: cancel}
	for w := range writers {
		l.wg.Go(func() { l.write(ctx, w) })
	}
	l.wg.Go(func() { l.scan(ctx) })
	return l
}

// rowKey spreads a writer's rows over the regions k0..k7.
func rowKey(w, seq int) string { return fmt.Sprintf("k%d-w%d-%08d", seq%8, w, seq) }

func (l *load) write(ctx context.Context, w int) {
	for seq := 0; ctx.Err() == nil; {
		keys := make([]string, rowsPerBatch)
		muts := make([]*hrpc.Mutation, rowsPerBatch)
		for i := range keys {
			keys[i] = rowKey(w, seq)
			seq++
			muts[i] = &hrpc.Mutation{Type: hrpc.MutationPut, Row: []byte(keys[i]), Cells: []hrpc.MutationCell{{
				Family: []byte("f"), Qualifier: []byte("q"), Timestamp: hrpc.LatestTimestamp, Type: hrpc.TypePut, Value: []byte(keys[i])}}}
		}
		// The operation's deadline does not end with the load: a batch in
		// flight when the load stops finishes or fails on its own.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
		o := op{start: time.Now()}
		o.err = l.c.MutateBatch(bctx, l.table, muts)
		o.end = time.Now()
		cancel()
		l.mu.Lock()
		l.writes = append(l.writes, o)
		if o.err == nil {
			l.acked = append(l.acked, keys...)
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(batchPause):
		}
	}
}

// scan reads the whole table again and again: each scan must see every
// row acknowledged before it started, whatever the servers go through
// meanwhile.
func (l *load) scan(ctx context.Context) {
	for ctx.Err() == nil {
		l.mu.Lock()
		before := len(l.acked)
		l.mu.Unlock()
		o := op{start: time.Now()}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*writeTimeout)
		seen, err := readAll(sctx, l.c, l.table)
		cancel()
		o.end = time.Now()
		l.mu.Lock()
		if err != nil {
			o.err = err
		} else if missing := missingRows(l.acked[:before], seen); len(missing) > 0 {
			o.err = fmt.Errorf("scan missed %d of %d acknowledged rows, e.g. %q", len(missing), before, missing[0])
		}
		l.scans = append(l.scans, o)
		l.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(scanPause):
		}
	}
}

// readAll scans the table into a map of key to value.
func readAll(ctx context.Context, c *hbase.Client, table string) (map[string]string, error) {
	sc := c.Scan(ctx, table, &hrpc.Scan{}, hbase.ScanOptions{})
	defer sc.Close()
	seen := map[string]string{}
	for sc.Next() {
		r := sc.At()
		seen[string(r.Key)] = string(r.Cells[0].Value)
	}
	return seen, sc.Err()
}

// missingRows lists the acknowledged keys not read back with their value.
func missingRows(acked []string, seen map[string]string) []string {
	var out []string
	for _, k := range acked {
		if seen[k] != k {
			out = append(out, k)
		}
	}
	return out
}

// stop ends the load and waits for the batches in flight.
func (l *load) stop() {
	l.cancel()
	l.wg.Wait()
}

// waitAcked waits until n more batches are acknowledged: the load runs.
func (l *load) waitAcked(n int) {
	l.t.Helper()
	l.mu.Lock()
	target := len(l.acked) + n*rowsPerBatch
	l.mu.Unlock()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		got := len(l.acked)
		l.mu.Unlock()
		if got >= target {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	l.t.Fatalf("the load acknowledged nothing for 2 minutes")
}

// verify reads back every acknowledged row twice, by scan and by batched
// gets: both must return each with its value.
func (l *load) verify() {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	seen, err := readAll(ctx, l.c, l.table)
	if err != nil {
		l.t.Fatalf("final scan: %v", err)
	}
	if missing := missingRows(l.acked, seen); len(missing) > 0 {
		l.t.Errorf("LOST: %d of %d acknowledged rows not read back by a scan, e.g. %q", len(missing), len(l.acked), missing[0])
	}
	got := 0
	for chunk := range slices.Chunk(l.acked, 2000) {
		gets := make([]*hrpc.Get, len(chunk))
		for i, k := range chunk {
			gets[i] = &hrpc.Get{Row: []byte(k)}
		}
		res, err := l.c.GetBatch(ctx, l.table, gets)
		if err != nil {
			l.t.Fatalf("final gets: %v", err)
		}
		for i, cells := range res {
			if len(cells) == 1 && string(cells[0].Value) == chunk[i] {
				got++
			}
		}
	}
	if got != len(l.acked) {
		l.t.Errorf("LOST: batched gets read %d of %d acknowledged rows", got, len(l.acked))
	}
	l.t.Logf("acknowledged rows: %d; read back: %d by scan (of %d rows in the table), %d by gets",
		len(l.acked), len(l.acked)-len(missingRows(l.acked, seen)), len(seen), got)
}

// report summarises the writes and scans around a fault injected at t0
// and repaired (every region served again) at healed.
type report struct {
	batches, failed      int
	firstErr, lastErr    time.Duration // relative to t0
	maxLatency           time.Duration
	outage               time.Duration // longest time without an acknowledged batch after t0
	scans, failedScans   int
	failedAfterHealed    int // batches started after healed+settle that failed
	slowAfterHealed      time.Duration
	firstErrMsg, scanErr string
}

// settle is how long after the regions are served again a batch may still
// meet the old state: an attempt in flight when the regions moved.
const settle = rpcTimeout

func (l *load) report(t0, healed time.Time) report {
	l.mu.Lock()
	defer l.mu.Unlock()
	var r report
	for _, o := range l.writes {
		r.batches++
		r.maxLatency = max(r.maxLatency, o.end.Sub(o.start))
		if o.start.After(healed.Add(settle)) {
			r.slowAfterHealed = max(r.slowAfterHealed, o.end.Sub(o.start))
			if o.err != nil {
				r.failedAfterHealed++
			}
		}
		if o.err != nil {
			if r.failed == 0 {
				r.firstErr, r.firstErrMsg = o.end.Sub(t0), o.err.Error()
			}
			r.failed++
			r.lastErr = max(r.lastErr, o.end.Sub(t0))
		}
	}
	ends := []time.Time{t0}
	for _, o := range l.writes {
		if o.err == nil && o.end.After(t0) {
			ends = append(ends, o.end)
		}
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(ends); i++ {
		r.outage = max(r.outage, ends[i].Sub(ends[i-1]))
	}
	for _, o := range l.scans {
		r.scans++
		if o.err != nil {
			r.failedScans++
			r.scanErr = o.err.Error()
		}
	}
	return r
}

func (r report) String() string {
	s := fmt.Sprintf("batches %d (failed %d), longest batch %v, longest time without an acknowledged batch %v; scans %d (failed %d)",
		r.batches, r.failed, r.maxLatency.Round(time.Millisecond), r.outage.Round(time.Millisecond), r.scans, r.failedScans)
	if r.failed > 0 {
		s += fmt.Sprintf("; errors from +%v to +%v, first: %s", r.firstErr.Round(time.Millisecond), r.lastErr.Round(time.Millisecond), r.firstErrMsg)
	}
	if r.failedScans > 0 {
		s += "; last scan error: " + r.scanErr
	}
	return s
}
