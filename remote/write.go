package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/snappy"

	"github.com/prom-hbase/prom-hbase/store"
)

// WriteConfig configures the remote-write handler.
type WriteConfig struct {
	// MaxBodyBytes bounds the compressed body (default 16 MiB).
	MaxBodyBytes int64
	// MaxDecodedBytes bounds the body once decompressed, checked against
	// snappy's length header before anything is decoded (default 64 MiB).
	MaxDecodedBytes int64
	// MaxRequestMemory bounds what one request may take in all: its body,
	// the body decompressed, and the decoded series, counted by a scan
	// before they are allocated (default 128 MiB). A request above it is
	// refused with 413: it could never be written.
	MaxRequestMemory int64
	// MaxBytesInFlight bounds what all requests being served may take,
	// counted as for MaxRequestMemory and reserved before each allocation;
	// a request that does not fit gets 429 and Retry-After (default
	// DefaultMaxBytesInFlight()).
	MaxBytesInFlight int64
	// Timeout bounds the time the store may take to acknowledge a request;
	// past it the sender gets 503 and retries (default 30s).
	Timeout time.Duration
	// SeriesCacheBytes bounds the cache of the remote-write series seen
	// before (seriesCache); 0 means no cache. The store written to
	// must report series IDs (store.SeriesIn.ReportID), as *store.Store
	// does; with another it stays empty.
	SeriesCacheBytes int64
	Limits
}

func (c *WriteConfig) setDefaults() {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 16 << 20
	}
	if c.MaxDecodedBytes <= 0 {
		c.MaxDecodedBytes = 64 << 20
	}
	if c.MaxRequestMemory <= 0 {
		c.MaxRequestMemory = 128 << 20
	}
	if c.MaxBytesInFlight <= 0 {
		c.MaxBytesInFlight = DefaultMaxBytesInFlight()
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
}

// The protobuf messages of the two remote-write versions, as named in the
// Content-Type's proto parameter.
const (
	protoV1 = "prometheus.WriteRequest"
	protoV2 = "io.prometheus.write.v2.Request"
)

// Response headers of remote write 2.0, always set on 2.0 answers.
const (
	headerSamplesWritten    = "X-Prometheus-Remote-Write-Samples-Written"
	headerHistogramsWritten = "X-Prometheus-Remote-Write-Histograms-Written"
	headerExemplarsWritten  = "X-Prometheus-Remote-Write-Exemplars-Written"
)

// Pooled buffers larger than this are dropped rather than kept, so one huge
// request does not pin its memory for the life of the process.
const maxPooledBuffer = 8 << 20

type writeHandler struct {
	app      store.Appender
	cfg      WriteConfig
	m        *Metrics
	logger   *slog.Logger
	pool     sync.Pool // *pooledWrite
	inFlight *inFlight
	cache    *seriesCache // nil: none
}

// pooledWrite is everything one request needs, reused across requests.
type pooledWrite struct {
	body    []byte
	decoded []byte
	req     writeRequest
}

// NewWriteHandler returns the handler of /api/v1/write: remote write 1.0 and
// 2.0 on one endpoint, negotiated by Content-Type as the 2.0 specification
// says. It answers 204 only once app has stored every sample.
func NewWriteHandler(app store.Appender, cfg WriteConfig, m *Metrics, logger *slog.Logger) http.Handler {
	return m.instrument("write", newWriteHandler(app, cfg, m, logger))
}

func newWriteHandler(app store.Appender, cfg WriteConfig, m *Metrics, logger *slog.Logger) *writeHandler {
	cfg.setDefaults()
	h := &writeHandler{app: app, cfg: cfg, m: m, logger: logger, inFlight: newInFlight(cfg.MaxBytesInFlight, m.bytesInFlight),
		cache: newSeriesCache(cfg.SeriesCacheBytes)}
	h.pool.New = func() any { return new(pooledWrite) }
	return h
}

// negotiateWrite picks the message from the request headers alone, so an
// unsupported request is refused before its body is read.
func negotiateWrite(hdr http.Header) (msg string, err error) {
	enc := hdr.Get("Content-Encoding")
	if enc == "" {
		return "", errors.New("missing Content-Encoding header: remote write bodies must be snappy-compressed (Content-Encoding: snappy)")
	}
	if !strings.EqualFold(strings.TrimSpace(enc), "snappy") {
		return "", fmt.Errorf("unsupported Content-Encoding %q: only snappy is accepted", enc)
	}
	ct := hdr.Get("Content-Type")
	if ct == "" {
		return "", fmt.Errorf("missing Content-Type header: use application/x-protobuf (remote write 1.0) or application/x-protobuf;proto=%s (2.0)", protoV2)
	}
	media, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", fmt.Errorf("malformed Content-Type %q: %w", ct, err)
	}
	if media != "application/x-protobuf" {
		return "", fmt.Errorf("unsupported Content-Type %q: expected application/x-protobuf", ct)
	}
	switch p, ok := params["proto"]; {
	case !ok, p == protoV1:
		return protoV1, nil
	case p == protoV2:
		return protoV2, nil
	default:
		return "", fmt.Errorf("unsupported protobuf message %q in Content-Type: accepted are %s and %s", p, protoV1, protoV2)
	}
}

