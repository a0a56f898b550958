package hrpc

import (
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

func TestMergeFamilyKeepsWhatItDoesNotSet(t *testing.T) {
	cur := &pb.ColumnFamilySchema{Name: []byte("t"), Attributes: []*pb.BytesBytesPair{
		{First: []byte("COMPRESSION"), Second: []byte("SNAPPY")},
		{First: []byte("TTL"), Second: []byte("86400")},
		{First: []byte("IN_MEMORY"), Second: []byte("true")},
		{First: []byte("BLOCKSIZE"), Second: []byte("131072")},
	}}
	// A configuration entry (field 3), which this protocol subset does not
	// model, must survive as an unknown field.
	cur.ProtoReflect().SetUnknown(protowire.AppendTag(nil, 3, protowire.BytesType))
	cur.ProtoReflect().SetUnknown(append(cur.ProtoReflect().GetUnknown(), 0))

	got, err := MergeFamily(cur, Family{Name: "t", BloomFilter: "ROW", DataBlockEncoding: "FAST_DIFF"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"COMPRESSION": "SNAPPY", "BLOCKSIZE": "131072", // kept
		"TTL": "2147483647", "IN_MEMORY": "false", "NEW_VERSION_BEHAVIOR": "false", // zero values set
		"BLOOMFILTER": "ROW", "DATA_BLOCK_ENCODING": "FAST_DIFF", // named
	}
	have := map[string]string{}
	for _, a := range got.GetAttributes() {
		have[string(a.GetFirst())] = string(a.GetSecond())
	}
	for k, v := range want {
		if have[k] != v {
			t.Errorf("%s = %q, want %q", k, have[k], v)
		}
	}
	if len(have) != len(want) {
		t.Errorf("attributes %v, want %v", have, want)
	}
	if len(got.ProtoReflect().GetUnknown()) == 0 {
		t.Error("the family's configuration (unknown to this subset) was dropped")
	}
	if len(cur.GetAttributes()) != 4 {
		t.Error("MergeFamily changed its input")
	}
	got, err = MergeFamily(cur, Family{Name: "t", TTL: 90 * 24 * time.Hour, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range got.GetAttributes() {
		if string(a.GetFirst()) == "TTL" && string(a.GetSecond()) != "7776000" {
			t.Errorf("TTL = %s, want 7776000", a.GetSecond())
		}
	}
	_ = proto.Size(got)
}

// TestMergeFamilyInMemoryCompaction: a family that names no in-memory
// compaction keeps the operator's; one that names it sets it, upper-cased,
// and the MSLAB and pipeline settings with it.
func TestMergeFamilyInMemoryCompaction(t *testing.T) {
	cur := &pb.ColumnFamilySchema{Name: []byte("r"), Attributes: []*pb.BytesBytesPair{
		{First: []byte("IN_MEMORY_COMPACTION"), Second: []byte("ADAPTIVE")},
		{First: []byte(PipelineSegmentsKey), Second: []byte("5")},
	}}
	for _, c := range []struct {
		set         string
		noMSLAB     bool
		segments    int
		want, mslab string // mslab "": the attribute absent
		pipeline    string // "": the attribute absent
	}{
		{"", false, 0, "ADAPTIVE", "", "5"},
		{"basic", true, 64, "BASIC", "false", "64"},
		{"NONE", false, 0, "NONE", "true", ""},
	} {
		got, err := MergeFamily(cur, Family{Name: "r", InMemoryCompaction: c.set, NoMSLAB: c.noMSLAB, PipelineSegments: c.segments})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		var mslab, pipeline string
		for _, a := range got.GetAttributes() {
			switch string(a.GetFirst()) {
			case "IN_MEMORY_COMPACTION":
				n++
				if string(a.GetSecond()) != c.want {
					t.Errorf("InMemoryCompaction %q: IN_MEMORY_COMPACTION = %s, want %s", c.set, a.GetSecond(), c.want)
				}
			case MSLABKey:
				mslab = string(a.GetSecond())
			case PipelineSegmentsKey:
				pipeline = string(a.GetSecond())
			}
		}
		if pipeline != c.pipeline {
			t.Errorf("InMemoryCompaction %q: %s = %q, want %q", c.set, PipelineSegmentsKey, pipeline, c.pipeline)
		}
		if n != 1 {
			t.Errorf("InMemoryCompaction %q: %d IN_MEMORY_COMPACTION attributes, want 1", c.set, n)
		}
		if mslab != c.mslab {
			t.Errorf("InMemoryCompaction %q: %s = %q, want %q", c.set, MSLABKey, mslab, c.mslab)
		}
	}
}

func TestNewAddColumnCall(t *testing.T) {
	call, err := NewAddColumnCall("ns:tbl", Family{Name: "r", TTL: time.Hour, Compression: "snappy"}, 7, 9)
	if err != nil {
		t.Fatal(err)
	}
	req := call.Request.(*pb.AddColumnRequest)
	if call.Service != MasterService || call.Method != "AddColumn" || string(req.GetTableName().GetNamespace()) != "ns" ||
		string(req.GetTableName().GetQualifier()) != "tbl" || req.GetNonceGroup() != 7 || req.GetNonce() != 9 {
		t.Fatalf("call %s.%s, request %v", call.Service, call.Method, req)
	}
	have := map[string]string{}
	for _, a := range req.GetColumnFamilies().GetAttributes() {
		have[string(a.GetFirst())] = string(a.GetSecond())
	}
	if string(req.GetColumnFamilies().GetName()) != "r" || have["TTL"] != "3600" || have["COMPRESSION"] != "SNAPPY" {
		t.Fatalf("family %v", req.GetColumnFamilies())
	}
	if _, ok := call.Response.(*pb.AddColumnResponse); !ok {
		t.Fatalf("response %T", call.Response)
	}
	if _, err := NewAddColumnCall("tbl", Family{}, 0, 0); err == nil {
		t.Fatal("a family without a name: no error")
	}
}
