package hbase

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// RegionInfo is a region as hbase:meta describes it.
type RegionInfo struct {
	Table string
	// Name is the full region name, the row key of its meta row:
	// <table>,<start>,<id>.<encoded>.
	Name       []byte
	Start, End []byte
	ID         uint64
	// Addr is host:port of the hosting server, empty while unassigned.
	Addr string
	// StartCode identifies the hosting server's incarnation.
	StartCode uint64
	Offline   bool
	Split     bool

	info *pb.RegionInfo
}

// Contains reports whether row falls in the region.
func (r *RegionInfo) Contains(row []byte) bool {
	return bytes.Compare(r.Start, row) <= 0 && (len(r.End) == 0 || bytes.Compare(row, r.End) < 0)
}

// EncodedName is the md5 hex at the end of the region name, which
// MoveRegion wants.
func (r *RegionInfo) EncodedName() []byte {
	n := r.Name
	if len(n) > 2 && n[len(n)-1] == '.' {
		if i := bytes.LastIndexByte(n[:len(n)-1], '.'); i >= 0 {
			return n[i+1 : len(n)-1]
		}
	}
	return n
}

func (r *RegionInfo) String() string {
	return fmt.Sprintf("region %q [%q, %q) on %q", r.Name, r.Start, r.End, r.Addr)
}

// metaRegionName is hbase:meta's one region.
var metaRegionName = []byte("hbase:meta,,1")

var (
	metaFamily     = []byte("info")
	metaRegionInfo = []byte("regioninfo")
	metaServer     = []byte("server")
	metaStartCode  = []byte("serverstartcode")
)

// tableString turns a TableName into "name" (default namespace) or "ns:name".
func tableString(t *pb.TableName) string {
	ns := string(t.GetNamespace())
	if ns == "" || ns == "default" {
		return string(t.GetQualifier())
	}
	return ns + ":" + string(t.GetQualifier())
}

// ParseMetaRow builds a RegionInfo from the cells of one hbase:meta row.
func ParseMetaRow(cells []hrpc.Cell) (*RegionInfo, error) {
	var r *RegionInfo
	var addr string
	var startCode uint64
	for _, c := range cells {
		if !bytes.Equal(c.Family, metaFamily) {
			continue
		}
		switch {
		case bytes.Equal(c.Qualifier, metaRegionInfo):
			v, ok := bytes.CutPrefix(c.Value, []byte("PBUF"))
			if !ok {
				return nil, fmt.Errorf("meta row %s: regioninfo without PBUF magic", hrpc.QuoteKey(c.Row))
			}
			info := &pb.RegionInfo{}
			if err := proto.Unmarshal(v, info); err != nil {
				return nil, fmt.Errorf("meta row %s: regioninfo: %w", hrpc.QuoteKey(c.Row), err)
			}
			r = &RegionInfo{
				Table:   tableString(info.GetTableName()),
				Name:    bytes.Clone(c.Row),
				Start:   bytes.Clone(info.GetStartKey()),
				End:     bytes.Clone(info.GetEndKey()),
				ID:      info.GetRegionId(),
				Offline: info.GetOffline(),
				Split:   info.GetSplit(),
				info:    info,
			}
		case bytes.Equal(c.Qualifier, metaServer):
			addr = string(c.Value)
		case bytes.Equal(c.Qualifier, metaStartCode) && len(c.Value) == 8:
			startCode = binary.BigEndian.Uint64(c.Value)
		}
	}
	if r == nil {
		return nil, fmt.Errorf("meta row without info:regioninfo")
	}
	if len(r.End) > 0 && bytes.Compare(r.Start, r.End) >= 0 {
		// No region HBase writes; cached, it would answer for rows it
		// cannot hold.
		return nil, fmt.Errorf("meta row %s: region ends at %s, not after its start %s",
			hrpc.QuoteKey(r.Name), hrpc.QuoteKey(r.End), hrpc.QuoteKey(r.Start))
	}
	r.Addr = addr
	r.StartCode = startCode
	return r, nil
}

// metaKey is the meta row key that sorts right after every region of table
// starting at or before row: "<table>,<row>,99999999999999".
func metaKey(table string, row []byte) []byte {
	k := make([]byte, 0, len(table)+len(row)+16)
	k = append(k, table...)
	k = append(k, ',')
	k = append(k, row...)
	return append(k, ",99999999999999"...)
}

// regionCache maps tables to their known regions, sorted by start key.
type regionCache struct {
	mu     sync.RWMutex
	tables map[string][]*RegionInfo
}

func (c *regionCache) lookup(table string, row []byte) *RegionInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	rs := c.tables[table]
	// The last region starting at or before row.
	i := sort.Search(len(rs), func(i int) bool { return bytes.Compare(rs[i].Start, row) > 0 }) - 1
	if i >= 0 && rs[i].Contains(row) {
		return rs[i]
	}
	return nil
}

// add caches r, dropping every cached region of its table it overlaps.
func (c *regionCache) add(r *RegionInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tables == nil {
		c.tables = make(map[string][]*RegionInfo)
	}
	rs := c.tables[r.Table]
	out := rs[:0:0]
	for _, o := range rs {
		overlap := (len(o.End) == 0 || bytes.Compare(r.Start, o.End) < 0) &&
			(len(r.End) == 0 || bytes.Compare(o.Start, r.End) < 0)
		if !overlap {
			out = append(out, o)
		}
	}
	i := sort.Search(len(out), func(i int) bool { return bytes.Compare(out[i].Start, r.Start) > 0 })
	out = append(out, nil)
	copy(out[i+1:], out[i:])
	out[i] = r
	c.tables[r.Table] = out
}

// remove forgets r if it is still cached.
func (c *regionCache) remove(r *RegionInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.tables[r.Table]
	for i, o := range rs {
		// Another copy of r (another call located it before the cache
		// was refreshed) is the same location.
		if o == r || (o.Addr == r.Addr && bytes.Equal(o.Name, r.Name)) {
			c.tables[r.Table] = append(rs[:i:i], rs[i+1:]...)
			return
		}
	}
}

// removeServer forgets every region on a server.
func (c *regionCache) removeServer(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, rs := range c.tables {
		out := rs[:0:0]
		for _, o := range rs {
			if o.Addr != addr {
				out = append(out, o)
			}
		}
		c.tables[t] = out
	}
}

// removeTable forgets a table.
func (c *regionCache) removeTable(table string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.tables, table)
}

// isMeta reports whether a table name is hbase:meta.
func isMeta(table string) bool { return strings.EqualFold(table, "hbase:meta") }