// writeResult is what a request achieved, for the answer and the metrics.
type writeResult struct {
	v2         bool
	code       int
	samples    int // float samples durable
	histograms int // native histogram samples durable
	exemplars  int // exemplars accepted (and dropped: they are not stored)
	msg        string
}

func (res writeResult) fail(e *httpError) writeResult {
	res.code, res.msg = e.code, e.msg
	return res
}

const overloaded = "overloaded: the remote-write requests being served hold the limit of %d bytes; retry later"

// retryAfter is the Retry-After of a 429, in seconds: about the time a
// request takes to be written, after which in-flight bytes have freed.
const retryAfter = "1"

func (h *writeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	res := h.serve(r)
	hdr := w.Header()
	if res.v2 {
		// Required on every 2.0 answer, whatever the status.
		hdr.Set(headerSamplesWritten, strconv.Itoa(res.samples))
		hdr.Set(headerHistogramsWritten, strconv.Itoa(res.histograms))
		hdr.Set(headerExemplarsWritten, strconv.Itoa(res.exemplars))
	}
	switch res.code {
	case http.StatusMethodNotAllowed:
		hdr.Set("Allow", http.MethodPost)
	case http.StatusTooManyRequests:
		hdr.Set("Retry-After", retryAfter)
	case http.StatusNoContent:
		w.WriteHeader(res.code)
		return
	}
	if res.code >= 500 {
		h.logger.Warn("remote write failed", "code", res.code, "err", res.msg)
	} else {
		h.logger.Debug("remote write refused", "code", res.code, "err", res.msg)
	}
	http.Error(w, res.msg, res.code)
}

// serve answers one request. Memory is reserved from h.inFlight before each
// allocation that depends on the request (body, decompressed body, decoded
// series) and released when the request is done with it.
func (h *writeHandler) serve(r *http.Request) writeResult {
	if r.Method != http.MethodPost {
		return writeResult{code: http.StatusMethodNotAllowed, msg: fmt.Sprintf("method %s not allowed: remote write takes POST", r.Method)}
	}
	msg, err := negotiateWrite(r.Header)
	if err != nil {
		return writeResult{code: http.StatusUnsupportedMediaType, msg: err.Error()}
	}
	res := writeResult{v2: msg == protoV2}
	if r.ContentLength > h.cfg.MaxBodyBytes {
		return res.fail(errorf(http.StatusRequestEntityTooLarge, "body of %d bytes exceeds the limit of %d bytes", r.ContentLength, h.cfg.MaxBodyBytes))
	}
	resv := reservation{f: h.inFlight}
	bodyLen := r.ContentLength
	if bodyLen < 0 { // unknown length: the most it may be, until it is read
		bodyLen = h.cfg.MaxBodyBytes
	}
	if !resv.add(bodyLen) {
		return res.fail(errorf(http.StatusTooManyRequests, overloaded, h.cfg.MaxBytesInFlight))
	}

	pw := h.pool.Get().(*pooledWrite)
	var storeRunning <-chan error // receives when an abandoned store call returns
	defer func() {
		if storeRunning != nil {
			// The store may still read pw's buffers: they stay reserved
			// and out of the pool until it returns.
			go func() { <-storeRunning; resv.releaseAll() }()
			return
		}
		resv.releaseAll()
		h.putPooled(pw)
	}()

	if e := h.receiveBody(r, pw, &resv); e != nil {
		return res.fail(e)
	}
	req, e := h.decode(pw, &resv, msg)
	if e != nil {
		return res.fail(e)
	}
	h.m.samplesReceived.Add(float64(req.numSamples()))
	h.m.histogramsReceived.Add(float64(req.numHistograms))
	h.m.exemplarsDropped.Add(float64(req.numExemplars))

	if bad := req.validate(h.cfg.Limits); bad != nil {
		h.reject(bad.Reason, req.numSamples(), req.numHistograms)
		return res.fail(errorf(http.StatusBadRequest, "invalid request, none of its %s written: %v", req.describe(), bad))
	}
	res, storeRunning = h.write(r.Context(), res, req)
	return res
}

