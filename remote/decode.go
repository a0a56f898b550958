package remote

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/prom-hbase/prom-hbase/store"
)

// writeRequest is one decoded remote-write request, 1.0 or 2.0. Its slices are
// arenas reused from request to request (the whole value lives in a
// sync.Pool), so steady-state decoding allocates nothing per sample and
// nothing per label string the interner has seen before.
//
// Before decoding, a scan of the message counts what it holds (see shape),
// and the arenas are sized to exactly that: they never grow while decoding,
// so the memory a request takes is known, and charged, before it is
// allocated, and the series can point straight into the arenas.
type writeRequest struct {
	series   []store.SeriesIn
	labels   []labels.Label
	samples  []store.Sample
	metadata []store.Metadata
	mdIndex  map[string]int // metric name -> index in metadata (2.0)
	// 2.0 only: the request's symbols as sent, and as strings once a
	// label or metadata of a series that missed the cache asks for them
	// ("" until then): a series found in the cache needs none of them
	// turned into strings.
	symbolBytes [][]byte
	symbols     []string
	refs        []uint64 // labels_refs of the 2.0 series being decoded

	// Native histograms: the samples, the histograms they point to, and
	// the spans, integer deltas and float counts and bounds those point to.
	hsamples []store.HistogramSample
	ihists   []histogram.Histogram
	fhists   []histogram.FloatHistogram
	spans    []histogram.Span
	ints     []int64
	floats   []float64

	// numHistograms counts every histogram message, badHistogram the
	// first whose fields contradict each other (not decoded; the request
	// is refused).
	numHistograms int
	badHistogram  *badHistogram
	// Exemplars are not stored (remote read cannot return them); counted
	// for the answer and the metrics.
	numExemplars int

	intern interner

	// cache is the handler's series cache for this request, or nil; learn
	// lists the series decoded without it, which it may learn once the
	// store has reported their IDs.
	cache                  *seriesCache
	learn                  []learnSeries
	cacheHits, cacheMisses int
	// keyBuf holds the cache key of a 2.0 series while it is looked up.
	keyBuf []byte
}

// learnSeries is series[i] of a request, whose label fields are key: in
// the decompressed body (1.0), or nil (2.0: made again from the series'
// labels, see appendLabelFields).
type learnSeries struct {
	i   int
	key []byte
}

func (r *writeRequest) reset() {
	clear(r.series) // drop references to the previous request's arenas
	r.series = r.series[:0]
	r.labels = r.labels[:0]
	r.samples = r.samples[:0]
	r.metadata = r.metadata[:0]
	clear(r.mdIndex)
	clear(r.symbolBytes) // they point into the decompressed body
	r.symbolBytes = r.symbolBytes[:0]
	r.symbols = r.symbols[:0]
	r.hsamples = r.hsamples[:0]
	r.ihists = r.ihists[:0]
	r.fhists = r.fhists[:0]
	r.spans = r.spans[:0]
	r.ints = r.ints[:0]
	r.floats = r.floats[:0]
	r.numHistograms, r.numExemplars, r.badHistogram = 0, 0, nil
	clear(r.learn)
	r.learn = r.learn[:0]
	r.cacheHits, r.cacheMisses = 0, 0
}

// grow sizes the arenas for a request of shape s.
func (r *writeRequest) grow(s shape) {
	r.series = slices.Grow(r.series, s.series)
	r.labels = slices.Grow(r.labels, s.labels)
	r.samples = slices.Grow(r.samples, s.samples)
	r.metadata = slices.Grow(r.metadata, s.metadata)
	r.symbolBytes = slices.Grow(r.symbolBytes, s.symbols)
	r.symbols = slices.Grow(r.symbols, s.symbols)
	r.hsamples = slices.Grow(r.hsamples, s.histograms())
	r.ihists = slices.Grow(r.ihists, s.intHistograms)
	r.fhists = slices.Grow(r.fhists, s.floatHistograms)
	r.spans = slices.Grow(r.spans, s.spans)
	r.ints = slices.Grow(r.ints, s.ints)
	r.floats = slices.Grow(r.floats, s.floats)
}

// arenaStart is where the next series begins in the arenas.
type arenaStart struct{ labels, samples, histograms int }

func (r *writeRequest) start() arenaStart {
	return arenaStart{len(r.labels), len(r.samples), len(r.hsamples)}
}

