package hrpc

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// Get reads one row.
type Get struct {
	Row []byte
	// Families restricts the answer; empty means all families.
	Families [][]byte
	Filter   Filter
	// MaxVersions is how many versions of each column to return (0: 1).
	MaxVersions uint32
}

// Proto builds the Get message.
func (g *Get) Proto() (*pb.Get, error) {
	m := &pb.Get{Row: g.Row}
	if len(g.Row) == 0 {
		return nil, fmt.Errorf("get: empty row key")
	}
	if g.MaxVersions > 1 {
		m.MaxVersions = proto.Uint32(g.MaxVersions)
	}
	for _, f := range g.Families {
		m.Column = append(m.Column, &pb.Column{Family: f})
	}
	if g.Filter != nil {
		f, err := g.Filter.FilterProto()
		if err != nil {
			return nil, fmt.Errorf("get filter: %w", err)
		}
		m.Filter = f
	}
	return m, nil
}

// NewGetCall addresses a Get to a region.
func NewGetCall(region []byte, g *pb.Get) *Call {
	return &Call{
		Service:  ClientService,
		Method:   "Get",
		Request:  &pb.GetRequest{Region: RegionSpecifier(region), Get: g},
		Response: &pb.GetResponse{},
	}
}
