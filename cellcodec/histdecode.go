package cellcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/histogram"
)

// histDecoder reads the fields of a raw histogram value; the first error
// sticks and every later read returns zero. Counts read from the value are
// bounded by the bytes left, so a hostile value cannot make it allocate
// more than its own size times a small factor.
type histDecoder struct {
	b   []byte
	err error
}

func (d *histDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
	d.b = nil
}

func (d *histDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *histDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *histDecoder) float() float64 {
	if len(d.b) < 8 {
		d.fail("truncated float")
		return 0
	}
	v := math.Float64frombits(binary.BigEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

// count reads a length prefix of items at least minBytes long each.
func (d *histDecoder) count(minBytes int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/minBytes) {
		d.fail("%d items cannot fit in %d bytes", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *histDecoder) spans() []histogram.Span {
	n := d.count(2)
	if n == 0 {
		return nil
	}
	s := make([]histogram.Span, n)
	for i := range s {
		off, l := d.varint(), d.uvarint()
		if off < math.MinInt32 || off > math.MaxInt32 || l > math.MaxUint32 {
			d.fail("span %d out of range", i)
		}
		s[i] = histogram.Span{Offset: int32(off), Length: uint32(l)}
	}
	return s
}

func (d *histDecoder) ints() []int64 {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	s := make([]int64, n)
	for i := range s {
		s[i] = d.varint()
	}
	return s
}

func (d *histDecoder) floats() []float64 {
	n := d.count(8)
	if n == 0 {
		return nil
	}
	s := make([]float64, n)
	for i := range s {
		s[i] = d.float()
	}
	return s
}

// checkHistShape checks what a chunk appender and PromQL rely on without
// judging the counts (histogram.Validate does that on the write path; a
// stale marker is stored as it came).
func checkHistShape(hint histogram.CounterResetHint, schema int64, h *histogram.Histogram, fh *histogram.FloatHistogram) error {
	if hint > histogram.GaugeType {
		return fmt.Errorf("unknown counter-reset hint %d", hint)
	}
	if !validSchema(schema) {
		return fmt.Errorf("schema %d out of range", schema)
	}
	var (
		ps, ns []histogram.Span
		pb, nb int
		cv     int
	)
	if h != nil {
		ps, ns, pb, nb, cv = h.PositiveSpans, h.NegativeSpans, len(h.PositiveBuckets), len(h.NegativeBuckets), len(h.CustomValues)
	} else {
		ps, ns, pb, nb, cv = fh.PositiveSpans, fh.NegativeSpans, len(fh.PositiveBuckets), len(fh.NegativeBuckets), len(fh.CustomValues)
	}
	if spanTotal(ps) != uint64(pb) || spanTotal(ns) != uint64(nb) {
		return errors.New("span lengths do not match bucket counts")
	}
	custom := histogram.IsCustomBucketsSchema(int32(schema))
	if custom && (len(ns) != 0 || nb != 0) {
		return errors.New("custom-bucket histogram with negative buckets")
	}
	if !custom && cv != 0 {
		return errors.New("custom values on an exponential schema")
	}
	return nil
}

// validSchema reports whether schema is one Prometheus stores: the
// exponential schemas -4 to 8 and the custom-bucket schema -53.
func validSchema(schema int64) bool {
	return (schema >= int64(histogram.ExponentialSchemaMin) && schema <= int64(histogram.ExponentialSchemaMax)) ||
		schema == int64(histogram.CustomBucketsSchema)
}

func spanTotal(spans []histogram.Span) uint64 {
	var n uint64
	for _, s := range spans {
		n += uint64(s.Length)
	}
	return n
}

// CheckHistogramShape checks that exactly one of h and fh is set and that
// it has the shape a raw histogram cell must have (DecodeHistogramValue
// checks the same): a known hint, a stored schema (-4 to 8, or -53 custom
// buckets), span lengths adding up to the bucket counts, custom values with
// the custom-bucket schema only. It does not judge counts.
func CheckHistogramShape(h *histogram.Histogram, fh *histogram.FloatHistogram) error {
	switch {
	case (h == nil) == (fh == nil):
		return errors.New("histogram sample must hold exactly one of an integer and a float histogram")
	case h != nil:
		return checkHistShape(h.CounterResetHint, int64(h.Schema), h, nil)
	default:
		return checkHistShape(fh.CounterResetHint, int64(fh.Schema), nil, fh)
	}
}
