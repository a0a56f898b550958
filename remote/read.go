package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/prom-hbase/prom-hbase/store"
)

// ReadConfig configures the remote-read handler.
type ReadConfig struct {
	// SampleLimit bounds the samples of one SAMPLES response, which is built
	// in memory (0: 50M, Prometheus's default; negative: no limit).
	SampleLimit int
	// ConcurrentLimit bounds the reads served at once (default 10).
	ConcurrentLimit int
	// QueueTimeout is how long a read waits for a slot before it is refused
	// with 429 (default 5s).
	QueueTimeout time.Duration
	// Timeout bounds one read from its slot on (default 2m, Prometheus's
	// own query timeout; negative: none). A read still running then ends
	// with 503, or a cut stream once frames went out, instead of holding
	// its slot and its scans for as long as the client waits.
	Timeout time.Duration
	// MaxBytesInFrame bounds a streamed frame, as Prometheus's
	// --storage.remote.read-max-bytes-in-frame (default 1 MiB).
	MaxBytesInFrame int
	// MaxRequestBytes bounds the request body, compressed and decompressed
	// (default 8 MiB).
	MaxRequestBytes int64
}

func (c *ReadConfig) setDefaults() {
	if c.SampleLimit == 0 {
		c.SampleLimit = 5e7
	}
	if c.ConcurrentLimit <= 0 {
		c.ConcurrentLimit = 10
	}
	if c.QueueTimeout <= 0 {
		c.QueueTimeout = 5 * time.Second
	}
	if c.Timeout == 0 {
		c.Timeout = 2 * time.Minute
	}
	if c.MaxBytesInFrame <= 0 {
		c.MaxBytesInFrame = 1 << 20
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = 8 << 20
	}
}

// samplesPerChunk is where Prometheus's head cuts an XOR chunk; a store
// without chunks has its samples cut there.
const samplesPerChunk = 120

const streamedContentType = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"

type readHandler struct {
	q      store.Querier
	cfg    ReadConfig
	m      *Metrics
	logger *slog.Logger
	slots  chan struct{}
	bufs   sync.Pool // *readBuffers
}

type readBuffers struct {
	body, decoded, frame []byte
	pending              []byte // frames of a streamed answer not sent yet
	lbls                 []prompb.Label
	chunks               []prompb.Chunk
	enc                  seriesEncoder
}

// NewReadHandler returns the handler of /api/v1/read.
func NewReadHandler(q store.Querier, cfg ReadConfig, m *Metrics, logger *slog.Logger) http.Handler {
	cfg.setDefaults()
	h := &readHandler{q: q, cfg: cfg, m: m, logger: logger, slots: make(chan struct{}, cfg.ConcurrentLimit)}
	h.bufs.New = func() any { return new(readBuffers) }
	return m.instrument("read", h)
}

// httpError is an answer decided before any byte of the response is sent.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) *httpError {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

func (h *readHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, fmt.Sprintf("method %s not allowed: remote read takes POST", r.Method), http.StatusMethodNotAllowed)
		return
	}
	if err := h.acquire(r.Context()); err != nil {
		h.fail(w, err)
		return
	}
	defer func() { <-h.slots }()
	ctx := r.Context()
	if h.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, h.cfg.Timeout, &httpError{code: http.StatusServiceUnavailable,
			msg: fmt.Sprintf("remote read did not finish within the read timeout of %v: narrow the query, or retry", h.cfg.Timeout)})
		defer cancel()
	}

	bufs := h.bufs.Get().(*readBuffers)
	defer h.bufs.Put(bufs)

	req, queries, err := h.decode(r, bufs)
	if err != nil {
		h.fail(w, err)
		return
	}
	respType, err := negotiateRead(req.AcceptedResponseTypes)
	if err != nil {
		h.fail(w, err)
		return
	}
	if respType == prompb.ReadRequest_STREAMED_XOR_CHUNKS {
		h.streamed(ctx, w, queries, bufs)
		return
	}
	h.samples(ctx, w, queries, bufs)
}

func (h *readHandler) acquire(ctx context.Context) *httpError {
	select {
	case h.slots <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(h.cfg.QueueTimeout)
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return nil
	case <-t.C:
		return errorf(http.StatusTooManyRequests, "too many concurrent remote reads (limit %d): retry later", h.cfg.ConcurrentLimit)
	case <-ctx.Done():
		return errorf(http.StatusServiceUnavailable, "gave up waiting for a read slot: %v", ctx.Err())
	}
}

