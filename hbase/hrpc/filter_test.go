package hrpc

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

func TestFilterSerialization(t *testing.T) {
	f := FilterList{Op: pb.FilterList_MUST_PASS_ALL, Filters: []Filter{
		RowFilter{Op: pb.CompareType_EQUAL, Comparator: RegexStringComparator{Pattern: "^a.b$"}},
		FuzzyRowFilter{Keys: []FuzzyKey{{Key: []byte("k\x00"), Mask: []byte{0, 1}}}},
		KeyOnlyFilter{}, FirstKeyOnlyFilter{}, PrefixFilter{Prefix: []byte("p")},
		MultiRowRangeFilter{Ranges: []RowRange{{Start: []byte("a"), StartInclusive: true, Stop: []byte("b")}}},
	}}
	p, err := f.FilterProto()
	if err != nil {
		t.Fatal(err)
	}
	if p.GetName() != "org.apache.hadoop.hbase.filter.FilterList" {
		t.Fatalf("name %q", p.GetName())
	}
	var list pb.FilterList
	if err := proto.Unmarshal(p.GetSerializedFilter(), &list); err != nil {
		t.Fatal(err)
	}
	names := []string{"RowFilter", "FuzzyRowFilter", "KeyOnlyFilter", "FirstKeyOnlyFilter", "PrefixFilter", "MultiRowRangeFilter"}
	if len(list.GetFilters()) != len(names) || list.GetOperator() != pb.FilterList_MUST_PASS_ALL {
		t.Fatalf("%v", &list)
	}
	for i, n := range names {
		if got := list.GetFilters()[i].GetName(); got != "org.apache.hadoop.hbase.filter."+n {
			t.Errorf("filter %d: %q", i, got)
		}
	}
	var rf pb.RowFilter
	if err := proto.Unmarshal(list.GetFilters()[0].GetSerializedFilter(), &rf); err != nil {
		t.Fatal(err)
	}
	var re pb.RegexStringComparator
	if err := proto.Unmarshal(rf.GetCompareFilter().GetComparator().GetSerializedComparator(), &re); err != nil {
		t.Fatal(err)
	}
	if re.GetCharset() != "ISO-8859-1" || re.GetPattern() != "^a.b$" || re.GetEngine() != "JAVA" {
		t.Errorf("%v", &re)
	}
	if _, err := (FuzzyRowFilter{Keys: []FuzzyKey{{Key: []byte("ab"), Mask: []byte{0}}}}).FilterProto(); err == nil {
		t.Error("fuzzy key and mask of different lengths accepted")
	}
	if _, err := (FuzzyRowFilter{Keys: []FuzzyKey{{Key: []byte("a"), Mask: []byte{2}}}}).FilterProto(); err == nil {
		t.Error("fuzzy mask byte 2 accepted")
	}
}

func TestMultipleColumnPrefixFilter(t *testing.T) {
	f := MultipleColumnPrefixFilter{Prefixes: [][]byte{[]byte("r\x00\x01"), []byte("r\x00\xff"), {0xff}}}
	p, err := f.FilterProto()
	if err != nil {
		t.Fatal(err)
	}
	if p.GetName() != "org.apache.hadoop.hbase.filter.MultipleColumnPrefixFilter" {
		t.Fatalf("name %q", p.GetName())
	}
	// repeated bytes sorted_prefixes = 1: tag 0x0a, length, bytes, in order.
	want := []byte{0x0a, 3, 'r', 0, 1, 0x0a, 3, 'r', 0, 0xff, 0x0a, 1, 0xff}
	if got := p.GetSerializedFilter(); string(got) != string(want) {
		t.Fatalf("serialized % x, want % x", got, want)
	}
	var m pb.MultipleColumnPrefixFilter
	if err := proto.Unmarshal(p.GetSerializedFilter(), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.GetSortedPrefixes()) != 3 || string(m.GetSortedPrefixes()[2]) != "\xff" {
		t.Errorf("%v", &m)
	}
}

// benchRanges is the filter of a query's scan: one range per salt bucket
// and run of hours, keys [salt][metric UID][base hour].
func benchRanges(n int) MultiRowRangeFilter {
	f := MultiRowRangeFilter{Ranges: make([]RowRange, n)}
	for i := range f.Ranges {
		start := []byte{byte(i), 0, 0, 7, 0x69, 0x20, 0, 0}
		stop := []byte{byte(i), 0, 0, 7, 0x69, 0x20, 0x1c, 0x20}
		f.Ranges[i] = RowRange{Start: start, StartInclusive: true, Stop: stop}
	}
	return f
}

func BenchmarkMultiRowRangeFilterProto(b *testing.B) {
	for _, n := range []int{16, 256} {
		f := benchRanges(n)
		b.Run(fmt.Sprintf("ranges=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.FilterProto(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMultiRowRangeFilterBytes checks the hand encoding against
// proto.Marshal of the generated message, over bounds absent, empty, short
// and longer than a one-byte length.
func TestMultiRowRangeFilterBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	bound := func() []byte {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return []byte{}
		case 2:
			return randBytes(rng, 1+rng.IntN(16))
		default:
			return randBytes(rng, 120+rng.IntN(300))
		}
	}
	for i := range 500 {
		f := MultiRowRangeFilter{Ranges: make([]RowRange, rng.IntN(40))}
		m := &pb.MultiRowRangeFilter{}
		for j := range f.Ranges {
			r := RowRange{Start: bound(), StartInclusive: rng.IntN(2) == 0, Stop: bound(), StopInclusive: rng.IntN(2) == 0}
			f.Ranges[j] = r
			m.RowRangeList = append(m.RowRangeList, &pb.RowRange{
				StartRow: r.Start, StartRowInclusive: proto.Bool(r.StartInclusive),
				StopRow: r.Stop, StopRowInclusive: proto.Bool(r.StopInclusive),
			})
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.FilterProto()
		if err != nil {
			t.Fatal(err)
		}
		if p.GetName() != "org.apache.hadoop.hbase.filter.MultiRowRangeFilter" {
			t.Fatalf("name %q", p.GetName())
		}
		if p.SerializedFilter == nil {
			t.Fatalf("case %d (%d ranges): serialized_filter absent", i, len(f.Ranges))
		}
		if got := p.GetSerializedFilter(); !bytes.Equal(got, want) {
			t.Fatalf("case %d (%d ranges): bytes differ from proto.Marshal\n got %x\nwant %x", i, len(f.Ranges), got, want)
		}
		var back pb.MultiRowRangeFilter
		if err := proto.Unmarshal(p.GetSerializedFilter(), &back); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		for j, r := range back.GetRowRangeList() {
			in := f.Ranges[j]
			if (r.StartRow == nil) != (in.Start == nil) || !bytes.Equal(r.StartRow, in.Start) || r.GetStartRowInclusive() != in.StartInclusive ||
				(r.StopRow == nil) != (in.Stop == nil) || !bytes.Equal(r.StopRow, in.Stop) || r.GetStopRowInclusive() != in.StopInclusive {
				t.Fatalf("case %d range %d: decoded %v from %+v", i, j, r, in)
			}
		}
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}
