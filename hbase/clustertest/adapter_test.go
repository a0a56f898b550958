package clustertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/internal/adapterproc"
)

// The adapter-level fault tests run the adapter binary on the cluster, with
// Prometheus's own retry rules on the sending side: what they check is what
// a Prometheus user sees. Each writer owns a few series and sends one
// sample per series per request, the next request only once the previous
// one is acknowledged (a Prometheus queue shard); after the fault, every
// acknowledged sample must read back through remote read.
const (
	adapterWriters       = 4
	adapterSeriesPerReq  = 50
	adapterRequestPause  = 100 * time.Millisecond
	adapterSettle        = 15 * time.Second
	adapterClientTimeout = time.Minute
)

// TestAdapterRegionServerKilled: SIGKILL the region server holding
// hbase:meta (and half of the adapter's regions) under remote-write load.
func TestAdapterRegionServerKilled(t *testing.T) {
	runAdapterFault(t, "kill", func(cl *cluster, n int) { cl.script("rs-kill", fmt.Sprint(n)) }, nil)
}

// TestAdapterRegionServerStopped: SIGTERM to the region server holding
// hbase:meta, as an operator stops one for a rolling restart: it closes its
// regions, flushing them, and exits, and the master reopens them on the
// other. Its clients meet the regions closing (NotServingRegionException,
// RegionServerStoppedException), then a refused connection.
func TestAdapterRegionServerStopped(t *testing.T) {
	runAdapterFault(t, "term", func(cl *cluster, n int) { cl.script("rs-term", fmt.Sprint(n)) }, nil)
}

// TestAdapterRegionServerFrozen: SIGSTOP that server for a minute at least,
// then SIGCONT (resumeFrozen): the adapter must stop waiting on it and
// follow its regions.
func TestAdapterRegionServerFrozen(t *testing.T) {
	runAdapterFault(t, "freeze", func(cl *cluster, n int) { cl.script("rs-stop", fmt.Sprint(n)) }, resumeFrozen)
}

// TestAdapterMoveAndSplit: every region of the adapter's data table moves
// to the other server and two split, under remote-write load. No request
// may fail even once: a move or a split is no fault.
func TestAdapterMoveAndSplit(t *testing.T) {
	cl, c, prefix, url, bin := adapterOnCluster(t, "move", nil, "prom-data")
	table := prefix + "prom-data"
	w := startWriters(url)
	w.waitAcked(10)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t0 := time.Now()
	regions := cl.moveAll(ctx, c, table, func() { w.waitAcked(w.ackedCount() + 4) })
	// Split the two largest-keyed regions in the middle of their salt byte
	// range (the adapter runs with 8 salt buckets, one region each).
	for _, salt := range []byte{2, 5} {
		if err := c.SplitRegion(ctx, table, []byte{salt, 0x80}); err != nil {
			t.Fatalf("split at salt %d: %v", salt, err)
		}
		w.waitAcked(w.ackedCount() + 4)
	}
	cl.waitPlaced(c, table, func(rs []*hbase.RegionInfo) bool { return len(rs) == len(regions)+2 })
	healed := time.Now()
	w.waitAcked(w.ackedCount() + 20)
	w.stop()
	r := w.report(t0, healed)
	t.Logf("%d moves and 2 splits under remote write: done after %v; %s", len(regions), healed.Sub(t0).Round(time.Millisecond), r)
	if r.failedFirst > 0 || r.clientErrors > 0 {
		t.Errorf("%d requests failed on their first attempt, %d answers were 4xx, while regions moved and split", r.failedFirst, r.clientErrors)
	}
	w.verify(t, url)
	checkTables(t, cl, bin, prefix)
}

