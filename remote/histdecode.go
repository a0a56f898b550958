package remote

import (
	"errors"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/prom-hbase/prom-hbase/store"
)

// The fields of a native histogram message: prometheus.Histogram (1.0) and
// io.prometheus.write.v2.Histogram (2.0) share numbers 1 to 16; 2.0 adds
// start_timestamp (17), which this receiver does not keep, as it keeps no
// start timestamp of float samples either.
const (
	hCountInt       = 1  // uint64, oneof count
	hCountFloat     = 2  // double, oneof count
	hSum            = 3  // double
	hSchema         = 4  // sint32
	hZeroThreshold  = 5  // double
	hZeroCountInt   = 6  // uint64, oneof zero_count
	hZeroCountFloat = 7  // double, oneof zero_count
	hNegativeSpans  = 8  // repeated BucketSpan
	hNegativeDeltas = 9  // repeated sint64 (integer histograms)
	hNegativeCounts = 10 // repeated double (float histograms)
	hPositiveSpans  = 11 // repeated BucketSpan
	hPositiveDeltas = 12 // repeated sint64
	hPositiveCounts = 13 // repeated double
	hResetHint      = 14 // enum ResetHint
	hTimestamp      = 15 // int64
	hCustomValues   = 16 // repeated double
)

// histogramKind is what a histogram message's fields say it is.
type histogramKind uint8

const (
	kindNone histogramKind = iota
	kindInt
	kindFloat
)

// kindOf classifies a histogram field: integer-only, float-only, or neither.
func kindOf(num protowire.Number) histogramKind {
	switch num {
	case hCountInt, hZeroCountInt, hNegativeDeltas, hPositiveDeltas:
		return kindInt
	case hCountFloat, hZeroCountFloat, hNegativeCounts, hPositiveCounts:
		return kindFloat
	}
	return kindNone
}

var kindFields = [...]string{
	hCountInt: "count_int", hCountFloat: "count_float", hZeroCountInt: "zero_count_int", hZeroCountFloat: "zero_count_float",
	hNegativeDeltas: "negative_deltas", hNegativeCounts: "negative_counts", hPositiveDeltas: "positive_deltas", hPositiveCounts: "positive_counts",
}

// histogramShapeError is a well-formed histogram message whose fields
// contradict each other (both count kinds, integer and float buckets) or
// hold an unknown enum value: the request is refused by validation, which
// names the series.
type histogramShapeError struct{ msg string }

func (e *histogramShapeError) Error() string { return e.msg }

// classifyHistogram reads which kind a histogram message is from its count
// oneof, and checks that every other field of a kind agrees with it. It
// also returns the set of repeated fields present (bit i: field i). It
// allocates nothing, so a histogram refused here costs nothing the scan did
// not charge. A malformed message is an errTruncated.
func classifyHistogram(b []byte) (histogramKind, uint32, error) {
	var (
		count, other histogramKind
		countSeen    [3]bool
		otherField   protowire.Number
		repeated     uint32
	)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return kindNone, 0, errTruncated
		}
		b = b[n:]
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return kindNone, 0, errTruncated
		}
		b = b[n:]
		if isRepeated(num) {
			repeated |= 1 << num
		}
		k := kindOf(num)
		switch {
		case k == kindNone:
		case num == hCountInt || num == hCountFloat:
			count = k
			countSeen[k] = true
		case other == kindNone:
			other, otherField = k, num
		case other != k:
			return kindNone, 0, shapeErrorf("both %s and %s are set: a histogram's buckets and zero count are all integers or all floats", kindFields[otherField], kindFields[num])
		}
	}
	switch {
	case countSeen[kindInt] && countSeen[kindFloat]:
		return kindNone, 0, shapeErrorf("both count_int and count_float are set: exactly one says whether the histogram is an integer or a float histogram")
	case count == kindNone:
		return kindNone, 0, shapeErrorf("neither count_int nor count_float is set: one must say whether the histogram is an integer or a float histogram")
	case other != kindNone && other != count:
		countField := "count_int"
		if count == kindFloat {
			countField = "count_float"
		}
		return kindNone, 0, shapeErrorf("%s is set in a histogram whose count is %s", kindFields[otherField], countField)
	}
	return count, repeated, nil
}

func shapeErrorf(format string, args ...any) error {
	return &histogramShapeError{fmt.Sprintf(format, args...)}
}

func isRepeated(num protowire.Number) bool {
	switch num {
	case hNegativeSpans, hNegativeDeltas, hNegativeCounts, hPositiveSpans, hPositiveDeltas, hPositiveCounts, hCustomValues:
		return true
	}
	return false
}

