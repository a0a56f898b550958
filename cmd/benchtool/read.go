package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/prom-hbase/prom-hbase/internal/readcount"
)

// runRead reads the whole data set back, metric by metric, -concurrency
// queries in flight, -reps times, and prints the median samples/s. Every
// pass must return exactly series x rounds samples.
func runRead(args []string) error {
	fs := flag.NewFlagSet("read", flag.ExitOnError)
	var d dataFlags
	d.register(fs)
	tgt := fs.String("target", "", "adapter=URL | prometheus=URL | opentsdb=URL")
	mode := fs.String("mode", "streamed", "remote read response type: streamed | samples (OpenTSDB: /api/query)")
	reps := fs.Int("reps", 3, "passes over everything; the median is reported")
	warm := fs.Int("warmup-reps", 1, "untimed passes first (a restarted JVM compiles its read path)")
	var m cpuMeter
	fs.Var(&m.pids, "pid", "name=PID of a process whose CPU time over the timed passes to report (repeatable)")
	warmFor := fs.Duration("warmup", 0, "then more untimed passes until this long has passed since the first: "+
		"a JVM compiles a method after some ten thousand calls, which one pass over a small data set does not reach")
	tol := fs.Float64("steady", 0.10, "then more untimed passes, in windows of 3 s, until five windows in a row "+
		"agree within this fraction (steady.go); 0: no such wait")
	warmMax := fs.Duration("warmup-max", 3*time.Minute, "the longest the untimed passes go on waiting for -steady")
	_ = fs.Parse(args)
	t, err := parseTarget(*tgt)
	if err != nil {
		return err
	}
	if d.start == 0 {
		return errors.New("-start is required")
	}
	set := seriesSet(d.run, d.series, d.metrics)
	want := int64(d.series) * int64(d.rounds)
	first, last := d.start+int64(d.skip)*d.step, d.start+int64(d.skip+d.rounds-1)*d.step
	var queries []request
	names := map[string]bool{}
	for _, s := range set {
		if names[s.metric] {
			continue
		}
		names[s.metric] = true
		q, err := readQuery(t, *mode, s.metric, first, last)
		if err != nil {
			return err
		}
		queries = append(queries, q)
	}
	via := *mode
	if t.kind == "opentsdb" {
		via = "api/query"
	}
	client := newHTTPClient(d.conc, 10*time.Minute)
	pass := func() (float64, error) {
		got, elapsed, err := readAll(context.Background(), client, t, *mode, queries, d.conc)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", t.kind, err)
		}
		if got != want {
			return 0, fmt.Errorf("%s read %d samples, want %d", t.kind, got, want)
		}
		return float64(got) / elapsed.Seconds(), nil
	}
	began := time.Now()
	cold, err := pass()
	if err != nil {
		return err
	}
	warmups := 1
	for ; warmups < *warm || time.Since(began) < *warmFor; warmups++ {
		if _, err := pass(); err != nil {
			return err
		}
	}
	settled := "off"
	if *tol > 0 {
		n, ok, windows, err := untilSteady(pass, began, max(*warmMax, *warmFor), warmWindow, *tol)
		if err != nil {
			return err
		}
		warmups += n
		settled = fmt.Sprintf("%t", ok)
		if !ok {
			slog.Warn("read rate not steady when the warm-up ended: still climbing, or noisier than -steady",
				"target", t.kind, "warmup_max", *warmMax, "window_rates", windows[max(0, len(windows)-steadyWindows):])
		}
	}
	warmSecs := time.Since(began).Seconds()
	rates := make([]float64, 0, *reps)
	if err := m.start(); err != nil {
		return err
	}
	for range *reps {
		r, err := pass()
		if err != nil {
			return err
		}
		rates = append(rates, r)
	}
	cpu, err := m.stop()
	if err != nil {
		return err
	}
	mid, lo, hi := medianOf(rates), slices.Min(rates), slices.Max(rates)
	fmt.Printf("target=%s via=%s samples=%d reps=%d warmup_passes=%d warmup_s=%.0f steady=%s first_pass_samples_per_sec=%.0f samples_per_sec=%.0f min=%.0f max=%.0f%s\n",
		t.kind, via, want, *reps, warmups, warmSecs, settled, cold, mid, lo, hi,
		formatCPU(cpu, float64(want)*float64(*reps)/1e6, "million"))
	return nil
}

// readQuery encodes the query for every series of one metric in [first,
// last] (ms, inclusive).
func readQuery(t target, mode, metric string, first, last int64) (request, error) {
	if t.kind == "opentsdb" {
		// "none" returns every series on its own, without interpolation.
		body, err := json.Marshal(map[string]any{
			"start": first / 1000, "end": last / 1000,
			"queries": []map[string]any{{"aggregator": "none", "metric": metric}},
		})
		return request{url: t.url + "/api/query", body: body,
			headers: map[string]string{"Content-Type": "application/json"}}, err
	}
	rt := prompb.ReadRequest_SAMPLES
	if mode == "streamed" {
		rt = prompb.ReadRequest_STREAMED_XOR_CHUNKS
	}
	raw, err := proto.Marshal(&prompb.ReadRequest{
		Queries: []*prompb.Query{{StartTimestampMs: first, EndTimestampMs: last,
			Matchers: []*prompb.LabelMatcher{{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: metric}}}},
		AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{rt},
	})
	if err != nil {
		return request{}, fmt.Errorf("encoding read request: %w", err)
	}
	return request{url: t.url + "/api/v1/read", body: snappy.Encode(nil, raw), headers: map[string]string{
		"Content-Encoding":                 "snappy",
		"Content-Type":                     "application/x-protobuf",
		"X-Prometheus-Remote-Read-Version": "0.1.0",
	}}, nil
}

func readAll(ctx context.Context, client *http.Client, t target, mode string, queries []request, conc int) (int64, time.Duration, error) {
	var (
		next, samples atomic.Int64
		wg            sync.WaitGroup
		mu            sync.Mutex
		firstErr      error
	)
	begin := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(queries) {
					return
				}
				n, err := readOne(ctx, client, t, mode, queries[i])
				if err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					return
				}
				samples.Add(n)
			}
		}()
	}
	wg.Wait()
	return samples.Load(), time.Since(begin), firstErr
}

func readOne(ctx context.Context, client *http.Client, t target, mode string, q request) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.url, bytes.NewReader(q.body))
	if err != nil {
		return 0, err
	}
	for k, v := range q.headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	switch {
	case t.kind == "opentsdb":
		return countOpenTSDB(resp.Body)
	case mode == "streamed":
		return readcount.Streamed(resp.Body)
	}
	return readcount.Samples(resp.Body)
}