// addSeries appends the series whose labels, samples and histograms begin
// at a in the arenas.
func (r *writeRequest) addSeries(a arenaStart) {
	l, n, h := len(r.labels), len(r.samples), len(r.hsamples)
	r.series = append(r.series, store.SeriesIn{
		Labels:     r.labels[a.labels:l:l],
		Samples:    r.samples[a.samples:n:n],
		Histograms: r.hsamples[a.histograms:h:h],
	})
}

// numSamples is the number of float samples in the request.
func (r *writeRequest) numSamples() int { return len(r.samples) }

var errTruncated = errors.New("truncated or malformed protobuf")

// decodeV1 decodes a prometheus.WriteRequest (remote write 1.0).
func (r *writeRequest) decodeV1(b []byte) error { return r.decodeV1Sized(b, scanV1(b)) }

// decodeV1Sized decodes b, whose shape is s (scanV1(b)).
func (r *writeRequest) decodeV1Sized(b []byte, s shape) error {
	r.reset()
	r.grow(s)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("writeRequest: %w", errTruncated)
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			msg, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("writeRequest.timeseries[%d]: %w", len(r.series), errTruncated)
			}
			b = b[n:]
			if err := r.decodeV1Series(msg); err != nil {
				return fmt.Errorf("writeRequest.timeseries[%d]: %w", len(r.series), err)
			}
		case num == 3 && typ == protowire.BytesType:
			msg, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("writeRequest.metadata[%d]: %w", len(r.metadata), errTruncated)
			}
			b = b[n:]
			if err := r.decodeV1Metadata(msg); err != nil {
				return fmt.Errorf("writeRequest.metadata[%d]: %w", len(r.metadata), err)
			}
		case num == 4 || num == 5:
			// The fields of io.prometheus.write.v2.Request. Ignoring them
			// would turn a mislabelled 2.0 body into an empty 1.0 request
			// and a silent 204.
			return fmt.Errorf("field %d is not part of %s: is this a remote write 2.0 body sent with a 1.0 Content-Type?", num, protoV1)
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("writeRequest field %d: %w", num, errTruncated)
			}
			b = b[n:]
		}
	}
	return nil
}

func (r *writeRequest) decodeV1Series(b []byte) error {
	start := r.start()
	histograms := 0
	var (
		key    []byte
		cached cachedSeries
		hit    bool
	)
	if r.cache != nil {
		if n, ok := labelPrefix(b); ok && n > 0 {
			key = b[:n]
			if cached, hit = r.cache.get(key); hit {
				b = b[n:] // the labels are the entry's
			}
		}
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
		if typ != protowire.BytesType || num < 1 || num > 4 {
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return errTruncated
			}
			b = b[n:]
			continue
		}
		msg, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
		switch num {
		case 1:
			name, value, err := r.decodeV1Label(msg)
			if err != nil {
				return fmt.Errorf("labels[%d]: %w", len(r.labels)-start.labels, err)
			}
			r.labels = append(r.labels, labels.Label{Name: name, Value: value})
		case 2:
			s, err := decodeSample(msg)
			if err != nil {
				return fmt.Errorf("samples[%d]: %w", len(r.samples)-start.samples, err)
			}
			r.samples = append(r.samples, s)
		case 3:
			r.numExemplars++
		case 4:
			if err := r.decodeHistogram(msg, histograms); err != nil {
				return fmt.Errorf("histograms[%d]: %w", histograms, err)
			}
			r.numHistograms++
			histograms++
		}
	}
	r.addSeries(start)
	switch s := &r.series[len(r.series)-1]; {
	case hit:
		s.Labels, s.ID = cached.labels, cached.id
		r.cacheHits++
	case key != nil:
		s.ReportID = true
		r.learn = append(r.learn, learnSeries{i: len(r.series) - 1, key: key})
		r.cacheMisses++
	}
	return nil
}

// labelPrefix returns the length of the label fields (1) that begin the
// TimeSeries message b, and whether no label field follows them: then
// those bytes alone, as sent, name the series. Prometheus writes the labels
// first; a sender that interleaves them is decoded without the cache.
func labelPrefix(b []byte) (n int, ok bool) {
	inPrefix := true
	for off := 0; off < len(b); {
		num, typ, m := protowire.ConsumeTag(b[off:])
		if m < 0 {
			return 0, false
		}
		v := protowire.ConsumeFieldValue(num, typ, b[off+m:])
		if v < 0 {
			return 0, false
		}
		if num == 1 {
			if !inPrefix {
				return 0, false
			}
			n = off + m + v
		} else {
			inPrefix = false
		}
		off += m + v
	}
	return n, true
}

