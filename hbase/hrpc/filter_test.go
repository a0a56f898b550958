package hrpc

import (
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
