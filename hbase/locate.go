package hbase

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// metaPrefetch is how many regions one meta lookup reads: the region
// asked for and the ones before it, which batches are likely to need next.
const metaPrefetch = 10

// notAssigned is the answer for a region without a server in meta: in
// transition, so back off and look again.
func notAssigned(r *RegionInfo) error {
	return &hrpc.Exception{Class: hrpc.RegionOpening,
		Message: fmt.Sprintf("region %q has no server in hbase:meta (in transition)", r.Name)}
}

func tableNotFound(table string) error {
	return &hrpc.Exception{Class: hrpc.TableNotFound, Message: table, DoNotRetry: true}
}

// metaAddr returns the address of the server holding hbase:meta.
func (c *Client) metaAddr(ctx context.Context) (string, error) {
	c.mu.Lock()
	addr := c.meta
	c.mu.Unlock()
	if addr != "" {
		return addr, nil
	}
	s, err := c.zk.Meta(ctx)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.meta = s.Addr()
	c.mu.Unlock()
	return s.Addr(), nil
}

// MetaLocation returns the address of the server holding hbase:meta, as
// ZooKeeper says now (not as cached).
func (c *Client) MetaLocation(ctx context.Context) (string, error) {
	s, err := c.zk.Meta(ctx)
	if err != nil {
		return "", err
	}
	return s.Addr(), nil
}

// forgetMeta drops the cached location of hbase:meta after its server
// failed a lookup: the next one reads it from ZooKeeper, where the master
// writes where it reassigned meta.
func (c *Client) forgetMeta() {
	c.mu.Lock()
	had := c.meta != ""
	c.meta = ""
	c.mu.Unlock()
	if had {
		c.relocations[MetaMoved].Add(1)
	}
}

// RegionOf returns the region of table holding row, from the location
// cache, or from hbase:meta on a miss. The answer may be stale by the time
// it is used: it is for grouping work by region, never for correctness
// (calls find their region themselves and follow it when it moves).
func (c *Client) RegionOf(ctx context.Context, table string, row []byte) (*RegionInfo, error) {
	return c.locate(ctx, table, row)
}

// locate returns the region of table holding row, from the cache or from
// hbase:meta.
func (c *Client) locate(ctx context.Context, table string, row []byte) (*RegionInfo, error) {
	if isMeta(table) {
		addr, err := c.metaAddr(ctx)
		if err != nil {
			return nil, err
		}
		return &RegionInfo{Table: table, Name: metaRegionName, Addr: addr}, nil
	}
	if r := c.cache.lookup(table, row); r != nil {
		return r, nil
	}
	return c.lookupMeta(ctx, table, row)
}

// lookupMeta reads the region of row, and up to metaPrefetch-1 regions
// before it, with one reversed scan of hbase:meta, as Java's client does.
func (c *Client) lookupMeta(ctx context.Context, table string, row []byte) (*RegionInfo, error) {
	addr, err := c.metaAddr(ctx)
	if err != nil {
		return nil, err
	}
	scan := &hrpc.Scan{
		Start:         metaKey(table, row),
		Stop:          []byte(table + ",,"),
		StopInclusive: true,
		Reversed:      true,
		Families:      [][]byte{metaFamily},
		PRead:         true,
	}
	sp, err := scan.Proto()
	if err != nil {
		return nil, err
	}
	call := hrpc.NewScanOpenCall(metaRegionName, sp, metaPrefetch, hrpc.HighPriority)
	// One round trip: open, read, close.
	call.Request.(*pb.ScanRequest).CloseScanner = proto.Bool(true)
	conn, err := c.conn(ctx, addr, hrpc.ClientService)
	if err != nil {
		if ctx.Err() == nil {
			c.forgetMeta()
		}
		return nil, fmt.Errorf("locate %s row %s: %w", table, hrpc.QuoteKey(row), err)
	}
	block, err := c.call(ctx, conn, call)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("locate %s row %s in hbase:meta: %w", table, hrpc.QuoteKey(row), err)
		}
		switch classify(err) {
		case hrpc.ServerDown:
			c.dropConn(conn)
			c.forgetMeta()
		case hrpc.Relocate:
			// Moved, or no answer in time (see classify): ask ZooKeeper.
			c.forgetMeta()
		}
		return nil, fmt.Errorf("locate %s row %s in hbase:meta: %w", table, hrpc.QuoteKey(row), err)
	}
	results, _, err := hrpc.DecodeScanResults(nil, nil, call.Response.(*pb.ScanResponse), block)
	if err != nil {
		return nil, fmt.Errorf("locate %s row %s: %w", table, hrpc.QuoteKey(row), err)
	}
	var found *RegionInfo
	for _, res := range results {
		r, err := ParseMetaRow(res.Cells)
		if err != nil {
			return nil, fmt.Errorf("locate %s row %s: %w", table, hrpc.QuoteKey(row), err)
		}
		if r.Table != table {
			break
		}
		if r.Split || r.Offline {
			continue // a split parent: its daughters are elsewhere in meta
		}
		if found == nil && r.Contains(row) {
			if r.Addr == "" {
				return nil, notAssigned(r)
			}
			found = r
		}
		if r.Addr != "" {
			c.cache.add(r)
		}
	}
	if found != nil {
		return found, nil
	}
	if len(results) == 0 || len(results[0].Cells) == 0 || !bytes.HasPrefix(results[0].Cells[0].Row, []byte(table+",")) {
		return nil, tableNotFound(table)
	}
	// The table exists but no region holds row yet: a split in progress.
	return nil, &hrpc.Exception{Class: hrpc.RegionOpening,
		Message: fmt.Sprintf("no region of %s holds row %s yet", table, hrpc.QuoteKey(row))}
}

// Regions lists the regions of a table from hbase:meta (split parents
// left out), in key order.
func (c *Client) Regions(ctx context.Context, table string) ([]*RegionInfo, error) {
	// hbase:meta compares its keys as region names, field by field, so
	// the bounds must be region names too (as Java's MetaTableAccessor
	// builds them): "<table>,," sorts first, "<table> ,," after the last.
	start := []byte(table + ",,")
	stop := []byte(table + " ,,")
	sc := c.Scan(ctx, "hbase:meta", &hrpc.Scan{Start: start, Stop: stop, Families: [][]byte{metaFamily}}, ScanOptions{})
	defer sc.Close()
	var out []*RegionInfo
	for sc.Next() {
		r, err := ParseMetaRow(sc.At().Cells)
		if err != nil {
			return nil, err
		}
		if r.Table != table || r.Split || r.Offline {
			continue
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("list regions of %s: %w", table, err)
	}
	if len(out) == 0 {
		return nil, tableNotFound(table)
	}
	return out, nil
}

// IsTableNotFound reports whether err says the table does not exist.
func IsTableNotFound(err error) bool {
	var x *hrpc.Exception
	return errors.As(err, &x) && x.Class == hrpc.TableNotFound
}