func (r *writeRequest) decodeV1Label(b []byte) (name, value string, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", "", errTruncated
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 1 || num == 2) {
			s, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return "", "", errTruncated
			}
			b = b[n:]
			if num == 1 {
				name = r.intern.get(s)
			} else {
				value = r.intern.get(s)
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return "", "", errTruncated
		}
		b = b[n:]
	}
	return name, value, nil
}

// decodeSample decodes prometheus.Sample and io.prometheus.write.v2.Sample,
// which share field numbers 1 (value) and 2 (timestamp).
func decodeSample(b []byte) (store.Sample, error) {
	var s store.Sample
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return s, errTruncated
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.Fixed64Type:
			v, n := protowire.ConsumeFixed64(b)
			if n < 0 {
				return s, errTruncated
			}
			b = b[n:]
			s.V = math.Float64frombits(v)
		case num == 2 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return s, errTruncated
			}
			b = b[n:]
			s.T = int64(v)
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return s, errTruncated
			}
			b = b[n:]
		}
	}
	return s, nil
}

// metricTypes maps both protocols' MetricType enums (same numbers) to the
// OpenMetrics type names.
var metricTypes = [...]string{"unknown", "counter", "gauge", "histogram", "gaugehistogram", "summary", "info", "stateset"}

func metricType(v uint64) string {
	if v < uint64(len(metricTypes)) {
		return metricTypes[v]
	}
	return "unknown"
}

func (r *writeRequest) decodeV1Metadata(b []byte) error {
	var md store.Metadata
	md.Type = "unknown"
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return errTruncated
			}
			b = b[n:]
			md.Type = metricType(v)
		case (num == 2 || num == 4 || num == 5) && typ == protowire.BytesType:
			s, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errTruncated
			}
			b = b[n:]
			switch num {
			case 2:
				md.MetricFamilyName = r.intern.get(s)
			case 4:
				md.Help = r.intern.get(s)
			case 5:
				md.Unit = r.intern.get(s)
			}
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return errTruncated
			}
			b = b[n:]
		}
	}
	r.metadata = append(r.metadata, md)
	return nil
}

// decodeV2 decodes an io.prometheus.write.v2.Request. Symbols may follow the
// series on the wire, so series are decoded in a second pass once all
// symbols are known.
func (r *writeRequest) decodeV2(b []byte) error { return r.decodeV2Sized(b, scanV2(b)) }

// decodeV2Sized decodes b, whose shape is s (scanV2(b)).
func (r *writeRequest) decodeV2Sized(b []byte, s shape) error {
	r.reset()
	r.grow(s)
	all := b
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("request: %w", errTruncated)
		}
		b = b[n:]
		if num >= 1 && num <= 3 {
			// Reserved in 2.0: they are the fields of prometheus.WriteRequest.
			return fmt.Errorf("field %d is reserved in %s: is this a remote write 1.0 body sent with the 2.0 Content-Type?", num, protoV2)
		}
		if num == 4 && typ == protowire.BytesType {
			s, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("request.symbols[%d]: %w", len(r.symbols), errTruncated)
			}
			b = b[n:]
			r.symbolBytes = append(r.symbolBytes, s)
			r.symbols = append(r.symbols, "")
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return fmt.Errorf("request field %d: %w", num, errTruncated)
		}
		b = b[n:]
	}
	b = all
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:] // validated by the first pass
		if num == 5 && typ == protowire.BytesType {
			msg, n := protowire.ConsumeBytes(b)
			b = b[n:]
			if err := r.decodeV2Series(msg); err != nil {
				return fmt.Errorf("request.timeseries[%d]: %w", len(r.series), err)
			}
			continue
		}
		b = b[protowire.ConsumeFieldValue(num, typ, b):]
	}
	return nil
}

// errSymbolRef marks a reference outside Request.symbols.
var errSymbolRef = errors.New("symbol reference out of range")

func (r *writeRequest) checkSymbol(ref uint64) error {
	if ref >= uint64(len(r.symbolBytes)) {
		return fmt.Errorf("%w: %d, the request has %d symbols", errSymbolRef, ref, len(r.symbolBytes))
	}
	return nil
}

// symbol returns symbol ref as a string, interned the first time it is
// asked for.
func (r *writeRequest) symbol(ref uint64) (string, error) {
	if err := r.checkSymbol(ref); err != nil {
		return "", err
	}
	return r.symbolString(ref), nil
}

// symbolString is symbol for a reference already checked.
func (r *writeRequest) symbolString(ref uint64) string {
	if s := r.symbols[ref]; s != "" || len(r.symbolBytes[ref]) == 0 {
		return s
	}
	s := r.intern.get(r.symbolBytes[ref])
	r.symbols[ref] = s
	return s
}

