package e2e

import (
	"math"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// histTarget is the scrape target of native histograms. It exposes them as
// client_golang does, in the protobuf exposition format (the only one of
// Prometheus 3.15's scrape formats that carries exponential buckets), and
// like the float target every value is a function of the number of scrapes
// served so far:
//
//   - e2e_native_latency_seconds: exponential buckets (bucket factor 1.1,
//     schema 3), positive observations spread over five decades, so the
//     spans have gaps; reset every 97 scrapes.
//   - e2e_native_delta: schema 0 with negative observations and a zero
//     bucket of width 0.01; the sum goes up and down.
//   - e2e_native_weight: float counts (not whole numbers), positive,
//     negative and zero buckets, schema 1; reset every 61 scrapes.
//     client_golang's Histogram counts whole observations, so this one is
//     a collector of its own that writes the float fields of the exposition.
//   - e2e_classic_size_bytes: a classic histogram, stored by Prometheus as a
//     native histogram with custom buckets (schema -53) because the scrape
//     job converts classic histograms (convert_classic_histograms_to_nhcb).
//
// Each has one series per shard, so both remote-write versions carry each
// kind (see shards); but e2e_classic_size_bytes has no shard "a": the
// remote-write 1.0 sender of Prometheus 3.15 drops custom-bucket histograms
// ("remote write v1 does not support it"), so only 2.0 carries them from a
// scrape. (The generated history sends them with 1.0 all the same; the
// adapter takes them from either.)
type histTarget struct {
	mu      sync.Mutex // one scrape at a time: advance, then gather
	scrapes int64
	latency *prometheus.HistogramVec
	delta   *prometheus.HistogramVec
	size    *prometheus.HistogramVec
	weight  *floatHistograms
	handler http.Handler
	addr    string
}

func newHistTarget() *histTarget {
	ht := &histTarget{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "e2e_native_latency_seconds", Help: "Exponential native histogram.",
			NativeHistogramBucketFactor: 1.1,
		}, []string{"shard"}),
		delta: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "e2e_native_delta", Help: "Native histogram of positive and negative values.",
			NativeHistogramBucketFactor: 2, NativeHistogramZeroThreshold: 0.01,
		}, []string{"shard"}),
		size: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "e2e_classic_size_bytes", Help: "Classic histogram, converted to custom buckets.",
			Buckets: []float64{128, 512, 2048, 8192, 32768},
		}, []string{"shard"}),
		weight: &floatHistograms{desc: prometheus.NewDesc("e2e_native_weight", "Native histogram of float counts.", []string{"shard"}, nil)},
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(ht.latency, ht.delta, ht.size, ht.weight)
	ht.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return ht
}

func startHistTarget(t *testing.T) *histTarget {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ht := newHistTarget()
	ht.addr = l.Addr().String()
	srv := &http.Server{Handler: ht}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return ht
}

func (ht *histTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		http.NotFound(w, r)
		return
	}
	ht.mu.Lock()
	defer ht.mu.Unlock()
	ht.scrapes++
	ht.advance(ht.scrapes)
	ht.handler.ServeHTTP(w, r)
}

// deltaValues are the observations of e2e_native_delta: both signs, two
// inside the zero bucket, one far out on each side.
var deltaValues = []float64{-40, -3.5, -0.75, -0.004, 0, 0.2, 1.5, 6, 300}

// advance makes the observations of scrape n.
func (ht *histTarget) advance(n int64) {
	for k, s := range shards {
		if n%97 == 0 {
			// A new child starts from zero: a counter reset.
			ht.latency.DeleteLabelValues(s)
		}
		for i := range int64(6) {
			e := (n*7 + i*5 + int64(k)) % 23
			ht.latency.WithLabelValues(s).Observe(1e-3 * math.Pow(1.7, float64(e)))
		}
		for i := range int64(4) {
			ht.delta.WithLabelValues(s).Observe(deltaValues[(n+i*3+int64(k))%int64(len(deltaValues))])
		}
		if s == "a" {
			continue
		}
		for i := range int64(3) {
			ht.size.WithLabelValues(s).Observe(100 * math.Pow(3, float64((n+i+int64(k))%9)))
		}
	}
	ht.weight.n = n
}

// floatHistograms is a collector of native histograms with float counts,
// one per shard, each a function of the scrape number.
type floatHistograms struct {
	desc *prometheus.Desc
	n    int64
}

func (f *floatHistograms) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }

func (f *floatHistograms) Collect(ch chan<- prometheus.Metric) {
	for k, s := range shards {
		ch <- floatHistogram{desc: f.desc, shard: s, m: f.n%61 + 1, k: k}
	}
}

// floatHistogram is one series of e2e_native_weight. Its counts grow with
// m (never zero, so the exposition always marks it a float histogram).
type floatHistogram struct {
	desc  *prometheus.Desc
	shard string
	m     int64
	k     int
}

func (h floatHistogram) Desc() *prometheus.Desc { return h.desc }

func (h floatHistogram) Write(out *dto.Metric) error {
	m := float64(h.m)
	span := func(offset int32, length uint32) *dto.BucketSpan {
		return &dto.BucketSpan{Offset: &offset, Length: &length}
	}
	// Buckets -2, -1, 0, 3, 4 on the positive side; 0 and 1 on the
	// negative side.
	pos := make([]float64, 5)
	neg := []float64{m * 0.3, m*0.7 + 0.05}
	zero := m * 0.1
	total := zero + neg[0] + neg[1]
	for j := range pos {
		pos[j] = m*(0.25+0.5*float64(j)) + 0.125*float64(j+h.k)
		total += pos[j]
	}
	sum := m*1.75 - float64(h.k)*0.3
	schema, threshold := int32(1), 0.001
	out.Label = prometheus.MakeLabelPairs(h.desc, []string{h.shard})
	out.Histogram = &dto.Histogram{
		SampleCountFloat: &total,
		SampleSum:        &sum,
		Schema:           &schema,
		ZeroThreshold:    &threshold,
		ZeroCountFloat:   &zero,
		PositiveSpan:     []*dto.BucketSpan{span(-2, 3), span(2, 2)},
		PositiveCount:    pos,
		NegativeSpan:     []*dto.BucketSpan{span(0, 2)},
		NegativeCount:    neg,
	}
	return nil
}

// histScrapeConfigs are the scrape jobs of native histograms: histTarget,
// and Prometheus A itself, of whose metrics only
// prometheus_http_request_duration_seconds is kept (a native histogram with
// bucket factor 1.1 and a bucket limit, so its schema may drop while the
// suite runs).
func histScrapeConfigs(histAddr, selfAddr string) string {
	return `
  - job_name: e2e-histograms
    scrape_native_histograms: true
    convert_classic_histograms_to_nhcb: true
    scrape_protocols: [PrometheusProto, OpenMetricsText1.0.0, PrometheusText0.0.4]
    static_configs:
      - targets: ["` + histAddr + `"]
  - job_name: prometheus
    scrape_native_histograms: true
    scrape_protocols: [PrometheusProto]
    static_configs:
      - targets: ["` + selfAddr + `"]
    metric_relabel_configs:
      - source_labels: [__name__]
        regex: prometheus_http_request_duration_seconds
        action: keep
`
}
