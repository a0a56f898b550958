package remote

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/prom-hbase/prom-hbase/seriesrules"
)

// Metrics are the HTTP layer's instruments. One Metrics serves both
// handlers; create it once per registry.
type Metrics struct {
	samplesReceived    prometheus.Counter
	samplesWritten     prometheus.Counter
	samplesRejected    *prometheus.CounterVec
	histogramsReceived prometheus.Counter
	histogramsWritten  prometheus.Counter
	histogramsRejected *prometheus.CounterVec
	exemplarsDropped   prometheus.Counter
	samplesRead        prometheus.Counter
	histogramsRead     prometheus.Counter
	duration           *prometheus.HistogramVec
	inFlight           *prometheus.GaugeVec
	bytesInFlight      prometheus.Gauge
	seriesCacheHits    prometheus.Counter
	seriesCacheMisses  prometheus.Counter
}

// NewMetrics creates the metrics and registers them on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		samplesReceived: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_remote_write_samples_received_total",
			Help: "Float samples received in remote-write requests that could be decoded.",
		}),
		samplesWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_remote_write_samples_written_total",
			Help: "Float samples acknowledged as stored.",
		}),
		samplesRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_remote_write_samples_rejected_total",
			Help: "Float samples received but not stored, by reason.",
		}, []string{"reason"}),
		histogramsReceived: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_remote_write_histograms_received_total",
			Help: "Native histogram samples received in remote-write requests that could be decoded.",
		}),
		histogramsWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_remote_write_histograms_written_total",
			Help: "Native histogram samples acknowledged as stored.",
		}),
		histogramsRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_remote_write_histograms_rejected_total",
			Help: "Native histogram samples received but not stored, by reason.",
		}, []string{"reason"}),
		exemplarsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_remote_write_exemplars_dropped_total",
			Help: "Exemplars received in decoded write requests, none of them stored: the adapter keeps no exemplars (remote read cannot return them). A retried request counts its exemplars again.",
		}),
		samplesRead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_remote_read_samples_total",
			Help: "Float samples sent in remote-read responses.",
		}),
		histogramsRead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_remote_read_histograms_total",
			Help: "Native histogram samples sent in remote-read responses.",
		}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                           "promhbase_http_request_duration_seconds",
			Help:                           "Duration of remote-storage HTTP requests, by endpoint and status code.",
			Buckets:                        []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
			NativeHistogramBucketFactor:    1.1,
			NativeHistogramMaxBucketNumber: 100,
		}, []string{"endpoint", "code"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "promhbase_http_requests_in_flight",
			Help: "Remote-storage HTTP requests being served, by endpoint.",
		}, []string{"endpoint"}),
		bytesInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "promhbase_write_bytes_in_flight",
			Help: "Bytes reserved by the remote-write requests being served (bodies, decompressed bodies, decoded series), bounded by --write.max-bytes-in-flight.",
		}),
		seriesCacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_write_series_cache_hits_total",
			Help: "Remote-write series found in the series cache (--write.series-cache-bytes): neither checked nor resolved again (nor, in 1.0, decoded).",
		}),
		seriesCacheMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promhbase_write_series_cache_misses_total",
			Help: "Remote-write series looked up in the series cache and not found there.",
		}),
	}
	for _, r := range append([]string{reasonStorage, reasonStoreInvalid, reasonUIDExhausted}, seriesrules.Reasons...) {
		m.samplesRejected.WithLabelValues(r)
		m.histogramsRejected.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.samplesReceived, m.samplesWritten, m.samplesRejected,
			m.histogramsReceived, m.histogramsWritten, m.histogramsRejected, m.exemplarsDropped,
			m.samplesRead, m.histogramsRead, m.duration, m.inFlight, m.bytesInFlight,
			m.seriesCacheHits, m.seriesCacheMisses)
	}
	return m
}

// instrument wraps h with the duration and in-flight metrics of endpoint.
// Unlike promhttp's wrappers it observes from a defer, so a handler that
// aborts a streamed response (panic(http.ErrAbortHandler)) is still counted.
func (m *Metrics) instrument(endpoint string, h http.Handler) http.Handler {
	inFlight := m.inFlight.WithLabelValues(endpoint)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		inFlight.Inc()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			inFlight.Dec()
			code := rec.status
			if code == 0 {
				code = http.StatusOK
			}
			if p := recover(); p != nil {
				m.duration.WithLabelValues(endpoint, "aborted").Observe(time.Since(start).Seconds())
				panic(p)
			}
			m.duration.WithLabelValues(endpoint, strconv.Itoa(code)).Observe(time.Since(start).Seconds())
		}()
		h.ServeHTTP(rec, r)
	})
}

// statusRecorder remembers the status code and keeps http.Flusher reachable
// for streamed reads.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
