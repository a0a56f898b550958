package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// runCold measures a UID cold start on a store that has never seen the
// strings: one Prometheus-sized request of -series new series, seconds until
// its 2xx (5xx answers are retried as Prometheus does, and counted); then
// -sustain seconds of requests whose series each bring a new label value,
// new strings per second. The HBase JVM's CPU time is reported per new
// string for both.
func runCold(args []string) error {
	fs := flag.NewFlagSet("cold", flag.ExitOnError)
	tgt := fs.String("target", "", "adapter=URL | opentsdb=URL")
	run := fs.String("run", "cold", "token in the pod label values")
	n := fs.Int("series", 10000, "new series in the first request")
	metrics := fs.Int("metrics", 40, "metric names")
	sustain := fs.Duration("sustain", 20*time.Second, "how long to send new series after the first request (0: skip)")
	batch := fs.Int("batch", 2000, "new series per request while sustaining (2,000: a Prometheus queue shard's default max_samples_per_send)")
	conc := fs.Int("concurrency", 4, "requests in flight while sustaining")
	start := fs.Int64("start", 0, "ms of the samples (0: ten minutes ago)")
	warmup := fs.Int("warmup", 20000, "samples of one known series sent first, untimed, so a JVM target has compiled its write path")
	var m cpuMeter
	fs.Var(&m.pids, "pid", "name=PID of a process whose CPU time to report, e.g. hbase=PID (repeatable)")
	_ = fs.Parse(args)
	t, err := parseTarget(*tgt)
	if err != nil {
		return err
	}
	if *start == 0 {
		*start = time.Now().Add(-10*time.Minute).UnixMilli() / 1000 * 1000
	}
	enc := remoteWrite(t.url + "/api/v1/write")
	how := "remote-write"
	if t.kind == "opentsdb" {
		// Synchronous puts answer once HBase has acknowledged every point,
		// as the adapter's 2xx does.
		enc, how = openTSDBPut(t.url, true), "api/put?sync,auto-create"
	}
	set := seriesSet(*run, *n, *metrics)
	pts := make([]point, len(set))
	for i := range pts {
		pts[i] = point{series: i, t: *start, v: float64(i)}
	}
	req, err := enc(set, pts)
	if err != nil {
		return err
	}
	strings := distinctStrings(set)
	ctx := context.Background()
	client := newHTTPClient(*conc, 10*time.Minute)
	if err := warmUp(ctx, client, enc, *warmup, *start-3600_000); err != nil {
		return fmt.Errorf("%s: warm-up: %w", t.kind, err)
	}
	if err := m.start(); err != nil {
		return err
	}
	begin := time.Now()
	retries, err := req.sendRetrying(ctx, client)
	if err != nil {
		return fmt.Errorf("%s: first request: %w", t.kind, err)
	}
	elapsed := time.Since(begin)
	cpu, err := m.stop()
	if err != nil {
		return err
	}
	fmt.Printf("target=%s phase=first-request via=%s series=%d new_strings=%d seconds=%.2f retries=%d%s\n",
		t.kind, how, *n, strings, elapsed.Seconds(), retries, formatCPU(cpu, float64(strings)/1000, "1000_strings"))
	if *sustain <= 0 {
		return nil
	}
	return sustainNewSeries(ctx, t, enc, client, &m, sustainConfig{
		run: *run, known: *n, metrics: *metrics, batch: *batch, conc: *conc,
		d: *sustain, t: *start + 15000,
	})
}

type sustainConfig struct {
	run                         string
	known, metrics, batch, conc int
	d                           time.Duration
	t                           int64
}

// sustainNewSeries sends, from c.conc workers for c.d, requests of
// c.batch series that each keep the labels of a known series but bring a new
// pod value: one new string per series. The clock stops at the last answer.
func sustainNewSeries(ctx context.Context, t target, enc encoder, client *http.Client, m *cpuMeter, c sustainConfig) error {
	var (
		next     atomic.Int64 // pods handed out
		acked    atomic.Int64 // new strings acknowledged
		retries  atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	if err := m.start(); err != nil {
		return err
	}
	begin := time.Now()
	deadline := begin.Add(c.d)
	for range c.conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			set := make([]series, c.batch)
			pts := make([]point, c.batch)
			for time.Now().Before(deadline) {
				first := int(next.Add(int64(c.batch))) - c.batch
				for j := range set {
					k := first + j
					set[j] = newSeries(c.run, k%c.known, c.known+k, c.metrics)
					pts[j] = point{series: j, t: c.t, v: float64(k)}
				}
				req, err := enc(set, pts)
				if err == nil {
					var r int
					r, err = req.sendRetrying(ctx, client)
					retries.Add(int64(r))
				}
				if err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					return
				}
				acked.Add(int64(c.batch))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	if firstErr != nil {
		return fmt.Errorf("%s: sustained new series: %w", t.kind, firstErr)
	}
	cpu, err := m.stop()
	if err != nil {
		return err
	}
	n := acked.Load()
	fmt.Printf("target=%s phase=sustained batch=%d concurrency=%d new_strings=%d seconds=%.2f strings_per_sec=%.0f retries=%d%s\n",
		t.kind, c.batch, c.conc, n, elapsed.Seconds(), float64(n)/elapsed.Seconds(), retries.Load(),
		formatCPU(cpu, float64(n)/1000, "1000_strings"))
	return nil
}

// warmUp writes n samples of a few series whose strings (metric
// benchtool_warmup, label warmup) the measured set never uses.
func warmUp(ctx context.Context, client *http.Client, enc encoder, n int, start int64) error {
	set := make([]series, 10)
	for i := range set {
		set[i] = series{metric: "benchtool_warmup", labels: [][2]string{{"warmup", strconv.Itoa(i)}}}
	}
	const perRequest = 2000
	for off := 0; off < n; off += perRequest {
		pts := make([]point, 0, perRequest)
		for k := off; k < min(off+perRequest, n); k++ {
			pts = append(pts, point{series: k % len(set), t: start + int64(k/len(set))*1000, v: float64(k)})
		}
		req, err := enc(set, pts)
		if err != nil {
			return err
		}
		if _, err := req.sendRetrying(ctx, client); err != nil {
			return err
		}
	}
	return nil
}
