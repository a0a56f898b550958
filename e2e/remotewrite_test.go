package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/prompb"
)

// writeStatus is the outcome of one remote-write request.
type writeStatus struct {
	code int    // HTTP status; 0 when the request got no answer
	msg  string // body of a non-2xx answer, or the transport error
}

func (s writeStatus) ok() bool { return s.code/100 == 2 }

func (s writeStatus) String() string {
	if s.code == 0 {
		return "no answer: " + s.msg
	}
	return strconv.Itoa(s.code) + " " + s.msg
}

// remoteWrite sends series as one remote-write 1.0 request, as Prometheus's
// queue manager does: a snappy block of a prometheus.WriteRequest.
func remoteWrite(ctx context.Context, url string, series []prompb.TimeSeries) writeStatus {
	req := &prompb.WriteRequest{Timeseries: series}
	raw, err := req.Marshal()
	if err != nil {
		return writeStatus{msg: fmt.Sprintf("marshal: %v", err)}
	}
	// Prometheus gives up on an attempt after its remote_timeout (30s by
	// default); the adapter answers within its --write.timeout.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil {
		return writeStatus{msg: err.Error()}
	}
	hreq.Header.Set("Content-Encoding", "snappy")
	hreq.Header.Set("Content-Type", "application/x-protobuf")
	hreq.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return writeStatus{msg: err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	st := writeStatus{code: resp.StatusCode}
	if !st.ok() {
		st.msg = string(bytes.TrimSpace(body))
	}
	return st
}

