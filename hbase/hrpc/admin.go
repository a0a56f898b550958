package hrpc

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// TableName splits "ns:name" into the message; no namespace means default.
func TableName(table string) *pb.TableName {
	ns, name := "default", table
	if i := strings.IndexByte(table, ':'); i >= 0 {
		ns, name = table[:i], table[i+1:]
	}
	return &pb.TableName{Namespace: []byte(ns), Qualifier: []byte(name)}
}

// Family describes a column family at table creation. Empty strings and
// zeros leave HBase's defaults.
type Family struct {
	Name              string
	MaxVersions       int
	TTL               time.Duration
	BloomFilter       string // NONE, ROW, ROWCOL
	DataBlockEncoding string // NONE, FAST_DIFF, ...
	Compression       string // NONE, SNAPPY, GZ, ...
	// InMemory gives the family's blocks the in-memory priority of the
	// block cache.
	InMemory bool
	// NewVersionBehavior makes a delete hide only the writes that came
	// before it, whatever their timestamps: without it, re-writing a deleted
	// cell with its old timestamp stays invisible until a major compaction.
	NewVersionBehavior bool
	// InMemoryCompaction is the family's IN_MEMORY_COMPACTION (NONE, BASIC,
	// EAGER, ADAPTIVE): how its memstore flattens the cells written into
	// immutable segments before flushing them. Empty leaves the server's
	// default (hbase.hregion.compacting.memstore.type, NONE).
	InMemoryCompaction string
	// NoMSLAB turns the memstore-local allocation buffer off for the
	// family (its store's hbase.hregion.memstore.mslab.enabled; a family's
	// attributes override the region server's configuration). With it on,
	// an in-memory compacted memstore indexes its flattened segments in
	// chunks of the MSLAB's pool (CellChunkMap), and a 1 GiB region server
	// serving a few such tables ran out of heap; with it off they are
	// indexed by plain arrays (CellArrayMap), and each cell is copied out
	// of the request on its own.
	NoMSLAB bool
	// PipelineSegments is the most flattened segments an in-memory
	// compacted memstore keeps before it merges them all into one (its
	// store's PipelineSegmentsKey; 0 leaves the region server's, 2). Each
	// merge copies the index of every cell not yet flushed, so with the
	// default (a merge at every second flattening) a memstore of 128 MiB
	// flattened every 2 MiB indexes a cell again and again before it
	// reaches a file.
	PipelineSegments int
}

// MSLABKey is the region server setting that NoMSLAB overrides.
const MSLABKey = "hbase.hregion.memstore.mslab.enabled"

// PipelineSegmentsKey is the region server setting that PipelineSegments
// overrides.
const PipelineSegmentsKey = "hbase.hregion.compacting.pipeline.segments.limit"

func (f *Family) proto() (*pb.ColumnFamilySchema, error) {
	if f.Name == "" || len(f.Name) > MaxFamilyLen {
		return nil, fmt.Errorf("family name %q: want 1..%d bytes", f.Name, MaxFamilyLen)
	}
	m := &pb.ColumnFamilySchema{Name: []byte(f.Name)}
	attr := func(k, v string) {
		m.Attributes = append(m.Attributes, &pb.BytesBytesPair{First: []byte(k), Second: []byte(v)})
	}
	if f.MaxVersions > 0 {
		attr("VERSIONS", strconv.Itoa(f.MaxVersions))
	}
	if f.TTL > 0 {
		s := int64(f.TTL / time.Second)
		if s < 1 {
			s = 1
		}
		attr("TTL", strconv.FormatInt(s, 10))
	}
	if f.BloomFilter != "" {
		attr("BLOOMFILTER", strings.ToUpper(f.BloomFilter))
	}
	if f.DataBlockEncoding != "" {
		attr("DATA_BLOCK_ENCODING", strings.ToUpper(f.DataBlockEncoding))
	}
	if f.Compression != "" {
		attr("COMPRESSION", strings.ToUpper(f.Compression))
	}
	if f.InMemory {
		attr("IN_MEMORY", "true")
	}
	if f.NewVersionBehavior {
		attr("NEW_VERSION_BEHAVIOR", "true")
	}
	if f.InMemoryCompaction != "" {
		attr("IN_MEMORY_COMPACTION", strings.ToUpper(f.InMemoryCompaction))
	}
	if f.NoMSLAB {
		attr(MSLABKey, "false")
	}
	if f.PipelineSegments > 0 {
		attr(PipelineSegmentsKey, strconv.Itoa(f.PipelineSegments))
	}
	return m, nil
}

func masterCall(method string, req, resp proto.Message) *Call {
	return &Call{Service: MasterService, Method: method, Request: req, Response: resp}
}

