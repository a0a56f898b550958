package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// histFlags are the data-set flags of the histogram subcommands, with the
// histogram data set's defaults: 200 series, one sample every 15 s for two
// hours.
func histFlags(name string, args []string, extra func(*flag.FlagSet)) (dataFlags, error) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	var d dataFlags
	d.register(fs)
	if extra != nil {
		extra(fs)
	}
	_ = fs.Set("series", "200")
	_ = fs.Set("metrics", "4")
	_ = fs.Set("rounds", "480")
	_ = fs.Set("samples-per-request", "500")
	_ = fs.Parse(args)
	if d.start == 0 {
		return d, errors.New("-start is required")
	}
	return d, nil
}

// runHistLoad writes the histogram data set into the adapter or a
// Prometheus (remote write 1.0, one histogram per series entry, as a
// Prometheus queue sends them) and waits for every answer.
func runHistLoad(args []string) error {
	var tgt *string
	d, err := histFlags("histload", args, func(fs *flag.FlagSet) {
		tgt = fs.String("target", "", "adapter=URL | prometheus=URL")
	})
	if err != nil {
		return err
	}
	t, err := parseTarget(*tgt)
	if err != nil || t.kind == "opentsdb" {
		return errors.Join(err, errors.New("-target must be adapter=URL or prometheus=URL"))
	}
	set := histSeriesSet(d.run, d.series, d.metrics)
	hs := histSamples(set, d.rounds, d.skip)
	shards := make([][]request, d.conc)
	buckets := 0
	for w := range d.conc {
		var batch []prompb.TimeSeries
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			r, err := encodeWrite(t.url+"/api/v1/write", &prompb.WriteRequest{Timeseries: batch})
			shards[w] = append(shards[w], r)
			batch = nil
			return err
		}
		for r := range d.rounds {
			ts := d.start + int64(d.skip+r)*d.step
			for s := w; s < len(set); s += d.conc {
				batch = append(batch, prompb.TimeSeries{Labels: promLabels(set[s]),
					Histograms: []prompb.Histogram{prompb.FromIntHistogram(ts, hs[s][r])}})
				buckets += len(hs[s][r].PositiveBuckets)
				if len(batch) == d.perRequest {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
	}
	total := d.series * d.rounds
	answered, err := sendShards(context.Background(), newHTTPClient(d.conc, 10*time.Minute), shards)
	if err != nil {
		return fmt.Errorf("%s: %w", t.kind, err)
	}
	fmt.Printf("target=%s histograms=%d series=%d rounds=%d step_ms=%d buckets_per_histogram=%.1f elapsed=%.3fs histograms_per_sec=%.0f\n",
		t.kind, total, d.series, d.rounds, d.step, float64(buckets)/float64(total), answered.Seconds(), float64(total)/answered.Seconds())
	return nil
}

func promLabels(s series) []prompb.Label {
	ls := make([]prompb.Label, 0, len(s.labels)+1)
	ls = append(ls, prompb.Label{Name: "__name__", Value: s.metric})
	for _, l := range s.labels {
		ls = append(ls, prompb.Label{Name: l[0], Value: l[1]})
	}
	return ls
}

func encodeWrite(url string, wr *prompb.WriteRequest) (request, error) {
	raw, err := proto.Marshal(wr)
	if err != nil {
		return request{}, fmt.Errorf("encoding write request: %w", err)
	}
	n := 0
	for _, ts := range wr.Timeseries {
		n += len(ts.Samples) + len(ts.Histograms)
	}
	return request{url: url, body: snappy.Encode(nil, raw), points: n, headers: map[string]string{
		"Content-Encoding":                  "snappy",
		"Content-Type":                      "application/x-protobuf",
		"X-Prometheus-Remote-Write-Version": "0.1.0",
		"User-Agent":                        "benchtool",
	}}, nil
}

// runHistBlock writes the histogram data set into one Prometheus TSDB
// block, as runPromBlock does the float one, and prints its bytes.
func runHistBlock(args []string) error {
	var dir *string
	d, err := histFlags("histblock", args, func(fs *flag.FlagSet) {
		dir = fs.String("dir", "", "directory to write the block into (required)")
	})
	if err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("-dir is required")
	}
	set := histSeriesSet(d.run, d.series, d.metrics)
	hs := histSamples(set, d.rounds, d.skip)
	ss := make([]storage.Series, len(set))
	for i, s := range set {
		b := labels.NewScratchBuilder(len(s.labels) + 1)
		for _, l := range promLabels(s) {
			b.Add(l.Name, l.Value)
		}
		b.Sort()
		samples := make([]chunks.Sample, d.rounds)
		for r := range samples {
			samples[r] = hsample{t: d.start + int64(d.skip+r)*d.step, h: hs[i][r]}
		}
		ss[i] = storage.NewListSeries(b.Labels(), samples)
	}
	span := int64(d.rounds) * d.step
	path, err := tsdb.CreateBlock(ss, *dir, max(tsdb.DefaultBlockDuration, 2*span+d.step), slog.New(slog.DiscardHandler))
	if err != nil {
		return fmt.Errorf("writing block: %w", err)
	}
	sizes, err := blockSizes(path)
	if err != nil {
		return err
	}
	n := float64(d.series * d.rounds)
	fmt.Printf("target=prometheus-block histograms=%.0f block_bytes=%d chunks_bytes=%d index_bytes=%d bytes_per_histogram=%.3f chunks_bytes_per_histogram=%.3f\n",
		n, sizes["total"], sizes["chunks"], sizes["index"], float64(sizes["total"])/n, float64(sizes["chunks"])/n)
	return nil
}

// hsample is an integer histogram sample for storage.NewListSeries.
type hsample struct {
	t int64
	h *histogram.Histogram
}

func (s hsample) T() int64                      { return s.t }
func (s hsample) ST() int64                     { return 0 }
func (s hsample) F() float64                    { return 0 }
func (s hsample) H() *histogram.Histogram       { return s.h }
func (s hsample) FH() *histogram.FloatHistogram { return nil }
func (s hsample) Type() chunkenc.ValueType      { return chunkenc.ValHistogram }
func (s hsample) Copy() chunks.Sample           { return hsample{t: s.t, h: s.h.Copy()} }

// runHistRead reads the histogram data set back from the adapter (a SAMPLES
// remote read per metric name) and checks every histogram against the
// generated one: the bytes measured hold the whole data set, unchanged.
func runHistRead(args []string) error {
	var tgt *string
	d, err := histFlags("histread", args, func(fs *flag.FlagSet) {
		tgt = fs.String("target", "", "adapter=URL | prometheus=URL")
	})
	if err != nil {
		return err
	}
	t, err := parseTarget(*tgt)
	if err != nil {
		return err
	}
	set := histSeriesSet(d.run, d.series, d.metrics)
	hs := histSamples(set, d.rounds, d.skip)
	want := map[string][]*histogram.Histogram{}
	for i, s := range set {
		want[labelsKey(promLabels(s))] = hs[i]
	}
	first, last := d.start+int64(d.skip)*d.step, d.start+int64(d.skip+d.rounds-1)*d.step
	client := newHTTPClient(1, 10*time.Minute)
	begin := time.Now()
	read := 0
	for m := range d.metrics {
		q, err := readQuery(t, "samples", set[m].metric, first, last)
		if err != nil {
			return err
		}
		got, err := readSeries(context.Background(), client, q)
		if err != nil {
			return fmt.Errorf("%s: %w", t.kind, err)
		}
		for _, s := range got {
			w, ok := want[labelsKey(s.Labels)]
			if !ok || len(s.Histograms) != len(w) || len(s.Samples) != 0 {
				return fmt.Errorf("%s: series %v: %d histograms and %d floats read, want %d histograms", t.kind, s.Labels, len(s.Histograms), len(s.Samples), len(w))
			}
			for r, h := range s.Histograms {
				if h.Timestamp != first+int64(r)*d.step || !h.ToIntHistogram().Equals(w[r]) {
					return fmt.Errorf("%s: series %v: histogram %d read as %v at %d, written %v", t.kind, s.Labels, r, h.ToIntHistogram(), h.Timestamp, w[r])
				}
			}
			read += len(s.Histograms)
		}
	}
	if read != d.series*d.rounds {
		return fmt.Errorf("%s: read %d histograms, want %d", t.kind, read, d.series*d.rounds)
	}
	fmt.Printf("target=%s via=samples histograms=%d equal=true elapsed=%.3fs\n", t.kind, read, time.Since(begin).Seconds())
	return nil
}

func labelsKey(ls []prompb.Label) string {
	var b bytes.Buffer
	for _, l := range ls {
		b.WriteString(l.Name)
		b.WriteByte(0)
		b.WriteString(l.Value)
		b.WriteByte(0)
	}
	return b.String()
}

// readSeries sends one SAMPLES remote read and returns its series.
func readSeries(ctx context.Context, client *http.Client, q request) ([]*prompb.TimeSeries, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.url, bytes.NewReader(q.body))
	if err != nil {
		return nil, err
	}
	for k, v := range q.headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("HTTP %d: %.300s", resp.StatusCode, bytes.TrimSpace(body))
	}
	raw, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, fmt.Errorf("decoding snappy: %w", err)
	}
	var rr prompb.ReadResponse
	if err := proto.Unmarshal(raw, &rr); err != nil {
		return nil, fmt.Errorf("decoding read response: %w", err)
	}
	if len(rr.Results) != 1 {
		return nil, fmt.Errorf("%d results for one query", len(rr.Results))
	}
	return rr.Results[0].Timeseries, nil
}
