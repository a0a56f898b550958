package clustertest

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/internal/scrape"
)

// The compactor is the one part of the adapter that deletes what was
// acknowledged: it rewrites a series-hour's raw cells as chunk cells, then
// deletes the raw cells. TestAdapterCompactorUnderFaults runs it through
// each fault of this suite while it folds a history of closed hours, with
// remote writes going on beside it.
//
// A metric is folded only once its newest compaction mark is older than the
// quiet period (a minute, plus --write.timeout and the clock skew), so the
// history is written first and the faults begin once the compactor has
// started on it; its rate is held low enough that the folding outlasts the
// four faults.
const (
	histMetrics = 3
	histSeries  = 40
	histHours   = 4
	histStep    = 15_000 // ms between a history series' samples
	histSamples = histHours * 3_600_000 / histStep
	histCells   = histMetrics * histSeries * histSamples // 115,200 raw cells
	// compactRate is the compactor's --compactor.rate: at it, folding the
	// history takes almost ten minutes, longer than the test.
	compactRate = 200
)

// compactFlags: every hour is closed at its end, passes start every 2 s,
// and each storage call of the compactor folds 4 series-hours (960 cells,
// about 5 s of its rate), so that a fault finds it between two calls or
// inside one. The write timeout shortens the quiet period to 71 s.
var compactFlags = []string{
	"--compactor.grace=0s", "--compactor.interval=2s", "--compactor.max-clock-skew=1s",
	"--compactor.batch-rows=4", fmt.Sprintf("--compactor.rate=%d", compactRate),
	"--write.timeout=10s",
}

// TestAdapterCompactorUnderFaults: while the compactor folds the history
// and remote writes go on, the data table's regions move and two split;
// then the region server holding hbase:meta is stopped (SIGTERM), and
// started again once its regions are served by the other; then that other
// one, now holding every region, is killed, and started again; then the
// first, holding every region in its turn, is frozen for a minute. The compaction must be under way when
// each fault begins and take up again after it, every acknowledged sample
// (history and live) must read back, and `adapter check --data` must find
// nothing harmful.
func TestAdapterCompactorUnderFaults(t *testing.T) {
	cl, c, prefix, url, bin := adapterOnCluster(t, "compact", compactFlags)
	data := prefix + "prom-data"
	h := newHistory()
	h.write(t, url)
	wrote := time.Now()
	// The spread comes after the history's write, so that it takes some of
	// the quiet period.
	for _, suffix := range []string{"prom-data", "prom-uid"} {
		cl.spread(c, prefix+suffix)
	}
	w := startWriters(url)
	defer w.stop()
	w.waitAcked(10)
	waitCompactorPast(t, url, 0, 3*time.Minute)
	t.Logf("compaction began %v after the history was written", time.Since(wrote).Round(time.Second))

	// underWay fails the test unless the compactor has folded some of the
	// history and not all of it; it returns the raw cells deleted so far.
	underWay := func(fault string) float64 {
		t.Helper()
		d := scrapeMetric(t, url, "promhbase_compactor_raw_cells_deleted_total")
		if d <= 0 || d >= histCells {
			t.Fatalf("before %s: %.0f raw cells deleted, want some of the history's %d and not all", fault, d, histCells)
		}
		return d
	}
	// resumed waits until the compactor deletes raw cells again once the
	// fault is over: it must take up its work where the fault left it.
	resumed := func(fault string, before float64, t0 time.Time) {
		t.Helper()
		over, overAt := scrapeMetric(t, url, "promhbase_compactor_raw_cells_deleted_total"), time.Since(t0)
		d := waitCompactorPast(t, url, over, 3*time.Minute)
		t.Logf("%s: raw cells deleted %.0f when it began, %.0f when it was over (+%v), %.0f at +%v",
			fault, before, over, overAt.Round(time.Second), d, time.Since(t0).Round(time.Second))
	}

	fault := "moves and splits"
	before := underWay(fault)
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	regions := cl.moveAll(ctx, c, data, func() { w.waitAcked(w.ackedCount() + 4) })
	for _, salt := range []byte{2, 5} {
		if err := c.SplitRegion(ctx, data, []byte{salt, 0x80}); err != nil {
			cancel()
			t.Fatalf("split at salt %d: %v", salt, err)
		}
	}
	cancel()
	cl.waitPlaced(c, data, func(rs []*hbase.RegionInfo) bool { return len(rs) == len(regions)+2 })
	resumed(fault, before, t0)

	n := cl.metaServer(c)
	fault = fmt.Sprintf("SIGTERM of region server %d (holding hbase:meta)", n)
	before = underWay(fault)
	t0 = time.Now()
	cl.script("rs-term", fmt.Sprint(n))
	healed := watchHealed(cl, data, cl.addr(n)).wait(t, cl, w.stop)
	t.Logf("%s: regions served again after %v", fault, healed.Sub(t0).Round(time.Millisecond))
	waitExit(cl, n)
	cl.restore(n)
	resumed(fault, before, t0)

	n = cl.metaServer(c)
	fault = fmt.Sprintf("SIGKILL of region server %d (holding hbase:meta and every region)", n)
	before = underWay(fault)
	t0 = time.Now()
	cl.script("rs-kill", fmt.Sprint(n))
	healed = watchHealed(cl, data, cl.addr(n)).wait(t, cl, w.stop)
	t.Logf("%s: regions served again after %v", fault, healed.Sub(t0).Round(time.Millisecond))
	cl.restore(n)
	resumed(fault, before, t0)

	m := 3 - n
	fault = fmt.Sprintf("SIGSTOP of region server %d (holding every region) for %v", m, frozenFor)
	before = underWay(fault)
	t0 = time.Now()
	cl.script("rs-stop", fmt.Sprint(m))
	healed = watchHealed(cl, data, cl.addr(m)).wait(t, cl, w.stop)
	t.Logf("%s: regions served again after %v", fault, healed.Sub(t0).Round(time.Millisecond))
	resumeFrozen(cl, m, t0)
	waitExit(cl, m)
	cl.restore(m)
	resumed(fault, before, t0)

	w.waitAcked(w.ackedCount() + 20)
	w.stop()
	r := w.report(t0, healed)
	t.Logf("remote writes beside the compactor: %s", r)
	if r.clientErrors > 0 {
		t.Errorf("%d answers were 4xx: a storage fault must be a retryable 5xx", r.clientErrors)
	}
	t.Logf("compactor: %.0f series-hours compacted, %.0f raw cells deleted, %.0f errors",
		scrapeMetric(t, url, "promhbase_compactor_series_hours_total"),
		scrapeMetric(t, url, "promhbase_compactor_raw_cells_deleted_total"),
		scrapeMetric(t, url, "promhbase_compactor_errors_total"))
	w.verify(t, url)
	h.verify(t, url)
	checkTables(t, cl, bin, prefix)
}