// decodeHistogram decodes one histogram message into the request's arenas
// and appends it to r.hsamples. A histogram whose fields contradict each
// other is not appended: r.badHistogram records the first one, for
// validation to refuse the request naming its series.
func (r *writeRequest) decodeHistogram(b []byte, index int) error {
	kind, repeated, err := classifyHistogram(b)
	var d histogramFields
	if err == nil {
		err = decodeHistogramScalars(b, &d)
	}
	// A type assertion, not errors.As: that would move a pointer to the
	// heap for every histogram. Neither function wraps the error.
	if shapeErr, ok := err.(*histogramShapeError); ok {
		if r.badHistogram == nil {
			r.badHistogram = &badHistogram{series: len(r.series), index: index, err: shapeErr}
		}
		return nil
	}
	if err != nil {
		return err
	}
	// Each repeated field is gathered in a pass of its own, so that its
	// elements are contiguous in the arena even when the sender splits it.
	for num := protowire.Number(hNegativeSpans); num <= hCustomValues; num++ {
		if repeated&(1<<num) == 0 {
			continue
		}
		if err := r.decodeRepeated(b, num, &d); err != nil {
			return fmt.Errorf("field %d: %w", num, err)
		}
	}
	hs := store.HistogramSample{T: d.t}
	if kind == kindInt {
		r.ihists = append(r.ihists, histogram.Histogram{
			CounterResetHint: d.hint, Schema: d.schema, ZeroThreshold: d.zeroThreshold,
			ZeroCount: d.zeroCountInt, Count: d.countInt, Sum: d.sum,
			PositiveSpans: d.pSpans, NegativeSpans: d.nSpans,
			PositiveBuckets: d.pDeltas, NegativeBuckets: d.nDeltas,
			CustomValues: d.customValues,
		})
		hs.H = &r.ihists[len(r.ihists)-1]
	} else {
		r.fhists = append(r.fhists, histogram.FloatHistogram{
			CounterResetHint: d.hint, Schema: d.schema, ZeroThreshold: d.zeroThreshold,
			ZeroCount: d.zeroCountFloat, Count: d.countFloat, Sum: d.sum,
			PositiveSpans: d.pSpans, NegativeSpans: d.nSpans,
			PositiveBuckets: d.pCounts, NegativeBuckets: d.nCounts,
			CustomValues: d.customValues,
		})
		hs.FH = &r.fhists[len(r.fhists)-1]
	}
	r.hsamples = append(r.hsamples, hs)
	return nil
}

// badHistogram is the first histogram of a request whose fields contradict
// each other.
type badHistogram struct {
	series, index int
	err           error
}

// histogramFields are the decoded fields of one histogram message; the
// repeated ones are slices of the request's arenas (nil when absent, as the
// generated decoder leaves them).
type histogramFields struct {
	t                              int64
	countInt, zeroCountInt         uint64
	countFloat, zeroCountFloat     float64
	sum, zeroThreshold             float64
	schema                         int32
	hint                           histogram.CounterResetHint
	pSpans, nSpans                 []histogram.Span
	pDeltas, nDeltas               []int64
	pCounts, nCounts, customValues []float64
}

var errWireType = errors.New("wrong wire type")

// wireTypes are the wire types of the histogram's scalar fields; repeated
// fields may be packed (bytes) or not.
var wireTypes = [...]protowire.Type{
	hCountInt: protowire.VarintType, hCountFloat: protowire.Fixed64Type, hSum: protowire.Fixed64Type,
	hSchema: protowire.VarintType, hZeroThreshold: protowire.Fixed64Type, hZeroCountInt: protowire.VarintType,
	hZeroCountFloat: protowire.Fixed64Type, hResetHint: protowire.VarintType, hTimestamp: protowire.VarintType,
}

// decodeHistogramScalars decodes the scalar fields of a histogram message
// (the last one wins, as in protobuf), already checked by classifyHistogram
// to be well framed.
func decodeHistogramScalars(b []byte, d *histogramFields) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		v := b[:n]
		b = b[n:]
		if num < 1 || num > hCustomValues || isRepeated(num) {
			continue
		}
		if typ != wireTypes[num] {
			return fmt.Errorf("field %d: %w", num, errWireType)
		}
		if typ == protowire.Fixed64Type {
			bits, _ := protowire.ConsumeFixed64(v)
			f := math.Float64frombits(bits)
			switch num {
			case hCountFloat:
				d.countFloat = f
			case hSum:
				d.sum = f
			case hZeroThreshold:
				d.zeroThreshold = f
			case hZeroCountFloat:
				d.zeroCountFloat = f
			}
			continue
		}
		x, _ := protowire.ConsumeVarint(v)
		switch num {
		case hCountInt:
			d.countInt = x
		case hZeroCountInt:
			d.zeroCountInt = x
		case hSchema:
			d.schema = zigzag32(x)
		case hResetHint:
			// An enum, decoded as int32 as the generated code does.
			if hint := int32(x); hint < 0 || hint > int32(histogram.GaugeType) {
				return shapeErrorf("unknown reset_hint %d", hint)
			}
			d.hint = histogram.CounterResetHint(x)
		case hTimestamp:
			d.t = int64(x)
		}
	}
	return nil
}