// receiveBody reads the compressed body into pw.body, holding its length
// reserved.
func (h *writeHandler) receiveBody(r *http.Request, pw *pooledWrite, resv *reservation) *httpError {
	if r.ContentLength > 0 && int64(cap(pw.body)) <= r.ContentLength {
		// Exactly, not by doubling; the extra byte lets the read see EOF.
		pw.body = make([]byte, 0, r.ContentLength+1)
	}
	var err error
	pw.body, err = readBody(pw.body[:0], r.Body, h.cfg.MaxBodyBytes)
	if errors.Is(err, errTooLarge) {
		return errorf(http.StatusRequestEntityTooLarge, "body exceeds the limit of %d bytes", h.cfg.MaxBodyBytes)
	}
	if err != nil {
		return errorf(http.StatusBadRequest, "reading body: %v", err)
	}
	resv.shrink(int64(len(pw.body)))
	return nil
}

// decode decompresses pw.body into pw.decoded and decodes it into pw.req,
// reserving the decompressed body and then what the scan says the decoded
// request takes, each before it is allocated.
func (h *writeHandler) decode(pw *pooledWrite, resv *reservation, msg string) (*writeRequest, *httpError) {
	n, err := snappy.DecodedLen(pw.body)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "body is not snappy block-compressed: %v", err)
	}
	if int64(n) > h.cfg.MaxDecodedBytes {
		return nil, errorf(http.StatusRequestEntityTooLarge, "body claims %d bytes decompressed, more than the limit of %d bytes", n, h.cfg.MaxDecodedBytes)
	}
	if !resv.add(int64(n)) {
		return nil, errorf(http.StatusTooManyRequests, overloaded, h.cfg.MaxBytesInFlight)
	}
	if cap(pw.decoded) < n {
		pw.decoded = make([]byte, n)
	}
	pw.decoded, err = snappy.Decode(pw.decoded[:cap(pw.decoded)], pw.body)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "body is not snappy block-compressed: %v", err)
	}

	v2 := msg == protoV2
	var sh shape
	if v2 {
		sh = scanV2(pw.decoded)
	} else {
		sh = scanV1(pw.decoded)
	}
	// Decoded, the request stays live while the store writes it, which
	// takes memory of its own: both are charged before either is taken.
	mem := sh.memory(len(pw.decoded)) + sh.writeMemory()
	if total := resv.held + mem; total > h.cfg.MaxRequestMemory || total > h.cfg.MaxBytesInFlight {
		return nil, errorf(http.StatusRequestEntityTooLarge, "request too large: it needs %d bytes (body %d, decompressed %d, %d series with %d labels, %d samples and %d histograms), more than the limit of %d bytes per request",
			total, len(pw.body), n, sh.series, sh.labels, sh.samples, sh.histograms(), min(h.cfg.MaxRequestMemory, h.cfg.MaxBytesInFlight))
	}
	if !resv.add(mem) {
		return nil, errorf(http.StatusTooManyRequests, overloaded, h.cfg.MaxBytesInFlight)
	}
	req := &pw.req
	req.cache = h.cache
	if v2 {
		err = req.decodeV2Sized(pw.decoded, sh)
	} else {
		err = req.decodeV1Sized(pw.decoded, sh)
	}
	h.m.seriesCacheHits.Add(float64(req.cacheHits))
	h.m.seriesCacheMisses.Add(float64(req.cacheMisses))
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "decoding %s: %v", msg, err)
	}
	return req, nil
}

func (h *writeHandler) putPooled(pw *pooledWrite) {
	if cap(pw.body) > maxPooledBuffer {
		pw.body = nil
	}
	if cap(pw.decoded) > maxPooledBuffer {
		pw.decoded = nil
	}
	if pw.req.arenaBytes() > maxPooledBuffer {
		pw.req = writeRequest{intern: pw.req.intern}
	}
	pw.req.reset()
	h.pool.Put(pw)
}

