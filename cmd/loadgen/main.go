// Command loadgen drives a Remote-Write receiver or a remote-read endpoint with
// a fixed, pre-encoded load and reports throughput and latency. It is the
// benchmark command behind BENCHMARKS.md: the same load goes to the adapter and
// to Prometheus's own receiver in one run, so their ratio is what we publish.
//
// It knows the Prometheus wire protocols only; it must not know how or where
// the receiver stores anything.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/prom-hbase/prom-hbase/internal/readcount"
)

type config struct {
	url         string
	mode        string // write1, write2, read-samples, read-streamed
	series      int
	perRequest  int
	rounds      int
	concurrency int
	start       int64 // ms of the first sample
	step        int64 // ms between a series' samples
	metrics     int
	timeout     time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.url, "url", "http://127.0.0.1:9201/api/v1/write", "endpoint to drive")
	flag.StringVar(&c.mode, "mode", "write1", "write1 | write2 | read-samples | read-streamed")
	flag.IntVar(&c.series, "series", 10000, "distinct series")
	flag.IntVar(&c.perRequest, "samples-per-request", 2000, "samples in one write request")
	flag.IntVar(&c.rounds, "rounds", 20, "samples per series (write) or passes over all metrics (read)")
	flag.IntVar(&c.concurrency, "concurrency", 4, "requests in flight")
	flag.Int64Var(&c.start, "start", 0, "timestamp (ms) of the first sample; 0 = now - rounds*step")
	flag.Int64Var(&c.step, "step", 15000, "ms between a series' samples")
	flag.IntVar(&c.metrics, "metrics", 50, "metric names the series are spread over")
	flag.DurationVar(&c.timeout, "timeout", 60*time.Second, "per-request timeout")
	flag.Parse()
	if c.start == 0 {
		c.start = time.Now().Add(-time.Duration(c.rounds)*time.Duration(c.step)*time.Millisecond).UnixMilli() / 1000 * 1000
	}
	if err := run(c); err != nil {
		slog.Error("loadgen failed", "err", err)
		os.Exit(1)
	}
}

func run(c config) error {
	var shards [][]request
	var err error
	switch c.mode {
	case "write1", "write2":
		shards, err = writeRequests(c)
	case "read-samples", "read-streamed":
		shards, err = readRequests(c)
	default:
		return fmt.Errorf("unknown -mode %q", c.mode)
	}
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: c.timeout, Transport: &http.Transport{MaxIdleConnsPerHost: c.concurrency}}
	var (
		samples   atomic.Int64
		mu        sync.Mutex
		latencies []time.Duration
		firstErr  error
		wg        sync.WaitGroup
	)
	begin := time.Now()
	// Each worker sends its shard's requests in order: a series' samples
	// never overtake each other.
	for w, reqs := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range reqs {
				t0 := time.Now()
				n, err := reqs[i].do(client, c)
				d := time.Since(t0)
				mu.Lock()
				latencies = append(latencies, d)
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("shard %d, request %d: %w", w, i, err)
				}
				mu.Unlock()
				if err != nil {
					return
				}
				samples.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	if firstErr != nil {
		return firstErr
	}
	slices.Sort(latencies)
	pct := func(p float64) time.Duration { return latencies[int(p*float64(len(latencies)-1))] }
	fmt.Printf("mode=%s url=%s requests=%d samples=%d elapsed=%.3fs samples_per_sec=%.0f p50=%s p99=%s\n",
		c.mode, c.url, len(latencies), samples.Load(), elapsed.Seconds(),
		float64(samples.Load())/elapsed.Seconds(), pct(0.5).Round(time.Microsecond), pct(0.99).Round(time.Microsecond))
	return nil
}

type request struct {
	body    []byte
	headers map[string]string
	samples int // samples sent (write); 0 for reads, counted from the answer
}