func (r *writeRequest) decodeV2Series(b []byte) error {
	d := v2Series{r: r, start: r.start()}
	r.refs = r.refs[:0]
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return errTruncated
		}
		if err := d.field(num, typ, b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	if len(r.refs)%2 == 1 {
		return fmt.Errorf("labels_refs has an odd length (%d)", len(r.refs))
	}
	// Looked up in the series cache before its labels are made: a hit
	// takes them, with the series ID, from the entry, so that the series
	// is neither checked against the label rules nor resolved UID by UID
	// again, and none of its symbols is turned into a string.
	var (
		e        cachedSeries
		hit      bool
		lookedUp = r.cache != nil && r.cacheableRefs()
	)
	if lookedUp {
		r.keyBuf = r.appendRefFields(r.keyBuf[:0])
		e, hit = r.cache.get(r.keyBuf)
	}
	if !hit {
		for i := 0; i < len(r.refs); i += 2 {
			r.labels = append(r.labels, labels.Label{Name: r.symbolString(r.refs[i]), Value: r.symbolString(r.refs[i+1])})
		}
	}
	r.addSeries(d.start)
	s := &r.series[len(r.series)-1]
	switch {
	case hit:
		s.Labels, s.ID = e.labels, e.id
		r.cacheHits++
	case lookedUp:
		s.ReportID = true
		r.learn = append(r.learn, learnSeries{i: len(r.series) - 1})
		r.cacheMisses++
	}
	if d.hasMetadata {
		return r.decodeV2Metadata(d.md, s.Labels)
	}
	return nil
}

// The cache key of a 2.0 series cannot be its labels_refs, which point into
// the request's own symbols and differ from request to request. It is its
// labels written as 1.0 label fields (appendLabelFields), made here from
// the symbols' bytes.
func (r *writeRequest) appendRefFields(dst []byte) []byte {
	for i := 0; i < len(r.refs); i += 2 {
		dst = appendLabelField(dst, r.symbolBytes[r.refs[i]], r.symbolBytes[r.refs[i+1]])
	}
	return dst
}

// maxV2CacheKey bounds the label bytes of a 2.0 series looked up in the
// series cache. A 2.0 request names its labels by reference, so a small
// body can repeat a large symbol in many labels: its key, written out,
// would be far larger than the request. Label sets this large are not
// what Prometheus sends, and are decoded without the cache.
const maxV2CacheKey = 16 << 10

func (r *writeRequest) cacheableRefs() bool {
	n := 0
	for _, ref := range r.refs {
		if n += len(r.symbolBytes[ref]); n > maxV2CacheKey {
			return false
		}
	}
	return true
}

// v2Series is the state of decoding one io.prometheus.write.v2.TimeSeries;
// its labels_refs go to writeRequest.refs.
type v2Series struct {
	r     *writeRequest
	start arenaStart
	// Histograms and exemplars seen so far, for error messages.
	histograms, exemplars int
	md                    []byte
	hasMetadata           bool
}

// field decodes one field of the series, whose encoded value is v (its
// framing already checked).
func (d *v2Series) field(num protowire.Number, typ protowire.Type, v []byte) error {
	r := d.r
	if typ == protowire.BytesType {
		v, _ = protowire.ConsumeBytes(v)
	}
	switch {
	case num == 1 && typ == protowire.BytesType:
		for len(v) > 0 { // packed labels_refs
			ref, n := protowire.ConsumeVarint(v)
			if n < 0 {
				return fmt.Errorf("labels_refs: %w", errTruncated)
			}
			v = v[n:]
			if err := r.addRef(ref); err != nil {
				return err
			}
		}
	case num == 1 && typ == protowire.VarintType:
		ref, _ := protowire.ConsumeVarint(v)
		return r.addRef(ref)
	case num == 2 && typ == protowire.BytesType:
		s, err := decodeSample(v)
		if err != nil {
			return fmt.Errorf("samples[%d]: %w", len(r.samples)-d.start.samples, err)
		}
		r.samples = append(r.samples, s)
	case num == 3 && typ == protowire.BytesType:
		if err := r.decodeHistogram(v, d.histograms); err != nil {
			return fmt.Errorf("histograms[%d]: %w", d.histograms, err)
		}
		r.numHistograms++
		d.histograms++
	case num == 4 && typ == protowire.BytesType:
		if err := r.checkV2Exemplar(v); err != nil {
			return fmt.Errorf("exemplars[%d]: %w", d.exemplars, err)
		}
		r.numExemplars++
		d.exemplars++
	case num == 5 && typ == protowire.BytesType:
		d.md, d.hasMetadata = v, true
	}
	return nil
}