// decodeRepeated appends every element of the repeated field num of a
// histogram message to its arena and points the field's slice at them.
func (r *writeRequest) decodeRepeated(b []byte, num protowire.Number, d *histogramFields) error {
	spans, ints, floats := len(r.spans), len(r.ints), len(r.floats)
	for len(b) > 0 {
		n0, typ, n := protowire.ConsumeTag(b)
		b = b[n:]
		n = protowire.ConsumeFieldValue(n0, typ, b)
		v := b[:n]
		b = b[n:]
		if n0 != num {
			continue
		}
		var err error
		switch {
		case num == hNegativeSpans || num == hPositiveSpans:
			err = r.appendSpan(v, typ)
		case num == hNegativeDeltas || num == hPositiveDeltas:
			err = r.appendDeltas(v, typ)
		default:
			err = r.appendDoubles(v, typ)
		}
		if err != nil {
			return err
		}
	}
	switch num {
	case hNegativeSpans:
		d.nSpans = arenaTail(r.spans, spans)
	case hPositiveSpans:
		d.pSpans = arenaTail(r.spans, spans)
	case hNegativeDeltas:
		d.nDeltas = arenaTail(r.ints, ints)
	case hPositiveDeltas:
		d.pDeltas = arenaTail(r.ints, ints)
	case hNegativeCounts:
		d.nCounts = arenaTail(r.floats, floats)
	case hPositiveCounts:
		d.pCounts = arenaTail(r.floats, floats)
	case hCustomValues:
		d.customValues = arenaTail(r.floats, floats)
	}
	return nil
}

// arenaTail is arena[start:], capped so that appending to it cannot
// overwrite what follows, or nil when empty.
func arenaTail[T any](arena []T, start int) []T {
	if len(arena) == start {
		return nil
	}
	return arena[start:len(arena):len(arena)]
}

// appendSpan decodes one BucketSpan message onto r.spans.
func (r *writeRequest) appendSpan(b []byte, typ protowire.Type) error {
	if typ != protowire.BytesType {
		return errWireType
	}
	b, _ = protowire.ConsumeBytes(b)
	var sp histogram.Span
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
		if num != 1 && num != 2 {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return errTruncated
			}
			b = b[n:]
			continue
		}
		if typ != protowire.VarintType {
			return errWireType
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
		if num == 1 {
			sp.Offset = zigzag32(v)
		} else {
			sp.Length = uint32(v)
		}
	}
	r.spans = append(r.spans, sp)
	return nil
}

// appendDeltas decodes sint64 deltas, packed or not, onto r.ints.
func (r *writeRequest) appendDeltas(b []byte, typ protowire.Type) error {
	switch typ {
	case protowire.VarintType:
		v, _ := protowire.ConsumeVarint(b)
		r.ints = append(r.ints, protowire.DecodeZigZag(v))
		return nil
	case protowire.BytesType:
		b, _ = protowire.ConsumeBytes(b)
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return errTruncated
			}
			b = b[n:]
			r.ints = append(r.ints, protowire.DecodeZigZag(v))
		}
		return nil
	}
	return errWireType
}

// appendDoubles decodes doubles, packed or not, onto r.floats.
func (r *writeRequest) appendDoubles(b []byte, typ protowire.Type) error {
	switch typ {
	case protowire.Fixed64Type:
		v, _ := protowire.ConsumeFixed64(b)
		r.floats = append(r.floats, math.Float64frombits(v))
		return nil
	case protowire.BytesType:
		b, _ = protowire.ConsumeBytes(b)
		if len(b)%8 != 0 {
			return fmt.Errorf("packed doubles of %d bytes, not a multiple of 8: %w", len(b), errTruncated)
		}
		for ; len(b) > 0; b = b[8:] {
			v, _ := protowire.ConsumeFixed64(b)
			r.floats = append(r.floats, math.Float64frombits(v))
		}
		return nil
	}
	return errWireType
}

// zigzag32 decodes a sint32 as the generated code does: from the low 32
// bits of the varint.
func zigzag32(v uint64) int32 {
	u := uint32(v)
	return int32(u>>1) ^ -int32(u&1)
}
