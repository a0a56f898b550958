package hrpc

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// Filter is a server-side filter. HBase loads the Java class named in the
// message and parses its own protobuf from the bytes inside.
type Filter interface {
	FilterProto() (*pb.Filter, error)
}

// Comparator is a server-side comparator for filters and conditions.
type Comparator interface {
	ComparatorProto() (*pb.Comparator, error)
}

const (
	filterPkg     = "org.apache.hadoop.hbase.filter."
	comparatorPkg = "org.apache.hadoop.hbase.filter."
)

func wrapFilter(class string, m proto.Message) (*pb.Filter, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", class, err)
	}
	return &pb.Filter{Name: proto.String(filterPkg + class), SerializedFilter: b}, nil
}

func wrapComparator(class string, m proto.Message) (*pb.Comparator, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", class, err)
	}
	return &pb.Comparator{Name: proto.String(comparatorPkg + class), SerializedComparator: b}, nil
}

// RowFilter keeps the rows whose key compares to the comparator as Op says.
type RowFilter struct {
	Op         pb.CompareType
	Comparator Comparator
}

func (f RowFilter) FilterProto() (*pb.Filter, error) {
	c, err := f.Comparator.ComparatorProto()
	if err != nil {
		return nil, err
	}
	return wrapFilter("RowFilter", &pb.RowFilter{CompareFilter: &pb.CompareFilter{CompareOp: f.Op.Enum(), Comparator: c}})
}

// FuzzyKey is a pattern of a FuzzyRowFilter: mask byte 0 means the key byte
// must match, 1 means any byte.
type FuzzyKey struct {
	Key, Mask []byte
}

// FuzzyRowFilter keeps the rows whose key matches any of the patterns.
type FuzzyRowFilter struct {
	Keys []FuzzyKey
}

func (f FuzzyRowFilter) FilterProto() (*pb.Filter, error) {
	m := &pb.FuzzyRowFilter{FuzzyKeysData: make([]*pb.BytesBytesPair, len(f.Keys))}
	for i, k := range f.Keys {
		if len(k.Key) != len(k.Mask) {
			return nil, fmt.Errorf("fuzzy key %d: key of %d bytes, mask of %d", i, len(k.Key), len(k.Mask))
		}
		for j, b := range k.Mask {
			if b > 1 {
				return nil, fmt.Errorf("fuzzy key %d: mask byte %d is %d, want 0 or 1", i, j, b)
			}
		}
		m.FuzzyKeysData[i] = &pb.BytesBytesPair{First: k.Key, Second: k.Mask}
	}
	return wrapFilter("FuzzyRowFilter", m)
}

// KeyOnlyFilter strips values (or, with LenAsVal, replaces each with its
// 4-byte length).
type KeyOnlyFilter struct {
	LenAsVal bool
}

func (f KeyOnlyFilter) FilterProto() (*pb.Filter, error) {
	return wrapFilter("KeyOnlyFilter", &pb.KeyOnlyFilter{LenAsVal: proto.Bool(f.LenAsVal)})
}

// FirstKeyOnlyFilter returns the first cell of each row only.
type FirstKeyOnlyFilter struct{}

func (FirstKeyOnlyFilter) FilterProto() (*pb.Filter, error) {
	return wrapFilter("FirstKeyOnlyFilter", &pb.FirstKeyOnlyFilter{})
}

// MultipleColumnPrefixFilter keeps the cells whose qualifier starts with
// one of the prefixes, seeking over the qualifiers between them. The
// server sorts the prefixes and refuses duplicates; it tests a qualifier
// against the greatest prefix not above it only, so none may be a prefix
// of another.
type MultipleColumnPrefixFilter struct {
	Prefixes [][]byte
}

func (f MultipleColumnPrefixFilter) FilterProto() (*pb.Filter, error) {
	return wrapFilter("MultipleColumnPrefixFilter", &pb.MultipleColumnPrefixFilter{SortedPrefixes: f.Prefixes})
}

// PrefixFilter keeps the rows whose key starts with Prefix.
type PrefixFilter struct {
	Prefix []byte
}

func (f PrefixFilter) FilterProto() (*pb.Filter, error) {
	return wrapFilter("PrefixFilter", &pb.PrefixFilter{Prefix: f.Prefix})
}

// RowRange is one range of a MultiRowRangeFilter; a nil bound is open.
type RowRange struct {
	Start          []byte
	StartInclusive bool
	Stop           []byte
	StopInclusive  bool
}

