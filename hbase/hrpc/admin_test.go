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
