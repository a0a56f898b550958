package hrpc

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// UnmarshalMultiResponse decodes b into m as proto.Unmarshal does, for what
// a region server answers a Multi of mutations: region action results
// holding results-or-exceptions, each with an index and a result without
// cells in the message (a put's empty result, or a count of cells in the
// cell block), processed flags, and the region load statistics HBase
// appends (kept as unknown fields, as proto keeps them: the generated
// MultiResponse does not declare them). It reports false, leaving m as it
// was, for anything else (exceptions, cells inside the message, unknown
// fields below the top level, malformed bytes), which the caller decodes
// with proto.
//
// proto's decoder allocates every message on its own through reflection,
// three a mutation: 7.5 % of the adapter's CPU at 200 one-cell rows a
// request. Here the messages of one answer come from one slice each.
func UnmarshalMultiResponse(b []byte, m *pb.MultiResponse) bool {
	nRAR, nROE, nUnknown, ok := multiResponseCounts(b)
	if !ok {
		return false
	}
	var (
		rars    = make([]pb.RegionActionResult, nRAR)
		rarPtrs = make([]*pb.RegionActionResult, nRAR)
		roes    = make([]pb.ResultOrException, nROE)
		roePtrs = make([]*pb.ResultOrException, nROE)
		index   = make([]uint32, nROE)
		results = resultSlab{n: nROE}
		unknown []byte
		top     *bool
	)
	if nUnknown > 0 {
		unknown = make([]byte, 0, nUnknown)
	}
	nr, ne := 0, 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		switch {
		case num == 1:
			v, k := protowire.ConsumeBytes(b[n:])
			rar := &rars[nr]
			rarPtrs[nr] = rar
			nr++
			first := ne
			if ne = fillRegionActionResult(v, rar, roes, roePtrs, index, &results, ne); ne > first {
				rar.ResultOrException = roePtrs[first:ne:ne]
			}
			n += k
		case num == 2:
			v, k := protowire.ConsumeVarint(b[n:])
			top = protoBool(v)
			n += k
		default:
			// Kept as proto keeps it: the tag written anew (an overlong
			// varint comes out short; found by FuzzUnmarshalMultiResponse),
			// then the value's bytes.
			k := protowire.ConsumeFieldValue(num, typ, b[n:])
			unknown = append(protowire.AppendTag(unknown, num, typ), b[n:n+k]...)
			n += k
		}
		b = b[n:]
	}
	m.Reset()
	m.RegionActionResult = rarPtrs
	m.Processed = top
	if len(unknown) > 0 {
		m.ProtoReflect().SetUnknown(protoreflect.RawFields(unknown))
	}
	return true
}

// fillRegionActionResult decodes one RegionActionResult that
// multiResponseCounts has checked, its results-or-exceptions taken from
// roes from position ne on; it returns the position after them.
func fillRegionActionResult(b []byte, rar *pb.RegionActionResult, roes []pb.ResultOrException, ptrs []*pb.ResultOrException, index []uint32, results *resultSlab, ne int) int {
	for len(b) > 0 {
		num, _, n := protowire.ConsumeTag(b)
		if num == 1 {
			v, m := protowire.ConsumeBytes(b[n:])
			roe := &roes[ne]
			ptrs[ne] = roe
			fillResultOrException(v, roe, &index[ne], results)
			ne++
			n += m
		} else { // 3, processed
			v, m := protowire.ConsumeVarint(b[n:])
			rar.Processed = protoBool(v)
			n += m
		}
		b = b[n:]
	}
	return ne
}

func fillResultOrException(b []byte, roe *pb.ResultOrException, index *uint32, results *resultSlab) {
	for len(b) > 0 {
		num, _, n := protowire.ConsumeTag(b)
		if num == 1 {
			v, m := protowire.ConsumeVarint(b[n:])
			*index = uint32(v)
			roe.Index = index
			n += m
		} else { // 2, result: a repeated one merges into the first
			v, m := protowire.ConsumeBytes(b[n:])
			roe.Result = results.fill(roe.Result, v)
			n += m
		}
		b = b[n:]
	}
}

// resultSlab gives the results of one answer: one shared empty Result for
// every put's, the others from one slice. Nothing reads a result but to
// learn its fields, so sharing the empty one is safe, and it is most of
// them: 96 bytes a mutation saved.
type resultSlab struct {
	empty *pb.Result
	own   []pb.Result
	n     int // results the answer may hold, the capacity of own
}