// addRef adds one labels_refs entry, checked to point at a symbol.
func (r *writeRequest) addRef(ref uint64) error {
	if err := r.checkSymbol(ref); err != nil {
		return fmt.Errorf("labels_refs[%d]: %w", len(r.refs), err)
	}
	r.refs = append(r.refs, ref)
	return nil
}

// decodeV2Metadata records a series' metadata under its metric name, once
// per metric and request: senders send it with every series, and the store
// need not hear it thousands of times.
func (r *writeRequest) decodeV2Metadata(b []byte, lbls []labels.Label) error {
	var typ, helpRef, unitRef uint64
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("metadata: %w", errTruncated)
		}
		b = b[n:]
		if wt == protowire.VarintType && (num == 1 || num == 3 || num == 4) {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("metadata: %w", errTruncated)
			}
			b = b[n:]
			switch num {
			case 1:
				typ = v
			case 3:
				helpRef = v
			case 4:
				unitRef = v
			}
			continue
		}
		n = protowire.ConsumeFieldValue(num, wt, b)
		if n < 0 {
			return fmt.Errorf("metadata: %w", errTruncated)
		}
		b = b[n:]
	}
	help, err := r.symbol(helpRef)
	if err != nil {
		return fmt.Errorf("metadata.help_ref: %w", err)
	}
	unit, err := r.symbol(unitRef)
	if err != nil {
		return fmt.Errorf("metadata.unit_ref: %w", err)
	}
	if typ == 0 && help == "" && unit == "" {
		return nil
	}
	var name string
	for _, l := range lbls {
		if l.Name == model.MetricNameLabel {
			name = l.Value
			break
		}
	}
	if name == "" {
		return nil
	}
	md := store.Metadata{MetricFamilyName: name, Type: metricType(typ), Unit: unit, Help: help}
	if i, ok := r.mdIndex[name]; ok {
		r.metadata[i] = md // the last one of the request wins
		return nil
	}
	if r.mdIndex == nil {
		r.mdIndex = make(map[string]int)
	}
	r.mdIndex[name] = len(r.metadata)
	r.metadata = append(r.metadata, md)
	return nil
}

// describe says what the request holds, for error messages.
func (r *writeRequest) describe() string {
	if r.numHistograms == 0 {
		return fmt.Sprintf("%d samples", r.numSamples())
	}
	return fmt.Sprintf("%d samples and %d histograms", r.numSamples(), r.numHistograms)
}

// arenaBytes is the memory the request's arenas hold, to decide whether
// they are worth keeping for the next request.
func (r *writeRequest) arenaBytes() int {
	return cap(r.samples)*int(sampleCost) + cap(r.labels)*int(labelCost) + cap(r.series)*int(seriesCost) +
		cap(r.ihists)*int(intHistogramCost) + cap(r.fhists)*int(floatHistogramCost) +
		cap(r.spans)*int(spanCost) + 8*(cap(r.ints)+cap(r.floats)) + cap(r.keyBuf) +
		cap(r.symbolBytes)*int(symbolCost) + 8*cap(r.refs)
}

// checkV2Exemplar checks what of an exemplar would make Prometheus's own
// receiver refuse it: its labels_refs must come in pairs and point into
// the symbols. The exemplar itself is dropped.
func (r *writeRequest) checkV2Exemplar(b []byte) error {
	refs := 0
	check := func(ref uint64) error {
		refs++
		if err := r.checkSymbol(ref); err != nil {
			return fmt.Errorf("labels_refs[%d]: %w", refs-1, err)
		}
		return nil
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return errTruncated
		}
		v := b[:n]
		b = b[n:]
		if num != 1 {
			continue
		}
		switch typ {
		case protowire.VarintType:
			ref, _ := protowire.ConsumeVarint(v)
			if err := check(ref); err != nil {
				return err
			}
		case protowire.BytesType:
			packed, _ := protowire.ConsumeBytes(v)
			for len(packed) > 0 {
				ref, n := protowire.ConsumeVarint(packed)
				if n < 0 {
					return fmt.Errorf("labels_refs: %w", errTruncated)
				}
				packed = packed[n:]
				if err := check(ref); err != nil {
					return err
				}
			}
		}
	}
	if refs%2 == 1 {
		return fmt.Errorf("labels_refs has an odd length (%d)", refs)
	}
	return nil
}
