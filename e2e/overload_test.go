package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/prompb"

	"github.com/prom-hbase/prom-hbase/hbase/hbasetest"
	"github.com/prom-hbase/prom-hbase/internal/scrape"
)

// TestOverloadSixteenSenders is issue 12's overload demonstration: sixteen
// senders of large requests against one adapter on HBase whose in-flight
// limit holds only a few of them. The adapter must answer the rest 429
// rather than take their memory: its peak resident memory stays under its
// resting size plus the limit and a fixed overhead (the Go heap's
// collection headroom and the decoders' buffers), where serving all sixteen
// at once would need several times that. Every sender retries 429 and 5xx
// as Prometheus does (retry_on_http_429); afterwards every sample sent is
// read back exactly once, with its value.
func TestOverloadSixteenSenders(t *testing.T) {
	zk := hbasetest.ZK(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := buildAdapter(t, dir)
	prefix := "overload" + strconv.FormatInt(time.Now().UnixNano(), 36) + "_"
	const limit = 64 << 20
	url := "http://127.0.0.1:" + itoa(freePort(t))
	p := startProcess(t, dir, "adapter", bin,
		"--web.listen-address="+strings.TrimPrefix(url, "http://"),
		"--hbase.zookeeper-quorum="+zk,
		"--hbase.zookeeper-root="+hbasetest.ZKRoot(),
		"--hbase.table-prefix="+prefix,
		"--write.max-bytes-in-flight="+strconv.Itoa(limit>>20)+"MiB",
		"--write.timeout=60s",
	)
	p.waitReady(t, url+"/-/ready", 2*time.Minute)

	const senders, requests, seriesPerRequest, samplesPerSeries = 16, 3, 10000, 4
	step := int64(15000)
	t0 := time.Now().Add(-2*time.Hour).UnixMilli() / 1000 * 1000
	// Every sender writes the same series, each its own timestamps: sender
	// s's request r holds samples t0 + ((s*requests+r)*samplesPerSeries+k)
	// * step, so that every (series, timestamp) is written by one request.
	request := func(s, r int) []prompb.TimeSeries {
		out := make([]prompb.TimeSeries, seriesPerRequest)
		for i := range out {
			samples := make([]prompb.Sample, samplesPerSeries)
			for k := range samples {
				slot := int64((s*requests+r)*samplesPerSeries + k)
				samples[k] = prompb.Sample{Timestamp: t0 + slot*step, Value: overloadValue(i, slot)}
			}
			out[i] = newSeries([]string{
				"__name__", fmt.Sprintf("overload_metric_%d", i%10),
				"job", "overload", "instance", fmt.Sprintf("10.2.%d.%d:9100", i/200, i%200),
				"pod", fmt.Sprintf("pod-%05d", i), "container", "app", "namespace", "load",
			}, samples)
		}
		return out
	}
	// Warm up the UIDs with one small request, so that the peak below is
	// about request memory and not a cold UID cache.
	if err := mustRemoteWrite(ctx, url+"/api/v1/write", request(0, 0)[:1]); err != nil {
		t.Fatal(err)
	}
	rest, err := peakRSS(p.pid())
	if err != nil {
		t.Fatal(err)
	}

	var refused atomic.Int64
	stop := make(chan struct{})
	var gaugeMax atomic.Int64
	go pollGauge(url+"/metrics", "promhbase_write_bytes_in_flight", &gaugeMax, stop)
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	begin := time.Now()
	for s := range senders {
		wg.Go(func() {
			for r := range requests {
				n, err := writeRetrying429(ctx, url+"/api/v1/write", request(s, r))
				refused.Add(int64(n))
				if err != nil {
					errs <- fmt.Errorf("sender %d request %d: %w", s, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	peak, err := peakRSS(p.pid())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d senders x %d requests of %d samples acknowledged in %v; %d answers 429; bytes in flight peaked at %d MiB (limit %d MiB); RSS %d MiB at rest, peak %d MiB",
		senders, requests, seriesPerRequest*samplesPerSeries, time.Since(begin).Round(time.Millisecond), refused.Load(),
		gaugeMax.Load()>>20, limit>>20, rest>>20, peak>>20)
	if refused.Load() == 0 {
		t.Error("no request was refused with 429: the limit was never reached, so nothing was shown")
	}
	if g := gaugeMax.Load(); g > limit {
		t.Errorf("bytes in flight reached %d, above the limit %d", g, limit)
	}
	// The Go heap may grow to twice what is live before it collects, and
	// the HTTP server and HBase client keep buffers of their own.
	const overhead = 128 << 20
	if bound := rest + 2*limit + overhead; peak > bound {
		t.Errorf("peak RSS %d MiB, above rest %d MiB + 2 x limit %d MiB + %d MiB", peak>>20, rest>>20, limit>>20, overhead>>20)
	}

	got, err := remoteRead(ctx, url+"/api/v1/read", time.UnixMilli(t0), time.UnixMilli(t0+int64(senders*requests*samplesPerSeries)*step),
		&prompb.LabelMatcher{Type: prompb.LabelMatcher_EQ, Name: "job", Value: "overload"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != seriesPerRequest {
		t.Fatalf("read back %d series, want %d", len(got), seriesPerRequest)
	}
	for _, s := range got {
		i := overloadSeriesIndex(t, s)
		if want := senders * requests * samplesPerSeries; len(s.Samples) != want {
			t.Fatalf("series %d: %d samples read back, want %d", i, len(s.Samples), want)
		}
		for k, smp := range s.Samples {
			if smp.Timestamp != t0+int64(k)*step || smp.Value != overloadValue(i, int64(k)) {
				t.Fatalf("series %d sample %d: (%d, %v), want (%d, %v)", i, k, smp.Timestamp, smp.Value, t0+int64(k)*step, overloadValue(i, int64(k)))
			}
		}
	}
}

func overloadValue(series int, slot int64) float64 { return float64(series)*1000 + float64(slot) }

func overloadSeriesIndex(t *testing.T, s *prompb.TimeSeries) int {
	for _, l := range s.Labels {
		if l.Name == "pod" {
			i, err := strconv.Atoi(strings.TrimPrefix(l.Value, "pod-"))
			if err != nil {
				t.Fatalf("pod label %q", l.Value)
			}
			return i
		}
	}
	t.Fatalf("series without pod label: %v", s.Labels)
	return 0
}

// writeRetrying429 sends one request until it is acknowledged, waiting as
// Retry-After asks on 429 and retrying 5xx and lost answers; it returns how
// many 429 answers it got. Other 4xx are final.
func writeRetrying429(ctx context.Context, url string, series []prompb.TimeSeries) (int, error) {
	refused := 0
	for {
		st := remoteWrite(ctx, url, series)
		switch {
		case st.ok():
			return refused, nil
		case st.code == http.StatusTooManyRequests:
			refused++
		case st.code/100 == 4:
			return refused, fmt.Errorf("rejected: %v", st)
		}
		select {
		case <-ctx.Done():
			return refused, fmt.Errorf("last answer %v: %w", st, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// peakRSS is the process's peak resident set size (VmHWM), in bytes.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// pollGauge records the highest value of a gauge on a /metrics page until
// stop is closed.
func pollGauge(url, name string, highest *atomic.Int64, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		m, err := scrape.Get(context.Background(), url)
		if err != nil {
			continue
		}
		if f := m.Sum(name); int64(f) > highest.Load() {
			highest.Store(int64(f))
		}
	}
}

// pid is the current incarnation's process ID.
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}