func (h *readHandler) fail(w http.ResponseWriter, err error) {
	var he *httpError
	if !errors.As(err, &he) {
		he = &httpError{code: http.StatusServiceUnavailable, msg: "storage unavailable: " + err.Error()}
	}
	if he.code >= 500 {
		h.logger.Warn("remote read failed", "code", he.code, "err", he.msg)
	}
	http.Error(w, he.msg, he.code)
}

// decode reads, decompresses and parses the request and turns its queries
// into store queries, so that every bad part is refused before anything is
// sent.
func (h *readHandler) decode(r *http.Request, bufs *readBuffers) (*prompb.ReadRequest, []store.Query, error) {
	limit := h.cfg.MaxRequestBytes
	if r.ContentLength > limit {
		return nil, nil, errorf(http.StatusRequestEntityTooLarge, "body of %d bytes exceeds the limit of %d bytes", r.ContentLength, limit)
	}
	var err error
	bufs.body, err = readBody(bufs.body[:0], r.Body, limit)
	if errors.Is(err, errTooLarge) {
		return nil, nil, errorf(http.StatusRequestEntityTooLarge, "body exceeds the limit of %d bytes", limit)
	}
	if err != nil {
		return nil, nil, errorf(http.StatusBadRequest, "reading body: %v", err)
	}
	n, err := snappy.DecodedLen(bufs.body)
	if err != nil {
		return nil, nil, errorf(http.StatusBadRequest, "body is not snappy block-compressed: %v", err)
	}
	if int64(n) > limit {
		return nil, nil, errorf(http.StatusRequestEntityTooLarge, "body claims %d bytes decompressed, more than the limit of %d bytes", n, limit)
	}
	if cap(bufs.decoded) < n {
		bufs.decoded = make([]byte, n)
	}
	bufs.decoded, err = snappy.Decode(bufs.decoded[:cap(bufs.decoded)], bufs.body)
	if err != nil {
		return nil, nil, errorf(http.StatusBadRequest, "body is not snappy block-compressed: %v", err)
	}
	return parseReadRequest(bufs.decoded)
}

// parseReadRequest decodes a decompressed prometheus.ReadRequest.
func parseReadRequest(b []byte) (*prompb.ReadRequest, []store.Query, error) {
	var req prompb.ReadRequest
	if err := req.Unmarshal(b); err != nil {
		return nil, nil, errorf(http.StatusBadRequest, "decoding prometheus.ReadRequest: %v", err)
	}
	queries, err := toStoreQueries(req.Queries)
	if err != nil {
		return nil, nil, err
	}
	return &req, queries, nil
}

func toStoreQueries(qs []*prompb.Query) ([]store.Query, error) {
	out := make([]store.Query, 0, len(qs))
	for i, q := range qs {
		if q == nil {
			return nil, errorf(http.StatusBadRequest, "query %d is empty", i)
		}
		sq := store.Query{Start: q.StartTimestampMs, End: q.EndTimestampMs}
		if q.Hints != nil && q.Hints.Func == "series" {
			sq.SeriesOnly = true
		}
		if len(q.Matchers) == 0 {
			return nil, errorf(http.StatusBadRequest, "query %d has no matchers", i)
		}
		for _, pm := range q.Matchers {
			var t labels.MatchType
			switch pm.Type {
			case prompb.LabelMatcher_EQ:
				t = labels.MatchEqual
			case prompb.LabelMatcher_NEQ:
				t = labels.MatchNotEqual
			case prompb.LabelMatcher_RE:
				t = labels.MatchRegexp
			case prompb.LabelMatcher_NRE:
				t = labels.MatchNotRegexp
			default:
				return nil, errorf(http.StatusBadRequest, "query %d: unknown matcher type %d", i, pm.Type)
			}
			m, err := labels.NewMatcher(t, pm.Name, pm.Value)
			if err != nil {
				return nil, errorf(http.StatusBadRequest, "query %d: matcher %s%s%q: %v", i, pm.Name, t, pm.Value, err)
			}
			sq.Matchers = append(sq.Matchers, m)
		}
		out = append(out, sq)
	}
	return out, nil
}

