package remote

import (
	"unsafe"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/prom-hbase/prom-hbase/store"
)

// shape is what a scan of an encoded request finds before anything is
// decoded: how many of each thing decoding will make. The arenas are sized
// from it exactly, and the memory it implies is charged to the request
// before it is allocated, so a request that compresses well (snappy expands
// up to 21 times, and one byte of a 2.0 labels_refs becomes half a 32-byte
// label) cannot make the adapter allocate more than it was allowed to.
//
// A scan allocates nothing. It stops at the first malformed field and
// returns what it counted so far; decoding then reports the error.
type shape struct {
	series, labels, samples, symbols int
	metadata                         int // entries, and for 2.0 index entries
	strings                          int // label, symbol and metadata strings decoding may allocate

	// Native histograms: integer and float ones, their spans, their
	// integer bucket deltas, and their float bucket counts and custom
	// bounds. A histogram message that sets no count field, or both, is
	// not counted: the decoder refuses it before allocating anything.
	intHistograms, floatHistograms int
	spans, ints, floats            int
}

// histograms is the number of histogram samples.
func (s shape) histograms() int { return s.intHistograms + s.floatHistograms }

// What each decoded thing takes in the arenas, in bytes.
const (
	seriesCost = int64(unsafe.Sizeof(store.SeriesIn{}))
	labelCost  = int64(unsafe.Sizeof(labels.Label{}))
	refsCost   = 16 // a 2.0 label's two symbol references, held while its series is decoded
	sampleCost = int64(unsafe.Sizeof(store.Sample{}))
	symbolCost = int64(unsafe.Sizeof("") + unsafe.Sizeof([]byte(nil))) // bytes as sent, string once asked for
	// A histogram sample and the histogram it points to.
	intHistogramCost   = int64(unsafe.Sizeof(store.HistogramSample{}) + unsafe.Sizeof(histogram.Histogram{}))
	floatHistogramCost = int64(unsafe.Sizeof(store.HistogramSample{}) + unsafe.Sizeof(histogram.FloatHistogram{}))
	spanCost           = int64(unsafe.Sizeof(histogram.Span{}))
	// A metadata entry, and for 2.0 its entry in the by-name index.
	metadataCost = int64(unsafe.Sizeof(store.Metadata{})) + 64
	// A string new to the interner: its map entry and the string header;
	// the bytes themselves are counted as the decoded body's length, which
	// bounds them all.
	stringCost = 64

	// What the store's write path holds while it writes the request, on
	// top of the decoded request: per series its UID lookup and a row (key,
	// table cells, the HBase client's mutation and action messages), per
	// sample its cell in three forms (table cell, mutation cell, cell
	// block). Measured with BenchmarkWriteHBase (B/op for requests of 2,000
	// one-sample series: about 800 bytes per series) and the 16-sender
	// overload test (e2e/overload_test.go), whose peak RSS was five times
	// the bytes in flight before the write path was counted. A histogram
	// sample's cell also carries its spans and buckets, counted as decoded.
	writeSeriesCost = 512
	writeSampleCost = 288
)

// memory is an upper bound of what decoding a message of decodedLen bytes
// and shape s allocates.
func (s shape) memory(decodedLen int) int64 {
	return int64(s.series)*seriesCost + int64(s.labels)*(labelCost+refsCost) + int64(s.samples)*sampleCost +
		int64(s.symbols)*symbolCost + int64(s.metadata)*metadataCost +
		int64(s.strings)*stringCost + int64(decodedLen) +
		int64(s.intHistograms)*intHistogramCost + int64(s.floatHistograms)*floatHistogramCost +
		int64(s.spans)*spanCost + int64(s.ints+s.floats)*8
}

// writeMemory is what the store's write path holds for a request of shape
// s while it writes it, beside the decoded request (see writeSeriesCost).
func (s shape) writeMemory() int64 {
	return int64(s.series)*writeSeriesCost + int64(s.samples+s.histograms())*writeSampleCost +
		int64(s.spans)*spanCost + int64(s.ints+s.floats)*8
}