// write hands a validated request to the store: samples and histograms,
// then metadata. storeRunning is non-nil when a store call was abandoned at
// the deadline and may still read the request.
func (h *writeHandler) write(ctx context.Context, res writeResult, req *writeRequest) (_ writeResult, storeRunning <-chan error) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	var refused *store.RefusedError
	if len(req.series) > 0 {
		running, err := h.callStore(ctx, func(ctx context.Context) error { return h.app.Write(ctx, req.series) })
		if running == nil {
			h.learn(req)
		}
		switch {
		case errors.As(err, &refused):
			// The other series are durable: a partial write, answered 400
			// (a retry of the refused series cannot succeed).
			h.reject(reasonUIDExhausted, refused.Samples, refused.Histograms)
		case err != nil:
			return h.storeFailed(res, req, err), running
		}
		res.samples, res.histograms = req.numSamples(), req.numHistograms
		if refused != nil {
			res.samples -= refused.Samples
			res.histograms -= refused.Histograms
		}
		h.m.samplesWritten.Add(float64(res.samples))
		h.m.histogramsWritten.Add(float64(res.histograms))
	}
	if len(req.metadata) > 0 {
		running, err := h.callStore(ctx, func(ctx context.Context) error { return h.app.WriteMetadata(ctx, req.metadata) })
		if err != nil {
			// Validated before: a failure here is the storage's. The
			// sender retries the whole request, which is idempotent; the
			// answer counts nothing as written, as it cannot tell.
			res.samples, res.histograms = 0, 0
			res.code, res.msg = http.StatusServiceUnavailable, fmt.Sprintf("metadata not written, retry: %v", shortStoreError(err, h.cfg.Timeout))
			return res, running
		}
	}
	if refused != nil {
		written := fmt.Sprintf("%d of %d samples", res.samples, req.numSamples())
		if req.numHistograms > 0 {
			written += fmt.Sprintf(" and %d of %d histograms", res.histograms, req.numHistograms)
		}
		res.code, res.msg = http.StatusBadRequest, fmt.Sprintf("%s written; %v", written, refused)
		return res, nil
	}
	// Exemplars are accepted and dropped (see the package doc): counted
	// as written only in a 2xx answer, when every series was.
	res.code, res.exemplars = http.StatusNoContent, req.numExemplars
	return res, nil
}

// learn puts in the series cache the series of req that the store
// resolved (and reported the IDs of) without it. Called only once the
// store has returned: until then it may still set IDs.
func (h *writeHandler) learn(req *writeRequest) {
	for _, l := range req.learn {
		s := &req.series[l.i]
		if s.ID == nil {
			continue
		}
		key := l.key
		if key == nil { // 2.0
			req.keyBuf = appendLabelFields(req.keyBuf[:0], s.Labels)
			key = req.keyBuf
		}
		h.cache.put(key, s.Labels, s.ID)
	}
}

// callStore runs a store call under ctx and returns by the deadline even if
// the store does not honour it. running is nil when the call returned; else
// it receives when the abandoned call does, until when it may still read
// the request's buffers.
func (h *writeHandler) callStore(ctx context.Context, call func(context.Context) error) (running <-chan error, err error) {
	done := make(chan error, 1)
	go func() {
		// net/http recovers a handler's panics but not those of goroutines
		// it starts: a bug in the store would otherwise end the process,
		// and every request in flight with it, over one request.
		defer func() {
			if p := recover(); p != nil {
				h.logger.Error("storage call panicked", "panic", p, "stack", string(debug.Stack()))
				done <- fmt.Errorf("storage call panicked: %v", p)
			}
		}()
		done <- call(ctx)
	}()
	select {
	case err := <-done:
		return nil, err
	case <-ctx.Done():
		return done, fmt.Errorf("storage did not acknowledge in time: %w", ctx.Err())
	}
}

func (h *writeHandler) storeFailed(res writeResult, req *writeRequest, err error) writeResult {
	res.samples, res.histograms = 0, 0
	if errors.Is(err, store.ErrInvalidInput) {
		h.reject(reasonStoreInvalid, req.numSamples(), req.numHistograms)
		res.code, res.msg = http.StatusBadRequest, fmt.Sprintf("invalid request, none of its %s written: %v", req.describe(), err)
		return res
	}
	h.reject(reasonStorage, req.numSamples(), req.numHistograms)
	res.code, res.msg = http.StatusServiceUnavailable, fmt.Sprintf("none of %s acknowledged, retry: %v", req.describe(), shortStoreError(err, h.cfg.Timeout))
	return res
}

func shortStoreError(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("storage did not acknowledge within the write timeout of %v", timeout)
	}
	return "storage unavailable: " + err.Error()
}

func (h *writeHandler) reject(reason string, samples, histograms int) {
	h.m.samplesRejected.WithLabelValues(reason).Add(float64(samples))
	h.m.histogramsRejected.WithLabelValues(reason).Add(float64(histograms))
}

var errTooLarge = errors.New("body too large")

// readBody appends all of r to dst, refusing more than limit bytes.
func readBody(dst []byte, r io.Reader, limit int64) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if int64(len(dst)) > limit {
			return dst, errTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}