// negotiateRead picks the first response type of the request's list that
// this server speaks; an empty list means SAMPLES.
func negotiateRead(accepted []prompb.ReadRequest_ResponseType) (prompb.ReadRequest_ResponseType, error) {
	if len(accepted) == 0 {
		return prompb.ReadRequest_SAMPLES, nil
	}
	for _, t := range accepted {
		if t == prompb.ReadRequest_SAMPLES || t == prompb.ReadRequest_STREAMED_XOR_CHUNKS {
			return t, nil
		}
	}
	names := make([]string, len(accepted))
	for i, t := range accepted {
		names[i] = t.String()
	}
	return 0, errorf(http.StatusBadRequest, "none of the accepted response types %s is supported: this server answers SAMPLES and STREAMED_XOR_CHUNKS", strings.Join(names, ", "))
}

// selectErr classifies an error of a SeriesSet; one that the read's
// timeout caused says so.
func selectErr(ctx context.Context, i int, err error) *httpError {
	if errors.Is(err, store.ErrInvalidInput) {
		return errorf(http.StatusBadRequest, "query %d: %v", i, err)
	}
	var timeout *httpError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &timeout) {
		return errorf(timeout.code, "query %d: %s", i, timeout.msg)
	}
	return errorf(http.StatusServiceUnavailable, "query %d: storage unavailable: %v", i, err)
}

// samples answers with one prompb.ReadResponse, built in memory and bounded
// by the sample limit.
func (h *readHandler) samples(ctx context.Context, w http.ResponseWriter, queries []store.Query, bufs *readBuffers) {
	resp := prompb.ReadResponse{Results: make([]*prompb.QueryResult, len(queries))}
	var total, histograms int
	for i, q := range queries {
		res := &prompb.QueryResult{}
		resp.Results[i] = res
		ss := h.q.Select(ctx, q)
		for ss.Next() {
			s := ss.At()
			total += len(s.Samples) + len(s.Histograms)
			histograms += len(s.Histograms)
			if h.cfg.SampleLimit > 0 && total > h.cfg.SampleLimit {
				ss.Close()
				h.fail(w, errorf(http.StatusBadRequest, "exceeded sample limit (%d): narrow the query or use streamed remote read", h.cfg.SampleLimit))
				return
			}
			res.Timeseries = append(res.Timeseries, toTimeSeries(s))
		}
		err := ss.Err()
		ss.Close()
		if err != nil {
			h.fail(w, selectErr(ctx, i, err))
			return
		}
	}
	data, err := resp.Marshal()
	if err != nil {
		h.fail(w, errorf(http.StatusInternalServerError, "encoding response: %v", err))
		return
	}
	bufs.frame = snappy.Encode(bufs.frame[:cap(bufs.frame)], data)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Header().Set("Content-Encoding", "snappy")
	h.m.samplesRead.Add(float64(total - histograms))
	h.m.histogramsRead.Add(float64(histograms))
	if _, err := w.Write(bufs.frame); err != nil {
		h.logger.Debug("remote read: writing response", "err", err)
	}
	if cap(bufs.frame) > maxPooledBuffer {
		bufs.frame = nil
	}
}

// toTimeSeries copies a series of a SAMPLES answer: At's series is valid
// only until Next, and the response is marshalled after the last.
func toTimeSeries(s store.Series) *prompb.TimeSeries {
	ts := &prompb.TimeSeries{
		Labels:  make([]prompb.Label, 0, s.Labels.Len()),
		Samples: make([]prompb.Sample, len(s.Samples)),
	}
	s.Labels.Range(func(l labels.Label) {
		ts.Labels = append(ts.Labels, prompb.Label{Name: strings.Clone(l.Name), Value: strings.Clone(l.Value)})
	})
	for j, smp := range s.Samples {
		ts.Samples[j] = prompb.Sample{Timestamp: smp.T, Value: smp.V}
	}
	if len(s.Histograms) > 0 {
		ts.Histograms = make([]prompb.Histogram, len(s.Histograms))
		for j, hs := range s.Histograms {
			ts.Histograms[j] = histogramProto(hs)
		}
	}
	return ts
}