// history is the samples of histMetrics metrics of histSeries series each,
// one every histStep over histHours closed hours, ending two hours before
// the test: what the compactor folds.
type history struct{ start int64 }

func newHistory() history {
	return history{start: time.Now().Truncate(time.Hour).Add(-(histHours + 2) * time.Hour).UnixMilli()}
}

func histMetric(m int) string { return fmt.Sprintf("fault_hist_%d", m) }

func (h history) ts(i int) int64 { return h.start + int64(i)*histStep }

// value is sample i of series s of metric m: a counter, a gauge of quarter
// steps, and floats of full precision, so that the compactor writes each
// of its cell kinds.
func (h history) value(m, s, i int) float64 {
	switch m {
	case 0:
		return float64(s*1_000_000 + i*7)
	case 1:
		return float64(i%41)*0.25 - float64(s)
	default:
		return math.Sin(float64(s*histSamples+i)) * 1e3
	}
}

// write sends the history, two series a request, each request retried on
// a 5xx or no answer until acknowledged.
func (h history) write(t *testing.T, url string) {
	t.Helper()
	client := &http.Client{Timeout: adapterClientTimeout}
	for m := range histMetrics {
		for s := 0; s < histSeries; s += 2 {
			req := &prompb.WriteRequest{}
			for j := s; j < s+2; j++ {
				ts := prompb.TimeSeries{Labels: []prompb.Label{
					{Name: "__name__", Value: histMetric(m)}, {Name: "series", Value: fmt.Sprintf("%03d", j)},
				}}
				for i := range histSamples {
					ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: h.ts(i), Value: h.value(m, j, i)})
				}
				req.Timeseries = append(req.Timeseries, ts)
			}
			raw, err := proto.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			body := snappy.Encode(nil, raw)
			for attempt := 1; ; attempt++ {
				code, msg := postWrite(context.Background(), client, url, body)
				if code/100 == 2 {
					break
				}
				if code/100 == 4 || attempt == 10 {
					t.Fatalf("history of %s, series %d-%d: %d %s", histMetric(m), s, s+1, code, msg)
				}
				time.Sleep(time.Second)
			}
		}
	}
}

// verify reads the history back through remote read: every sample, bit
// for bit, and nothing else.
func (h history) verify(t *testing.T, url string) {
	t.Helper()
	lost, extra := 0, 0
	for m := range histMetrics {
		got, err := readBack(url, histMetric(m), h.ts(0), h.ts(histSamples-1))
		if err != nil {
			t.Fatalf("remote read of %s: %v", histMetric(m), err)
		}
		for s := range histSeries {
			samples := got[fmt.Sprintf("/%03d", s)]
			extra += max(0, len(samples)-histSamples)
			for i := range histSamples {
				v, ok := samples[h.ts(i)]
				if !ok || math.Float64bits(v) != math.Float64bits(h.value(m, s, i)) {
					if lost < 5 {
						t.Errorf("history sample lost: %s series %03d sample %d (read %v, %v; want %v)", histMetric(m), s, i, v, ok, h.value(m, s, i))
					}
					lost++
				}
			}
		}
	}
	if extra > 0 {
		t.Errorf("history: %d samples read that were never written", extra)
	}
	t.Logf("history: %d samples checked, %d lost", histCells, lost)
}

// waitCompactorPast waits until the adapter's compactor has deleted more
// than above raw cells, and returns how many it has.
func waitCompactorPast(t *testing.T, url string, above float64, within time.Duration) float64 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		d := scrapeMetric(t, url, "promhbase_compactor_raw_cells_deleted_total")
		if d > above {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("the compactor deleted no raw cell past %.0f within %v (%.0f errors)", above, within,
				scrapeMetric(t, url, "promhbase_compactor_errors_total"))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// scrapeMetric returns the sum of the adapter's series of metric name (0
// when it has none).
func scrapeMetric(t *testing.T, url, name string) float64 {
	t.Helper()
	m, err := scrape.Get(context.Background(), url+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return m.Sum(name)
}
