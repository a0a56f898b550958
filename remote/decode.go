package remote

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/common/model"
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
	series     []store.SeriesIn
	histograms []uint32 // per series: native histogram samples, not stored
	labels     []labels.Label
	samples    []store.Sample
	metadata   []store.Metadata
	mdIndex    map[string]int // metric name -> index in metadata (2.0)
	symbols    []string       // 2.0 only

	// What this receiver does not store; counted so that the answer can
	// say so and never count them as written.
	numHistograms int
	numExemplars  int

	intern interner
}

func (r *writeRequest) reset() {
	clear(r.series) // drop references to the previous request's arenas
	r.series = r.series[:0]
	r.histograms = r.histograms[:0]
	r.labels = r.labels[:0]
	r.samples = r.samples[:0]
	r.metadata = r.metadata[:0]
	clear(r.mdIndex)
	r.symbols = r.symbols[:0]
	r.numHistograms, r.numExemplars = 0, 0
}

// grow sizes the arenas for a request of shape s.
func (r *writeRequest) grow(s shape) {
	r.series = slices.Grow(r.series, s.series)
	r.histograms = slices.Grow(r.histograms, s.series)
	r.labels = slices.Grow(r.labels, s.labels)
	r.samples = slices.Grow(r.samples, s.samples)
	r.metadata = slices.Grow(r.metadata, s.metadata)
	r.symbols = slices.Grow(r.symbols, s.symbols)
}

// addSeries appends the series whose labels and samples begin at lblStart
// and smpStart in the arenas.
func (r *writeRequest) addSeries(lblStart, smpStart int, histograms uint32) {
	l, n := len(r.labels), len(r.samples)
	r.series = append(r.series, store.SeriesIn{Labels: r.labels[lblStart:l:l], Samples: r.samples[smpStart:n:n]})
	r.histograms = append(r.histograms, histograms)
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
	lblStart, smpStart := len(r.labels), len(r.samples)
	var histograms uint32
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
				return fmt.Errorf("labels[%d]: %w", len(r.labels)-lblStart, err)
			}
			r.labels = append(r.labels, labels.Label{Name: name, Value: value})
		case 2:
			s, err := decodeSample(msg)
			if err != nil {
				return fmt.Errorf("samples[%d]: %w", len(r.samples)-smpStart, err)
			}
			r.samples = append(r.samples, s)
		case 3:
			r.numExemplars++
		case 4:
			r.numHistograms++
			histograms++
		}
	}
	r.addSeries(lblStart, smpStart, histograms)
	return nil
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
			r.symbols = append(r.symbols, r.intern.get(s))
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

func (r *writeRequest) symbol(ref uint64) (string, error) {
	if ref >= uint64(len(r.symbols)) {
		return "", fmt.Errorf("%w: %d, the request has %d symbols", errSymbolRef, ref, len(r.symbols))
	}
	return r.symbols[ref], nil
}

func (r *writeRequest) decodeV2Series(b []byte) error {
	lblStart, smpStart := len(r.labels), len(r.samples)
	var (
		refs        []byte // packed labels_refs
		md          []byte
		hasMetadata bool
		pending     uint64
		havePending bool
		histograms  uint32
	)
	addRef := func(ref uint64) error {
		s, err := r.symbol(ref)
		if err != nil {
			return fmt.Errorf("labels_refs[%d]: %w", 2*(len(r.labels)-lblStart)+boolInt(havePending), err)
		}
		if !havePending {
			pending, havePending = ref, true
			return nil
		}
		name, _ := r.symbol(pending)
		r.labels = append(r.labels, labels.Label{Name: name, Value: s})
		havePending = false
		return nil
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			refs, n = protowire.ConsumeBytes(b)
			if n < 0 {
				return errTruncated
			}
			b = b[n:]
			for len(refs) > 0 {
				v, n := protowire.ConsumeVarint(refs)
				if n < 0 {
					return fmt.Errorf("labels_refs: %w", errTruncated)
				}
				refs = refs[n:]
				if err := addRef(v); err != nil {
					return err
				}
			}
		case num == 1 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return errTruncated
			}
			b = b[n:]
			if err := addRef(v); err != nil {
				return err
			}
		case num == 2 && typ == protowire.BytesType:
			msg, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errTruncated
			}
			b = b[n:]
			s, err := decodeSample(msg)
			if err != nil {
				return fmt.Errorf("samples[%d]: %w", len(r.samples)-smpStart, err)
			}
			r.samples = append(r.samples, s)
		case (num == 3 || num == 4) && typ == protowire.BytesType:
			_, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errTruncated
			}
			b = b[n:]
			if num == 3 {
				r.numHistograms++
				histograms++
			} else {
				r.numExemplars++
			}
		case num == 5 && typ == protowire.BytesType:
			md, n = protowire.ConsumeBytes(b)
			if n < 0 {
				return errTruncated
			}
			b = b[n:]
			hasMetadata = true
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return errTruncated
			}
			b = b[n:]
		}
	}
	if havePending {
		return fmt.Errorf("labels_refs has an odd length (%d)", 2*(len(r.labels)-lblStart)+1)
	}
	r.addSeries(lblStart, smpStart, histograms)
	if hasMetadata {
		return r.decodeV2Metadata(md, r.labels[lblStart:])
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
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