// NewCreateTableCall creates a table; the answer carries a procedure id.
func NewCreateTableCall(table string, families []Family, splitKeys [][]byte, nonceGroup, nonce uint64) (*Call, error) {
	schema := &pb.TableSchema{TableName: TableName(table)}
	for i := range families {
		f, err := families[i].proto()
		if err != nil {
			return nil, err
		}
		schema.ColumnFamilies = append(schema.ColumnFamilies, f)
	}
	if len(schema.ColumnFamilies) == 0 {
		return nil, fmt.Errorf("table %q: no families", table)
	}
	return masterCall("CreateTable", &pb.CreateTableRequest{
		TableSchema: schema, SplitKeys: splitKeys,
		NonceGroup: proto.Uint64(nonceGroup), Nonce: proto.Uint64(nonce),
	}, &pb.CreateTableResponse{}), nil
}

// NewAddColumnCall adds family f to an existing table; the answer carries
// a procedure id. The master refuses a family the table has already with
// an InvalidFamilyOperationException.
func NewAddColumnCall(table string, f Family, nonceGroup, nonce uint64) (*Call, error) {
	schema, err := f.proto()
	if err != nil {
		return nil, err
	}
	return masterCall("AddColumn", &pb.AddColumnRequest{
		TableName: TableName(table), ColumnFamilies: schema,
		NonceGroup: proto.Uint64(nonceGroup), Nonce: proto.Uint64(nonce),
	}, &pb.AddColumnResponse{}), nil
}

// NewModifyColumnCall replaces the descriptor of an existing family with
// f: attributes f leaves empty return to HBase's defaults. The answer
// carries a procedure id, or none when there was nothing to do.
func NewModifyColumnCall(table string, f Family, nonceGroup, nonce uint64) (*Call, error) {
	schema, err := f.proto()
	if err != nil {
		return nil, err
	}
	return NewModifyColumnSchemaCall(table, schema, nonceGroup, nonce), nil
}

// MergeFamily returns cur (a family's descriptor as HBase has it) with the
// attributes of f set over it: the ones f names, and always TTL, IN_MEMORY
// and NEW_VERSION_BEHAVIOR (whose zero values mean something), and the
// MSLAB and pipeline settings whenever f names an in-memory compaction
// (a PipelineSegments of 0 then removes the family's own). Everything
// else of cur, such as an operator's COMPRESSION or BLOCKSIZE, is kept:
// ModifyColumn replaces the whole descriptor.
func MergeFamily(cur *pb.ColumnFamilySchema, f Family) (*pb.ColumnFamilySchema, error) {
	want, err := f.proto()
	if err != nil {
		return nil, err
	}
	attrs := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := attrs[k]; !ok {
			order = append(order, k)
		}
		attrs[k] = v
	}
	for _, a := range cur.GetAttributes() {
		set(string(a.GetFirst()), string(a.GetSecond()))
	}
	for _, a := range want.GetAttributes() {
		set(string(a.GetFirst()), string(a.GetSecond()))
	}
	if f.TTL <= 0 {
		set("TTL", strconv.Itoa(math.MaxInt32)) // HBase's FOREVER
	}
	set("IN_MEMORY", strconv.FormatBool(f.InMemory))
	set("NEW_VERSION_BEHAVIOR", strconv.FormatBool(f.NewVersionBehavior))
	if f.InMemoryCompaction != "" {
		// The MSLAB setting goes with the in-memory compaction: a family
		// brought back to NONE gets its MSLAB back.
		set(MSLABKey, strconv.FormatBool(!f.NoMSLAB))
		if f.PipelineSegments <= 0 {
			delete(attrs, PipelineSegmentsKey)
		}
	}
	// A clone keeps what this subset of the protocol does not model (the
	// family's configuration, field 3) as unknown fields, sent back as is.
	out := proto.Clone(cur).(*pb.ColumnFamilySchema)
	out.Attributes = nil
	for _, k := range order {
		if _, ok := attrs[k]; !ok {
			continue
		}
		out.Attributes = append(out.Attributes, &pb.BytesBytesPair{First: []byte(k), Second: []byte(attrs[k])})
	}
	return out, nil
}

// NewModifyColumnSchemaCall replaces a family's descriptor with schema; the
// answer carries a procedure id.
func NewModifyColumnSchemaCall(table string, schema *pb.ColumnFamilySchema, nonceGroup, nonce uint64) *Call {
	return masterCall("ModifyColumn", &pb.ModifyColumnRequest{
		TableName: TableName(table), ColumnFamilies: schema,
		NonceGroup: proto.Uint64(nonceGroup), Nonce: proto.Uint64(nonce),
	}, &pb.ModifyColumnResponse{})
}

// NewDisableTableCall disables a table; the answer carries a procedure id.
func NewDisableTableCall(table string, nonceGroup, nonce uint64) *Call {
	return masterCall("DisableTable", &pb.DisableTableRequest{
		TableName: TableName(table), NonceGroup: proto.Uint64(nonceGroup), Nonce: proto.Uint64(nonce),
	}, &pb.DisableTableResponse{})
}