// runAdapterFault runs fault on the region server holding hbase:meta (and
// half of the adapter's regions) under remote-write load, and resume, when
// set, once the data table's regions are served elsewhere; then it checks
// the load's answers and that every acknowledged sample reads back.
func runAdapterFault(t *testing.T, name string, fault func(cl *cluster, n int), resume func(cl *cluster, n int, t0 time.Time)) {
	cl, c, prefix, url, bin := adapterOnCluster(t, name, nil, "prom-data", "prom-uid")
	n := cl.metaServer(c)
	dead := cl.addr(n)
	t.Cleanup(func() { cl.restore(n) })

	w := startWriters(url)
	w.waitAcked(10)
	t0 := time.Now()
	fault(cl, n)
	healed := watchHealed(cl, prefix+"prom-data", dead).wait(t, cl, w.stop)
	if resume != nil {
		resume(cl, n, t0)
	}
	w.waitAcked(w.ackedCount() + 40)
	w.stop()

	r := w.report(t0, healed)
	t.Logf("%s region server %d (%s, holding hbase:meta) under remote write: regions served again after %v; %s",
		name, n, dead, healed.Sub(t0).Round(time.Millisecond), r)
	if r.failedAfter > 0 {
		t.Errorf("%d requests started more than %v after the regions were served again got no 2xx on their first attempt", r.failedAfter, adapterSettle)
	}
	if r.clientErrors > 0 {
		t.Errorf("%d answers were 4xx: a storage fault must be a retryable 5xx", r.clientErrors)
	}
	w.verify(t, url)
	checkTables(t, cl, bin, prefix)
}

// adapterOnCluster readies the cluster for an adapter-level fault test: both
// region servers up, an adapter (built here, with flags added to the
// suite's) on tables of its own, prefixed fault_<name>_<time>_, and the
// regions of each table suffix in spread moved to spread over both servers.
// It returns the cluster, a client of it, the prefix, the adapter's URL and
// its binary.
func adapterOnCluster(t *testing.T, name string, flags []string, spread ...string) (cl *cluster, c *hbase.Client, prefix, url, bin string) {
	t.Helper()
	cl = newCluster(t)
	cl.restore(1)
	cl.restore(2)
	c = cl.client()
	prefix = fmt.Sprintf("fault_%s_%d_", name, time.Now().Unix()%1e6)
	url, bin = startAdapter(t, cl, prefix, flags...)
	for _, suffix := range spread {
		cl.spread(c, prefix+suffix)
	}
	return cl, c, prefix, url, bin
}

// checkTables runs `adapter check --data` on the tables of prefix, the
// adapter still running: the fault must have left no UID mapping missing
// and no raw cell without its compaction mark.
func checkTables(t *testing.T, cl *cluster, bin, prefix string) {
	t.Helper()
	out, err := adapterproc.Check(context.Background(), bin, cl.zk, hbasetest.ZKRoot(), prefix)
	if err != nil {
		t.Errorf("after the fault: %v\n%s", err, out)
		return
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	t.Logf("adapter check --data after the fault: %s", lines[len(lines)-1])
}

// startAdapter builds the adapter and runs it on the cluster, flags added to
// the suite's; it returns the adapter's URL and the binary.
func startAdapter(t *testing.T, cl *cluster, prefix string, flags ...string) (string, string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "adapter")
	build := exec.Command("go", "build", "-o", bin, "./cmd/adapter")
	build.Dir = cl.repo()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build adapter: %v\n%s", err, out)
	}
	return runAdapter(t, cl, bin, prefix, flags...), bin
}

