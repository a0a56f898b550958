package hrpc

import (
	"fmt"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// Get reads one row.
type Get struct {
	Row []byte
	// Families restricts the answer; empty means all families.
	Families [][]byte
	Filter   Filter
}

// Proto builds the Get message.
func (g *Get) Proto() (*pb.Get, error) {
	m := &pb.Get{Row: g.Row}
	if len(g.Row) == 0 {
		return nil, fmt.Errorf("get: empty row key")
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