// fill returns r, or a new result if r is nil, with the fields of b merged
// in; the shared empty result is never written.
func (s *resultSlab) fill(r *pb.Result, b []byte) *pb.Result {
	if len(b) == 0 {
		if r != nil {
			return r
		}
		if s.empty == nil {
			s.empty = &pb.Result{}
		}
		return s.empty
	}
	if r == nil || r == s.empty {
		if s.own == nil {
			s.own = make([]pb.Result, 0, s.n)
		}
		s.own = append(s.own, pb.Result{})
		r = &s.own[len(s.own)-1]
	}
	fillResult(b, r)
	return r
}

func fillResult(b []byte, r *pb.Result) {
	for len(b) > 0 {
		num, _, n := protowire.ConsumeTag(b)
		v, m := protowire.ConsumeVarint(b[n:])
		switch num {
		case 2:
			c := int32(v)
			r.AssociatedCellCount = &c
		case 3:
			r.Exists = protoBool(v)
		case 4:
			r.Stale = protoBool(v)
		case 5:
			r.Partial = protoBool(v)
		}
		b = b[n+m:]
	}
}

// multiResponseCounts checks that UnmarshalMultiResponse can decode b and
// counts its RegionActionResults, its ResultOrExceptions, and the bytes
// of its top-level unknown fields.
func multiResponseCounts(b []byte) (nRAR, nROE, nUnknown int, ok bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, 0, 0, false
		}
		var m int
		switch {
		case num == 1 && typ == protowire.BytesType:
			var v []byte
			if v, m = protowire.ConsumeBytes(b[n:]); m < 0 {
				return 0, 0, 0, false
			}
			k, ok := regionActionResultCount(v)
			if !ok {
				return 0, 0, 0, false
			}
			nRAR++
			nROE += k
		case num == 2 && typ == protowire.VarintType:
			if _, m = protowire.ConsumeVarint(b[n:]); m < 0 {
				return 0, 0, 0, false
			}
		case num == 1 || num == 2:
			// A declared field in another wire type: proto keeps it as
			// an unknown field, a case not worth a path of its own.
			return 0, 0, 0, false
		case num > protowire.MaxValidNumber:
			// protowire reads field numbers up to 2^31-1; proto refuses
			// those past 2^29-1 (found by FuzzUnmarshalMultiResponse).
			return 0, 0, 0, false
		default:
			if m = protowire.ConsumeFieldValue(num, typ, b[n:]); m < 0 {
				return 0, 0, 0, false
			}
			nUnknown += protowire.SizeTag(num) + m
		}
		b = b[n+m:]
	}
	return nRAR, nROE, nUnknown, true
}

// regionActionResultCount counts the ResultOrExceptions of one
// RegionActionResult, or reports false when it holds anything but those
// and a processed flag.
func regionActionResultCount(b []byte) (int, bool) {
	k := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, false
		}
		var m int
		switch {
		case num == 1 && typ == protowire.BytesType:
			var v []byte
			if v, m = protowire.ConsumeBytes(b[n:]); m < 0 || !resultOrExceptionPlain(v) {
				return 0, false
			}
			k++
		case num == 3 && typ == protowire.VarintType:
			if _, m = protowire.ConsumeVarint(b[n:]); m < 0 {
				return 0, false
			}
		default:
			return 0, false
		}
		b = b[n+m:]
	}
	return k, true
}

// resultOrExceptionPlain reports whether a ResultOrException holds only an
// index and results of scalar fields.
func resultOrExceptionPlain(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		var m int
		switch {
		case num == 1 && typ == protowire.VarintType:
			_, m = protowire.ConsumeVarint(b[n:])
		case num == 2 && typ == protowire.BytesType:
			var v []byte
			if v, m = protowire.ConsumeBytes(b[n:]); m >= 0 && !resultPlain(v) {
				return false
			}
		default:
			return false
		}
		if m < 0 {
			return false
		}
		b = b[n+m:]
	}
	return true
}

// resultPlain reports whether a Result holds only scalar fields: a count of
// cells in the cell block, exists, stale, partial.
func resultPlain(b []byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num < 2 || num > 5 || typ != protowire.VarintType {
			return false
		}
		_, m := protowire.ConsumeVarint(b[n:])
		if m < 0 {
			return false
		}
		b = b[n+m:]
	}
	return true
}

func protoBool(v uint64) *bool {
	t := v != 0
	return &t
}