// runAdapter runs the adapter binary on the cluster's tables of prefix, flags
// added to the suite's, until the test ends, and returns its URL once it is
// ready.
func runAdapter(t *testing.T, cl *cluster, bin, prefix string, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logPath := filepath.Join(dir, "adapter.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--web.listen-address=" + addr, "--hbase.zookeeper-quorum=" + cl.zk,
		"--hbase.zookeeper-root=" + hbasetest.ZKRoot(), "--hbase.table-prefix=" + prefix, "--salt.buckets=8", "--hbase.data-regions=8"}
	cmd := exec.Command(bin, append(args, flags...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = adapterproc.ChildAttrs()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				lines := strings.Split(string(b), "\n")
				t.Logf("adapter log (last lines):\n%s", strings.Join(lines[max(0, len(lines)-30):], "\n"))
			}
		}
	})
	url := "http://" + addr
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("adapter not ready: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// request is one remote-write request of the load: its first attempt's
// start and outcome, and when it was finally acknowledged.
type request struct {
	start    time.Time
	firstErr string // "" when the first attempt got a 2xx
	acked    time.Time
	attempts int
}

type rwLoad struct {
	url    string
	base   int64 // ms of the first sample
	client *http.Client

	mu       sync.Mutex
	acked    [adapterWriters]int // requests acknowledged per writer
	requests []request
	codes4xx int

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startWriters(url string) *rwLoad {
	ctx, cancel := context.WithCancel(context.Background())
	w := &rwLoad{url: url, base: time.Now().Add(-time.Hour).UnixMilli() / 1000 * 1000,
		client: &http.Client{Timeout: adapterClientTimeout}, cancel: cancel}
	for i := range adapterWriters {
		w.wg.Go(func() { w.run(ctx, i) })
	}
	return w
}

func seriesOf(writer, j int) prompb.TimeSeries {
	return prompb.TimeSeries{
		Labels: []prompb.Label{
			{Name: "__name__", Value: "fault_load"}, {Name: "series", Value: fmt.Sprintf("%03d", j)},
			{Name: "writer", Value: fmt.Sprintf("w%d", writer)},
		},
	}
}

// body is request seq of a writer: one sample per series, at base + seq s.
func (w *rwLoad) body(writer, seq int) []byte {
	req := &prompb.WriteRequest{}
	for j := range adapterSeriesPerReq {
		ts := seriesOf(writer, j)
		ts.Samples = []prompb.Sample{{Timestamp: w.base + int64(seq)*1000, Value: sampleValue(writer, j, seq)}}
		req.Timeseries = append(req.Timeseries, ts)
	}
	raw, err := proto.Marshal(req)
	if err != nil {
		panic(err)
	}
	return snappy.Encode(nil, raw)
}

func sampleValue(writer, j, seq int) float64 { return float64(writer*1_000_000 + j*10_000 + seq) }

// run sends a writer's requests in order, each retried as Prometheus does
// (5xx and no answer: backoff from 30 ms doubling to 5 s; 4xx: dropped)
// until acknowledged.
func (w *rwLoad) run(ctx context.Context, writer int) {
	for seq := 0; ctx.Err() == nil; seq++ {
		body := w.body(writer, seq)
		r := request{start: time.Now()}
		backoff := 30 * time.Millisecond
		for ctx.Err() == nil {
			r.attempts++
			code, msg := w.post(ctx, body)
			if r.attempts == 1 && code/100 != 2 {
				r.firstErr = fmt.Sprintf("%d %s", code, msg)
			}
			if code/100 == 2 {
				r.acked = time.Now()
				break
			}
			if code/100 == 4 {
				w.mu.Lock()
				w.codes4xx++
				w.mu.Unlock()
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
		}
		if r.acked.IsZero() && ctx.Err() != nil {
			return // cut short by stop: neither acknowledged nor failed
		}
		w.mu.Lock()
		w.requests = append(w.requests, r)
		if !r.acked.IsZero() {
			w.acked[writer] = seq + 1
		}
		w.mu.Unlock()
		if r.acked.IsZero() {
			return // stopped, or refused: the samples after it would leave a gap
		}
		time.Sleep(adapterRequestPause)
	}
}

func (w *rwLoad) post(ctx context.Context, body []byte) (int, string) {
	return postWrite(ctx, w.client, w.url, body)
}

// postWrite sends one remote-write 1.0 body to the adapter at url and
// returns its status and the start of its answer (0 and the error when
// none came).
func postWrite(ctx context.Context, client *http.Client, url string, body []byte) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/api/v1/write", bytes.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode, strings.TrimSpace(string(msg))
}

func (w *rwLoad) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, a := range w.acked {
		n += a
	}
	return n
}

// waitAcked waits until n requests in all are acknowledged (at most five
// minutes: a stuck load fails in verify).
func (w *rwLoad) waitAcked(n int) {
	deadline := time.Now().Add(5 * time.Minute)
	for w.ackedCount() < n && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
}

func (w *rwLoad) stop() {
	w.cancel()
	w.wg.Wait()
}

type writeReport struct {
	requests, failedFirst, failedAfter, clientErrors int
	firstErr, lastErr                                time.Duration
	slowest                                          time.Duration
	sample                                           string
}

func (r writeReport) String() string {
	s := fmt.Sprintf("%d requests, %d whose first attempt failed", r.requests, r.failedFirst)
	if r.failedFirst > 0 {
		s += fmt.Sprintf(" (started from %+v to %+v after the fault; e.g. %q)", r.firstErr.Round(time.Millisecond), r.lastErr.Round(time.Millisecond), r.sample)
	}
	return s + fmt.Sprintf("; slowest acknowledgement %v", r.slowest.Round(time.Millisecond))
}

func (w *rwLoad) report(t0, healed time.Time) writeReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := writeReport{requests: len(w.requests), clientErrors: w.codes4xx}
	for _, q := range w.requests {
		if !q.acked.IsZero() {
			r.slowest = max(r.slowest, q.acked.Sub(q.start))
		}
		if q.firstErr == "" {
			continue
		}
		at := q.start.Sub(t0)
		if r.failedFirst == 0 || at < r.firstErr {
			r.firstErr = at
		}
		r.lastErr = max(r.lastErr, at)
		if r.sample == "" {
			r.sample = q.firstErr
		}
		r.failedFirst++
		if q.start.After(healed.Add(adapterSettle)) {
			r.failedAfter++
		}
	}
	return r
}