// histogramProto copies a histogram sample into its remote-read form, an
// integer or a float histogram as stored, every field kept.
func histogramProto(hs store.HistogramSample) prompb.Histogram {
	if h := hs.H; h != nil {
		return prompb.Histogram{
			Count:          &prompb.Histogram_CountInt{CountInt: h.Count},
			Sum:            h.Sum,
			Schema:         h.Schema,
			ZeroThreshold:  h.ZeroThreshold,
			ZeroCount:      &prompb.Histogram_ZeroCountInt{ZeroCountInt: h.ZeroCount},
			NegativeSpans:  spansProto(h.NegativeSpans),
			NegativeDeltas: slices.Clone(h.NegativeBuckets),
			PositiveSpans:  spansProto(h.PositiveSpans),
			PositiveDeltas: slices.Clone(h.PositiveBuckets),
			ResetHint:      prompb.Histogram_ResetHint(h.CounterResetHint),
			Timestamp:      hs.T,
			CustomValues:   slices.Clone(h.CustomValues),
		}
	}
	fh := hs.FH
	return prompb.Histogram{
		Count:          &prompb.Histogram_CountFloat{CountFloat: fh.Count},
		Sum:            fh.Sum,
		Schema:         fh.Schema,
		ZeroThreshold:  fh.ZeroThreshold,
		ZeroCount:      &prompb.Histogram_ZeroCountFloat{ZeroCountFloat: fh.ZeroCount},
		NegativeSpans:  spansProto(fh.NegativeSpans),
		NegativeCounts: slices.Clone(fh.NegativeBuckets),
		PositiveSpans:  spansProto(fh.PositiveSpans),
		PositiveCounts: slices.Clone(fh.PositiveBuckets),
		ResetHint:      prompb.Histogram_ResetHint(fh.CounterResetHint),
		Timestamp:      hs.T,
		CustomValues:   slices.Clone(fh.CustomValues),
	}
}

func spansProto(spans []histogram.Span) []prompb.BucketSpan {
	if len(spans) == 0 {
		return nil
	}
	out := make([]prompb.BucketSpan, len(spans))
	for i, s := range spans {
		out[i] = prompb.BucketSpan{Offset: s.Offset, Length: s.Length}
	}
	return out
}

// streamed answers with ChunkedReadResponse frames, series in label order,
// each series in frames of at most MaxBytesInFrame (give or take one chunk),
// flushed as they go: memory stays flat whatever the size of the answer. A
// store that keeps chunks hands them over as they are.
func (h *readHandler) streamed(ctx context.Context, w http.ResponseWriter, queries []store.Query, bufs *readBuffers) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		h.fail(w, errorf(http.StatusInternalServerError, "response writer cannot flush: streamed read unavailable"))
		return
	}
	sw := &streamWriter{w: w, flusher: flusher, bufs: bufs, maxBytes: h.cfg.MaxBytesInFrame, delay: flushDelay}
	cq, _ := h.q.(store.ChunkQuerier)
	for i, q := range queries {
		var err error
		if cq != nil {
			err = streamSet(ctx, h, cq.SelectChunks(ctx, q), int64(i), sw.writeChunkSeries)
		} else {
			err = streamSet(ctx, h, h.q.Select(ctx, q), int64(i), sw.writeSeries)
		}
		if err != nil {
			h.abortStream(w, sw, err)
			return
		}
	}
	if err := sw.finish(); err != nil {
		h.logger.Warn("remote read: streamed response cut", "err", err)
	}
}

// seriesSet is store.SeriesSet or store.ChunkSeriesSet: a query's series,
// as samples or as chunks.
type seriesSet[S any] interface {
	Next() bool
	At() S
	Err() error
	Close()
}

// streamSet sends the series of query i with write (the stream writer's
// method for samples or for chunks) and closes ss.
func streamSet[S any](ctx context.Context, h *readHandler, ss seriesSet[S], i int64, write func(int64, S) (floats, histograms int, err error)) error {
	defer ss.Close()
	for ss.Next() {
		floats, histograms, err := write(i, ss.At())
		h.m.samplesRead.Add(float64(floats))
		h.m.histogramsRead.Add(float64(histograms))
		if err != nil {
			return err
		}
	}
	if err := ss.Err(); err != nil {
		return selectErr(ctx, int(i), err)
	}
	return nil
}

// abortStream ends a failed streamed read. Before the first frame the
// client gets a proper status; after it the connection is cut, because a
// stream that ends on a frame boundary would look complete.
func (h *readHandler) abortStream(w http.ResponseWriter, sw *streamWriter, err error) {
	if !sw.abort() {
		h.fail(w, err)
		return
	}
	h.logger.Warn("remote read: aborting streamed response", "err", err)
	panic(http.ErrAbortHandler)
}