// mustRemoteWrite retries like Prometheus (5xx and no answer are retried,
// 4xx is final) until the write is acknowledged or the context ends.
func mustRemoteWrite(ctx context.Context, url string, series []prompb.TimeSeries) error {
	for {
		st := remoteWrite(ctx, url, series)
		if st.ok() {
			return nil
		}
		if st.code/100 == 4 {
			return fmt.Errorf("remote write to %s rejected: %v", url, st)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("remote write to %s: last answer %v: %w", url, st, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// newSeries builds a prompb series from name/value pairs (sorted, as the
// protocol requires) and samples.
func newSeries(kv []string, samples []prompb.Sample) prompb.TimeSeries {
	ls := make([]prompb.Label, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		ls = append(ls, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	return prompb.TimeSeries{Labels: ls, Samples: samples}
}

// history is generated past data, written straight into the adapter and into
// Prometheus A (its remote-write receiver), so that queries cross many hour
// rows, a staleness marker and a gap.
type history struct {
	start, end time.Time // first and last sample
	step       time.Duration
	series     []prompb.TimeSeries
	samples    int
}

// Directly written series carry origin="direct"; A's queues drop them, so
// what the adapter holds of them came only from the suite's own writes.
const historyJob = "e2e-history"

func makeHistory(now time.Time) *history {
	const days = 3
	step := time.Minute
	// Start off the hour so that no window lines up with a row boundary,
	// and end before the hour now begun, so nothing lies in the future.
	start := now.Truncate(time.Hour).Add(-days*24*time.Hour - time.Hour + 17*time.Minute + 13*time.Second)
	n := days * 24 * 60
	h := &history{start: start, step: step, end: start.Add(time.Duration(n-1) * step)}
	ts := func(i int) int64 { return start.Add(time.Duration(i) * step).UnixMilli() }
	base := []string{"__name__", "", "origin", "direct", "job", historyJob}
	with := func(name string, kv ...string) []string {
		l := append([]string(nil), base...)
		l[1] = name
		return append(l, kv...)
	}
	for s := range 6 {
		c := make([]prompb.Sample, 0, n)
		var v float64
		for i := range n {
			if i%1009 == 1008 { // counter reset
				v = 0
			}
			v += float64((i*7+s*3)%11) + 0.5
			c = append(c, prompb.Sample{Timestamp: ts(i), Value: v})
		}
		h.add(newSeries(with("e2e_history_requests_total", "series", strconv.Itoa(s)), c))

		g := make([]prompb.Sample, 0, n)
		for i := range n {
			if s == 0 && i >= 1500 && i < 1620 {
				// Series 0 goes away for two hours: a staleness marker
				// first, as Prometheus writes one, then nothing.
				if i == 1500 {
					g = append(g, prompb.Sample{Timestamp: ts(i), Value: math.Float64frombits(value.StaleNaN)})
				}
				continue
			}
			g = append(g, prompb.Sample{Timestamp: ts(i), Value: math.Sin(float64(i)/50+float64(s)) * float64(100+s)})
		}
		h.add(newSeries(with("e2e_history_gauge", "series", strconv.Itoa(s)), g))
	}
	for hd, handler := range []string{"/api", "/home"} {
		bounds := append(append([]string(nil), "0.01", "0.1", "1", "10"), "+Inf")
		buckets := make([][]prompb.Sample, len(bounds))
		var sum, count []prompb.Sample
		cum := make([]float64, len(bounds))
		var total, ssum float64
		for i := range n {
			var run float64
			for b := range bounds {
				run += float64((i+b*3+hd)%(b+2) + 1)
				cum[b] += run
				buckets[b] = append(buckets[b], prompb.Sample{Timestamp: ts(i), Value: cum[b]})
			}
			total = cum[len(cum)-1]
			ssum += float64(i%13) * 0.01
			sum = append(sum, prompb.Sample{Timestamp: ts(i), Value: ssum})
			count = append(count, prompb.Sample{Timestamp: ts(i), Value: total})
		}
		for b, le := range bounds {
			h.add(newSeries(with("e2e_history_duration_seconds_bucket", "handler", handler, "le", le), buckets[b]))
		}
		h.add(newSeries(with("e2e_history_duration_seconds_sum", "handler", handler), sum))
		h.add(newSeries(with("e2e_history_duration_seconds_count", "handler", handler), count))
	}
	return h
}

func (h *history) add(s prompb.TimeSeries) {
	h.series = append(h.series, s)
	h.samples += len(s.Samples)
}

// write sends the history to url in requests of a few thousand samples,
// each series in time order, as a sender replaying a WAL would.
func (h *history) write(ctx context.Context, url string) error {
	const perRequest = 720 // samples of one series per request: 12 hours
	for off := 0; ; off += perRequest {
		var batch []prompb.TimeSeries
		for _, s := range h.series {
			if off >= len(s.Samples) {
				continue
			}
			end := min(off+perRequest, len(s.Samples))
			batch = append(batch, prompb.TimeSeries{Labels: s.Labels, Samples: s.Samples[off:end]})
		}
		if len(batch) == 0 {
			return nil
		}
		if err := mustRemoteWrite(ctx, url, batch); err != nil {
			return fmt.Errorf("history from sample %d: %w", off, err)
		}
	}
}

// remoteRead asks url for the raw samples of the series matching ms in
// [start, end] (a SAMPLES remote read, as an older Prometheus would send).
// The suite uses it to tell which adapter holds what when B and A differ.
func remoteRead(ctx context.Context, url string, start, end time.Time, ms ...*prompb.LabelMatcher) ([]*prompb.TimeSeries, error) {
	req := &prompb.ReadRequest{Queries: []*prompb.Query{{
		StartTimestampMs: start.UnixMilli(),
		EndTimestampMs:   end.UnixMilli(),
		Matchers:         ms,
	}}}
	raw, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	// An adapter that never answers fails the question instead of hanging
	// the suite; past its own --read.timeout (2m) it answers 503.
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Encoding", "snappy")
	hreq.Header.Set("Content-Type", "application/x-protobuf")
	hreq.Header.Set("X-Prometheus-Remote-Read-Version", "0.1.0")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("remote read %s: %s: %.200s", url, resp.Status, body)
	}
	dec, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("remote read %s: snappy: %w", url, err)
	}
	var rr prompb.ReadResponse
	if err := rr.Unmarshal(dec); err != nil {
		return nil, fmt.Errorf("remote read %s: %w", url, err)
	}
	if len(rr.Results) != 1 {
		return nil, fmt.Errorf("remote read %s: %d results for 1 query", url, len(rr.Results))
	}
	return rr.Results[0].Timeseries, nil
}