// verify reads every series back through remote read: each acknowledged
// sample must be there with its value.
func (w *rwLoad) verify(t *testing.T, url string) {
	t.Helper()
	w.mu.Lock()
	acked := w.acked
	w.mu.Unlock()
	maxSeq := 0
	for _, a := range acked {
		maxSeq = max(maxSeq, a)
	}
	got, err := readBack(url, "fault_load", w.base, w.base+int64(maxSeq)*1000)
	if err != nil {
		t.Fatalf("remote read after the fault: %v", err)
	}
	lost := 0
	for writer, a := range acked {
		for j := range adapterSeriesPerReq {
			key := fmt.Sprintf("w%d/%03d", writer, j)
			samples := got[key]
			for seq := range a {
				v, ok := samples[w.base+int64(seq)*1000]
				if !ok || v != sampleValue(writer, j, seq) {
					if lost < 5 {
						t.Errorf("acknowledged sample lost: series %s request %d (read %v, %v)", key, seq, v, ok)
					}
					lost++
				}
			}
		}
	}
	total := 0
	for _, a := range acked {
		total += a * adapterSeriesPerReq
	}
	t.Logf("%d acknowledged samples checked, %d lost", total, lost)
}

// readBack reads the series of metric in [start, end] as writer/series ->
// timestamp -> value (the writer label is empty for the history's series).
func readBack(url, metric string, start, end int64) (map[string]map[int64]float64, error) {
	q := &prompb.ReadRequest{Queries: []*prompb.Query{{
		StartTimestampMs: start, EndTimestampMs: end,
		Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: metric}},
	}}}
	raw, err := proto.Marshal(q)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, url+"/api/v1/read", bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("remote read: %d %s", resp.StatusCode, body)
	}
	dec, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, err
	}
	var rr prompb.ReadResponse
	if err := proto.Unmarshal(dec, &rr); err != nil {
		return nil, err
	}
	out := map[string]map[int64]float64{}
	for _, res := range rr.Results {
		for _, ts := range res.Timeseries {
			var writer, series string
			for _, l := range ts.Labels {
				switch l.Name {
				case "writer":
					writer = l.Value
				case "series":
					series = l.Value
				}
			}
			m := map[int64]float64{}
			for _, s := range ts.Samples {
				m[s.Timestamp] = s.Value
			}
			out[writer+"/"+series] = m
		}
	}
	return out, nil
}