// eachBytesField calls f with the number and bytes of every
// length-delimited field of b, skipping fields of other wire types. It stops
// at the first malformed field: the decoder reports that one, and a count
// short of it only lowers the bound.
func eachBytesField(b []byte, f func(num protowire.Number, msg []byte)) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return
			}
			b = b[n:]
			continue
		}
		msg, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return
		}
		b = b[n:]
		f(num, msg)
	}
}

// scanV1 counts what a prometheus.WriteRequest holds.
func scanV1(b []byte) (s shape) {
	eachBytesField(b, func(num protowire.Number, msg []byte) {
		switch num {
		case 1:
			s.series++
			s.scanV1Series(msg)
		case 3:
			s.metadata++
			s.strings += min(3, len(msg)/3) // a non-empty string takes 3 bytes or more
		}
	})
	return s
}

func (s *shape) scanV1Series(b []byte) {
	eachBytesField(b, func(num protowire.Number, msg []byte) {
		switch num {
		case 1:
			s.labels++
			s.strings += min(2, len(msg)/3)
		case 2:
			s.samples++
		case 4:
			s.scanHistogram(msg)
		}
	})
}

// scanV2 counts what an io.prometheus.write.v2.Request holds.
func scanV2(b []byte) (s shape) {
	eachBytesField(b, func(num protowire.Number, msg []byte) {
		switch num {
		case 4:
			s.symbols++
			if len(msg) > 0 {
				s.strings++
			}
		case 5:
			s.series++
			s.scanV2Series(msg)
		}
	})
	return s
}

func (s *shape) scanV2Series(b []byte) {
	refs := 0
	defer func() { s.labels += (refs + 1) / 2 }()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			packed, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return
			}
			b = b[n:]
			refs += countVarints(packed)
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return
		}
		v := b[:n]
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			refs++
		case num == 2 && typ == protowire.BytesType:
			s.samples++
		case num == 3 && typ == protowire.BytesType:
			msg, _ := protowire.ConsumeBytes(v)
			s.scanHistogram(msg)
		case num == 5 && typ == protowire.BytesType && n > 1:
			s.metadata++ // an empty one is ignored
		}
	}
}

// countVarints counts the varints of a packed field: the bytes that end one
// (high bit clear), plus a truncated last one.
func countVarints(b []byte) int {
	n := 0
	for _, c := range b {
		if c < 0x80 {
			n++
		}
	}
	if len(b) > 0 && b[len(b)-1] >= 0x80 {
		n++
	}
	return n
}

// scanHistogram counts what decoding one histogram message (1.0 or 2.0, the
// same field numbers) puts in the arenas: elements of repeated fields only
// of the wire types the decoder takes, a packed double field's whole
// elements, and a packed varint field's varints, a truncated last one
// included.
func (s *shape) scanHistogram(b []byte) {
	var isInt, isFloat bool
	var spans, ints, floats int
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			return
		}
		v := b[:n]
		b = b[n:]
		switch {
		case num == hCountInt:
			isInt = true
		case num == hCountFloat:
			isFloat = true
		case (num == hNegativeSpans || num == hPositiveSpans) && typ == protowire.BytesType:
			spans++
		case num == hNegativeDeltas || num == hPositiveDeltas:
			ints += packedCount(v, typ, protowire.VarintType, countVarints)
		case num == hNegativeCounts || num == hPositiveCounts || num == hCustomValues:
			floats += packedCount(v, typ, protowire.Fixed64Type, func(b []byte) int { return len(b) / 8 })
		}
	}
	if isInt == isFloat {
		return // refused before decoding: nothing allocated
	}
	if isInt {
		s.intHistograms++
	} else {
		s.floatHistograms++
	}
	s.spans += spans
	s.ints += ints
	s.floats += floats
}

// packedCount counts the elements of one occurrence v of a repeated scalar
// field: one if unpacked (wire type one), count of the payload if packed.
func packedCount(v []byte, typ, one protowire.Type, count func([]byte) int) int {
	switch typ {
	case one:
		return 1
	case protowire.BytesType:
		payload, _ := protowire.ConsumeBytes(v)
		return count(payload)
	}
	return 0
}