// MultiRowRangeFilter keeps the rows inside any of the ranges.
type MultiRowRangeFilter struct {
	Ranges []RowRange
}

// FilterProto encodes the message by hand: every read's scan carries one,
// with a range per salt bucket and run of hours, and building a
// pb.RowRange per range for proto.Marshal took 3 % of the adapter's CPU on
// a streamed read (BENCHMARKS.md, "Native HBase client").
func (f MultiRowRangeFilter) FilterProto() (*pb.Filter, error) {
	// Never nil: serialized_filter is present even for no ranges, as
	// proto.Marshal's empty answer made it.
	b := f.appendProto([]byte{})
	return &pb.Filter{Name: proto.String(filterPkg + "MultiRowRangeFilter"), SerializedFilter: b}, nil
}

// appendProto appends the filter's pb.MultiRowRangeFilter message, the
// bytes proto.Marshal gives: fields in number order, a nil bound absent, an
// empty one present and empty (proto2), both inclusive flags always set.
func (f MultiRowRangeFilter) appendProto(dst []byte) []byte {
	size := 0
	for _, r := range f.Ranges {
		n := r.protoSize()
		size += 1 + protowire.SizeVarint(uint64(n)) + n
	}
	dst = slices.Grow(dst, size)
	for _, r := range f.Ranges {
		dst = protowire.AppendTag(dst, 1, protowire.BytesType) // row_range_list
		dst = protowire.AppendVarint(dst, uint64(r.protoSize()))
		if r.Start != nil {
			dst = protowire.AppendTag(dst, 1, protowire.BytesType) // start_row
			dst = protowire.AppendBytes(dst, r.Start)
		}
		dst = protowire.AppendTag(dst, 2, protowire.VarintType) // start_row_inclusive
		dst = protowire.AppendVarint(dst, protowire.EncodeBool(r.StartInclusive))
		if r.Stop != nil {
			dst = protowire.AppendTag(dst, 3, protowire.BytesType) // stop_row
			dst = protowire.AppendBytes(dst, r.Stop)
		}
		dst = protowire.AppendTag(dst, 4, protowire.VarintType) // stop_row_inclusive
		dst = protowire.AppendVarint(dst, protowire.EncodeBool(r.StopInclusive))
	}
	return dst
}

// protoSize is the length of r's pb.RowRange message: each tag a byte, each
// flag a byte.
func (r RowRange) protoSize() int {
	n := 4
	if r.Start != nil {
		n += 1 + protowire.SizeBytes(len(r.Start))
	}
	if r.Stop != nil {
		n += 1 + protowire.SizeBytes(len(r.Stop))
	}
	return n
}

// FilterList combines filters: all must pass (MUST_PASS_ALL) or one
// (MUST_PASS_ONE).
type FilterList struct {
	Op      pb.FilterList_Operator
	Filters []Filter
}

func (f FilterList) FilterProto() (*pb.Filter, error) {
	m := &pb.FilterList{Operator: f.Op.Enum(), Filters: make([]*pb.Filter, len(f.Filters))}
	for i, sub := range f.Filters {
		p, err := sub.FilterProto()
		if err != nil {
			return nil, fmt.Errorf("filter list member %d: %w", i, err)
		}
		m.Filters[i] = p
	}
	return wrapFilter("FilterList", m)
}

// RegexStringComparator matches with a Java regular expression (find(), so
// anchor with ^...$). Charset ISO-8859-1 maps each byte to one character,
// which makes it safe on binary keys.
type RegexStringComparator struct {
	Pattern string
	Flags   int32
	Charset string
}

func (c RegexStringComparator) ComparatorProto() (*pb.Comparator, error) {
	cs := c.Charset
	if cs == "" {
		cs = "ISO-8859-1"
	}
	return wrapComparator("RegexStringComparator", &pb.RegexStringComparator{
		Pattern: proto.String(c.Pattern), PatternFlags: proto.Int32(c.Flags),
		Charset: proto.String(cs), Engine: proto.String("JAVA"),
	})
}

// BinaryComparator compares bytewise with Value.
type BinaryComparator struct {
	Value []byte
}

func (c BinaryComparator) ComparatorProto() (*pb.Comparator, error) {
	v := c.Value
	if v == nil {
		// ByteArrayComparable.value is optional, but the server's parser
		// turns an absent value into null and fails on it.
		v = []byte{}
	}
	return wrapComparator("BinaryComparator", &pb.BinaryComparator{Comparable: &pb.ByteArrayComparable{Value: v}})
}