// NewDeleteTableCall deletes a disabled table; the answer carries a
// procedure id.
func NewDeleteTableCall(table string, nonceGroup, nonce uint64) *Call {
	return masterCall("DeleteTable", &pb.DeleteTableRequest{
		TableName: TableName(table), NonceGroup: proto.Uint64(nonceGroup), Nonce: proto.Uint64(nonce),
	}, &pb.DeleteTableResponse{})
}

// NewGetTableStateCall asks for a table's state; TableNotFoundException if
// there is no such table.
func NewGetTableStateCall(table string) *Call {
	return masterCall("GetTableState", &pb.GetTableStateRequest{TableName: TableName(table)}, &pb.GetTableStateResponse{})
}

// NewGetTableDescriptorsCall asks for the schemas of tables.
func NewGetTableDescriptorsCall(tables ...string) *Call {
	req := &pb.GetTableDescriptorsRequest{}
	for _, t := range tables {
		req.TableNames = append(req.TableNames, TableName(t))
	}
	return masterCall("GetTableDescriptors", req, &pb.GetTableDescriptorsResponse{})
}

// NewProcedureResultCall polls a master procedure.
func NewProcedureResultCall(procID uint64) *Call {
	return masterCall("getProcedureResult", &pb.GetProcedureResultRequest{ProcId: proto.Uint64(procID)}, &pb.GetProcedureResultResponse{})
}

// ProcedureError returns the failure a finished procedure carries, if any.
func ProcedureError(r *pb.GetProcedureResultResponse) error {
	x := r.GetException()
	if x == nil {
		return nil
	}
	g := x.GetGenericException()
	return &Exception{Class: g.GetClassName(), Message: g.GetMessage(), DoNotRetry: true}
}

// NewSplitRegionCall splits a region at a row; the answer carries a
// procedure id.
func NewSplitRegionCall(info *pb.RegionInfo, splitRow []byte, nonceGroup, nonce uint64) *Call {
	return masterCall("SplitRegion", &pb.SplitTableRegionRequest{
		RegionInfo: info, SplitRow: splitRow, NonceGroup: proto.Uint64(nonceGroup), Nonce: proto.Uint64(nonce),
	}, &pb.SplitTableRegionResponse{})
}

// NewMoveRegionCall moves a region (by encoded name) to a server, or to
// one the master picks when dest is nil.
func NewMoveRegionCall(encodedName []byte, dest *pb.ServerName) *Call {
	return masterCall("MoveRegion", &pb.MoveRegionRequest{Region: EncodedRegionSpecifier(encodedName), DestServerName: dest}, &pb.MoveRegionResponse{})
}

// NewFlushRegionCall flushes a region's memstore (AdminService).
func NewFlushRegionCall(region []byte) *Call {
	return &Call{Service: AdminService, Method: "FlushRegion",
		Request: &pb.FlushRegionRequest{Region: RegionSpecifier(region)}, Response: &pb.FlushRegionResponse{}}
}

// NewCompactRegionCall queues a compaction of a region (AdminService), of
// one family when family is not empty.
func NewCompactRegionCall(region []byte, family string, major bool) *Call {
	req := &pb.CompactRegionRequest{Region: RegionSpecifier(region), Major: proto.Bool(major)}
	if family != "" {
		req.Family = []byte(family)
	}
	return &Call{Service: AdminService, Method: "CompactRegion", Request: req, Response: &pb.CompactRegionResponse{}}
}

// NewRegionInfoCall asks a region server about a region, with its
// compaction state (AdminService).
func NewRegionInfoCall(region []byte) *Call {
	return &Call{Service: AdminService, Method: "GetRegionInfo",
		Request: &pb.GetRegionInfoRequest{Region: RegionSpecifier(region), CompactionState: proto.Bool(true)}, Response: &pb.GetRegionInfoResponse{}}
}

// NewStoreFilesCall lists the store files of a region's family
// (AdminService GetStoreFile).
func NewStoreFilesCall(region []byte, family string) *Call {
	return &Call{Service: AdminService, Method: "GetStoreFile",
		Request: &pb.GetStoreFileRequest{Region: RegionSpecifier(region), Family: [][]byte{[]byte(family)}}, Response: &pb.GetStoreFileResponse{}}
}

// NewUnassignRegionCall closes a region (by full name) wherever it is open.
func NewUnassignRegionCall(region []byte) *Call {
	return masterCall("UnassignRegion", &pb.UnassignRegionRequest{Region: RegionSpecifier(region)}, &pb.UnassignRegionResponse{})
}

// NewAssignRegionCall opens a closed region (by full name) on a server the
// master picks.
func NewAssignRegionCall(region []byte) *Call {
	return masterCall("AssignRegion", &pb.AssignRegionRequest{Region: RegionSpecifier(region)}, &pb.AssignRegionResponse{})
}
