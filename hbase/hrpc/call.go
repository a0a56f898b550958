package hrpc

import (
	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// Services a connection can speak; one connection speaks one.
const (
	ClientService = "ClientService"
	AdminService  = "AdminService"
	MasterService = "MasterService"
)

// Priorities of the request header: HBase serves high-priority calls (meta
// lookups) from their own handler pool, so they are not stuck behind a
// queue of data calls.
const (
	NormalPriority uint32 = 0
	HighPriority   uint32 = 200
)

// Call is one request: where it is addressed within a server (service and
// method), the request message with its cell block, and the message to
// decode the answer into.
type Call struct {
	Service  string
	Method   string
	Priority uint32
	Request  proto.Message
	// Cells is the request's cell block (KeyValueCodec), nil if none.
	Cells []byte
	// Response receives the answer. After the call, it is valid together
	// with the cell block the transport returned.
	Response proto.Message
}

// RegionSpecifier names a region by its full name.
func RegionSpecifier(name []byte) *pb.RegionSpecifier {
	return &pb.RegionSpecifier{Type: pb.RegionSpecifier_REGION_NAME.Enum(), Value: name}
}

// EncodedRegionSpecifier names a region by its encoded name (the md5 hex
// at the end of a region name).
func EncodedRegionSpecifier(encoded []byte) *pb.RegionSpecifier {
	return &pb.RegionSpecifier{Type: pb.RegionSpecifier_ENCODED_REGION_NAME.Enum(), Value: encoded}
}

// ResultCells appends the cells of a result to dst: the inline ones, then
// associated_cell_count cells from the front of block. It returns the
// rest of the block, where the next result's cells start.
func ResultCells(dst []Cell, r *pb.Result, block []byte) ([]Cell, []byte, error) {
	if n := len(r.GetCell()) + int(r.GetAssociatedCellCount()); dst == nil && n > 0 && n <= len(block)/16+len(r.GetCell()) {
		dst = make([]Cell, 0, n)
	}
	for _, c := range r.GetCell() {
		dst = append(dst, Cell{
			Row: c.GetRow(), Family: c.GetFamily(), Qualifier: c.GetQualifier(),
			Timestamp: int64(c.GetTimestamp()), Type: CellType(c.GetCellType()), Value: c.GetValue(),
		})
	}
	return DecodeCells(dst, block, int(r.GetAssociatedCellCount()))
}
