package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"
)

// A point is one sample of one series of a set.
type point struct {
	series int
	t      int64 // ms
	v      float64
}

// A request is one pre-encoded write, ready to send many times over.
type request struct {
	url     string
	body    []byte
	headers map[string]string
	points  int
}

// encoder turns points into a write request for one kind of target.
type encoder func(set []series, pts []point) (request, error)

// remoteWrite encodes a Prometheus remote-write 1.0 request, as Prometheus
// sends it (snappy, protobuf).
func remoteWrite(url string) encoder {
	return func(set []series, pts []point) (request, error) {
		wr := prompb.WriteRequest{Timeseries: make([]prompb.TimeSeries, 0, len(pts))}
		for _, p := range pts {
			s := set[p.series]
			ls := make([]prompb.Label, 0, len(s.labels)+1)
			ls = append(ls, prompb.Label{Name: "__name__", Value: s.metric})
			for _, l := range s.labels {
				ls = append(ls, prompb.Label{Name: l[0], Value: l[1]})
			}
			wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: ls,
				Samples: []prompb.Sample{{Timestamp: p.t, Value: p.v}}})
		}
		raw, err := proto.Marshal(&wr)
		return writeRequest(url, raw, err, len(pts), "application/x-protobuf", "0.1.0")
	}
}

// writeRequest is a remote-write request of the marshalled message raw.
func writeRequest(url string, raw []byte, err error, points int, contentType, version string) (request, error) {
	if err != nil {
		return request{}, fmt.Errorf("encoding write request: %w", err)
	}
	return request{url: url, body: snappy.Encode(nil, raw), points: points, headers: map[string]string{
		"Content-Encoding":                  "snappy",
		"Content-Type":                      contentType,
		"X-Prometheus-Remote-Write-Version": version,
		"User-Agent":                        "benchtool",
	}}, nil
}

// remoteWrite2 encodes a Prometheus remote-write 2.0 request as Prometheus
// sends it: a symbol table of its own per request, each series' labels as
// references into it (no metadata: the load has none).
func remoteWrite2(url string) encoder {
	return func(set []series, pts []point) (request, error) {
		st := writev2.NewSymbolTable()
		wr := writev2.Request{Timeseries: make([]writev2.TimeSeries, 0, len(pts))}
		var b labels.ScratchBuilder
		for _, p := range pts {
			s := set[p.series]
			b.Reset()
			b.Add("__name__", s.metric)
			for _, l := range s.labels {
				b.Add(l[0], l[1])
			}
			b.Sort()
			wr.Timeseries = append(wr.Timeseries, writev2.TimeSeries{LabelsRefs: st.SymbolizeLabels(b.Labels(), nil),
				Samples: []writev2.Sample{{Timestamp: p.t, Value: p.v}}})
		}
		wr.Symbols = st.Symbols()
		raw, err := wr.Marshal()
		return writeRequest(url, raw, err, len(pts), "application/x-protobuf;proto=io.prometheus.write.v2.Request", "2.0.0")
	}
}

// openTSDBPut encodes a POST /api/put of JSON points, as OpenTSDB's users
// send them: whole-second timestamps, integers without a decimal point (it
// stores those as integers), other values in their shortest form.
func openTSDBPut(base string, sync bool) encoder {
	url := base + "/api/put?summary"
	if sync {
		url += "&sync&sync_timeout=600000"
	}
	return func(set []series, pts []point) (request, error) {
		var b bytes.Buffer
		b.Grow(len(pts) * 160)
		b.WriteByte('[')
		for i, p := range pts {
			if i > 0 {
				b.WriteByte(',')
			}
			s := set[p.series]
			b.WriteString(`{"metric":`)
			writeJSONString(&b, s.metric)
			b.WriteString(`,"timestamp":`)
			b.WriteString(strconv.FormatInt(p.t/1000, 10))
			b.WriteString(`,"value":`)
			b.WriteString(strconv.FormatFloat(p.v, 'f', -1, 64))
			b.WriteString(`,"tags":{`)
			for j, l := range s.labels {
				if j > 0 {
					b.WriteByte(',')
				}
				writeJSONString(&b, l[0])
				b.WriteByte(':')
				writeJSONString(&b, l[1])
			}
			b.WriteString("}}")
		}
		b.WriteByte(']')
		return request{url: url, body: b.Bytes(), points: len(pts),
			headers: map[string]string{"Content-Type": "application/json"}}, nil
	}
}

func writeJSONString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s)
	b.Write(q)
}

// send posts r once and checks the answer: a 2xx, and for OpenTSDB's
// summary no failed point.
func (r request) send(ctx context.Context, client *http.Client) (status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(r.body))
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
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("HTTP %d: %.300s", resp.StatusCode, bytes.TrimSpace(body))
	}
	if bytes.Contains(body, []byte(`"failed"`)) {
		var sum struct{ Failed, Success int }
		if json.Unmarshal(body, &sum) == nil && sum.Failed > 0 {
			return resp.StatusCode, fmt.Errorf("%d of %d points failed: %.300s", sum.Failed, r.points, body)
		}
	}
	return resp.StatusCode, nil
}

// sendRetrying sends r until it gets a 2xx, retrying 5xx answers and
// transport errors with Prometheus's remote-write backoff (30 ms doubling
// up to 5 s). It returns the retries made.
func (r request) sendRetrying(ctx context.Context, client *http.Client) (int, error) {
	backoff := 30 * time.Millisecond
	for retries := 0; ; retries++ {
		status, err := r.send(ctx, client)
		if err == nil {
			return retries, nil
		}
		if status != 0 && status/100 != 5 {
			return retries, err
		}
		if ctx.Err() != nil {
			return retries, err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 5*time.Second)
	}
}

func newHTTPClient(conc int, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{MaxIdleConnsPerHost: conc, DisableCompression: true}}
}