func (r request) do(client *http.Client, c config) (int, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, c.url, bytes.NewReader(r.body))
	if err != nil {
		return 0, err
	}
	for k, v := range r.headers {
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
	switch c.mode {
	case "read-samples":
		n, err := readcount.Samples(resp.Body)
		return int(n), err
	case "read-streamed":
		n, err := readcount.Streamed(resp.Body)
		return int(n), err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return r.samples, nil
}

// seriesLabels gives series i a realistic label set: a metric name shared by
// series/metrics series, and job/instance/pod-like labels.
func seriesLabels(c config, i int) labels.Labels {
	return labels.FromStrings(
		"__name__", "loadgen_metric_"+strconv.Itoa(i%c.metrics),
		"job", "loadgen",
		"instance", "host-"+strconv.Itoa(i%97)+":9100",
		"pod", "pod-"+strconv.Itoa(i),
		"zone", "zone-"+strconv.Itoa(i%3),
	)
}

func writeRequests(c config) ([][]request, error) {
	lbls := make([]labels.Labels, c.series)
	for i := range lbls {
		lbls[i] = seriesLabels(c, i)
	}
	// Shard w owns the series s with s % concurrency == w and sends them
	// round by round, as the shards of a Prometheus queue do.
	shards := make([][]request, c.concurrency)
	for w := range c.concurrency {
		var keys []int // sample k = round*series + s, for this shard's series, in send order
		for round := range c.rounds {
			for s := w; s < c.series; s += c.concurrency {
				keys = append(keys, round*c.series+s)
			}
		}
		for off := 0; off < len(keys); off += c.perRequest {
			r, err := encodeWrite(c, lbls, keys[off:min(off+c.perRequest, len(keys))])
			if err != nil {
				return nil, err
			}
			shards[w] = append(shards[w], r)
		}
	}
	return shards, nil
}

// encodeWrite builds one write request holding the samples that keys name
// (k = round*series + s).
func encodeWrite(c config, lbls []labels.Labels, keys []int) (request, error) {
	var raw []byte
	var err error
	headers := map[string]string{"Content-Encoding": "snappy", "User-Agent": "loadgen"}
	if c.mode == "write1" {
		wr := prompb.WriteRequest{}
		for _, k := range keys {
			round, s := k/c.series, k%c.series
			ts := prompb.TimeSeries{Samples: []prompb.Sample{{Timestamp: c.start + int64(round)*c.step, Value: float64(k)}}}
			lbls[s].Range(func(l labels.Label) { ts.Labels = append(ts.Labels, prompb.Label{Name: l.Name, Value: l.Value}) })
			wr.Timeseries = append(wr.Timeseries, ts)
		}
		raw, err = proto.Marshal(&wr)
		headers["Content-Type"] = "application/x-protobuf"
		headers["X-Prometheus-Remote-Write-Version"] = "0.1.0"
	} else {
		st := writev2.NewSymbolTable()
		wr := writev2.Request{}
		var buf []uint32
		for _, k := range keys {
			round, s := k/c.series, k%c.series
			buf = st.SymbolizeLabels(lbls[s], buf[:0])
			wr.Timeseries = append(wr.Timeseries, writev2.TimeSeries{
				LabelsRefs: slices.Clone(buf),
				Samples:    []writev2.Sample{{Timestamp: c.start + int64(round)*c.step, Value: float64(k)}},
			})
		}
		wr.Symbols = st.Symbols()
		raw, err = proto.Marshal(&wr)
		headers["Content-Type"] = "application/x-protobuf;proto=io.prometheus.write.v2.Request"
		headers["X-Prometheus-Remote-Write-Version"] = "2.0.0"
	}
	if err != nil {
		return request{}, fmt.Errorf("encoding write request: %w", err)
	}
	return request{body: snappy.Encode(nil, raw), headers: headers, samples: len(keys)}, nil
}

// readRequests asks, metric by metric, for everything a write run of the same
// flags stored.
func readRequests(c config) ([][]request, error) {
	rt := prompb.ReadRequest_SAMPLES
	if c.mode == "read-streamed" {
		rt = prompb.ReadRequest_STREAMED_XOR_CHUNKS
	}
	out := make([][]request, c.concurrency)
	n := 0
	for range c.rounds {
		for m := range c.metrics {
			rr := prompb.ReadRequest{
				Queries: []*prompb.Query{{
					StartTimestampMs: c.start,
					EndTimestampMs:   c.start + int64(c.rounds)*c.step,
					Matchers: []*prompb.LabelMatcher{
						{Type: prompb.LabelMatcher_EQ, Name: "__name__", Value: "loadgen_metric_" + strconv.Itoa(m)},
						{Type: prompb.LabelMatcher_EQ, Name: "job", Value: "loadgen"},
					},
				}},
				AcceptedResponseTypes: []prompb.ReadRequest_ResponseType{rt},
			}
			raw, err := proto.Marshal(&rr)
			if err != nil {
				return nil, fmt.Errorf("encoding read request: %w", err)
			}
			w := n % c.concurrency
			n++
			out[w] = append(out[w], request{body: snappy.Encode(nil, raw), headers: map[string]string{
				"Content-Encoding":                 "snappy",
				"Content-Type":                     "application/x-protobuf",
				"X-Prometheus-Remote-Read-Version": "0.1.0",
			}})
		}
	}
	return out, nil
}
