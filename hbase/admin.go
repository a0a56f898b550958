package hbase

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// masterAddr returns the active master's address.
func (c *Client) masterAddr(ctx context.Context) (string, error) {
	c.mu.Lock()
	addr := c.master
	c.mu.Unlock()
	if addr != "" {
		return addr, nil
	}
	s, err := c.zk.Master(ctx)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.master = s.Addr()
	c.mu.Unlock()
	return s.Addr(), nil
}

// onMaster runs a call on the active master, retrying while it is busy,
// starting or failing over.
func (c *Client) onMaster(ctx context.Context, call *hrpc.Call) ([]byte, error) {
	var last error
	for attempt := 0; attempt < c.cfg.MaxAttempts; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, attempt-1, false); err != nil {
				return nil, errors.Join(err, last)
			}
		}
		addr, err := c.masterAddr(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			last = err
			continue
		}
		conn, err := c.conn(ctx, addr, hrpc.MasterService)
		if err == nil {
			var block []byte
			if block, err = c.call(ctx, conn, call); err == nil {
				return block, nil
			}
		}
		if ctx.Err() != nil {
			return nil, errors.Join(ctx.Err(), err)
		}
		last = err
		switch classify(err) {
		case hrpc.Fatal:
			return nil, fmt.Errorf("%s on master %s: %w", call.Method, addr, err)
		case hrpc.ServerDown:
			if conn != nil {
				c.dropConn(conn)
			}
			c.mu.Lock()
			c.master = ""
			c.mu.Unlock()
		}
	}
	return nil, &RetryError{Attempts: c.cfg.MaxAttempts, Err: last}
}

// waitProcedure polls a master procedure until it finishes.
func (c *Client) waitProcedure(ctx context.Context, procID uint64) error {
	for attempt := 0; ; attempt++ {
		call := hrpc.NewProcedureResultCall(procID)
		if _, err := c.onMaster(ctx, call); err != nil {
			return err
		}
		resp := call.Response.(*pb.GetProcedureResultResponse)
		switch resp.GetState() {
		case pb.GetProcedureResultResponse_FINISHED:
			return hrpc.ProcedureError(resp)
		case pb.GetProcedureResultResponse_NOT_FOUND:
			return fmt.Errorf("procedure %d not found on the master", procID)
		}
		if err := sleep(ctx, min(attempt, 4), false); err != nil {
			return fmt.Errorf("procedure %d still running: %w", procID, err)
		}
	}
}

func (c *Client) nonce() uint64 { return rand.Uint64() | 1 }

// CreateTable creates a table, pre-split at splitKeys, and waits until it is
// usable: its procedure finished and every region has a server in meta. A
// *Exception of class TableExistsException means it was there already.
func (c *Client) CreateTable(ctx context.Context, table string, families []hrpc.Family, splitKeys [][]byte) error {
	call, err := hrpc.NewCreateTableCall(table, families, splitKeys, c.nonceGroup, c.nonce())
	if err != nil {
		return err
	}
	if _, err := c.onMaster(ctx, call); err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	if err := c.waitProcedure(ctx, call.Response.(*pb.CreateTableResponse).GetProcId()); err != nil {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	c.cache.removeTable(table)
	return c.waitAssigned(ctx, table, len(splitKeys)+1)
}

// waitAssigned waits until meta lists want regions of table, each with a
// server.
func (c *Client) waitAssigned(ctx context.Context, table string, want int) error {
	for attempt := 0; ; attempt++ {
		regions, err := c.Regions(ctx, table)
		if err != nil && !IsTableNotFound(err) {
			return err
		}
		ok := err == nil && len(regions) >= want
		for _, r := range regions {
			ok = ok && r.Addr != ""
		}
		if ok {
			return nil
		}
		if err := sleep(ctx, min(attempt, 4), false); err != nil {
			return fmt.Errorf("table %s: regions not all assigned: %w", table, err)
		}
	}
}

// TableExists reports whether a table exists.
func (c *Client) TableExists(ctx context.Context, table string) (bool, error) {
	_, err := c.TableState(ctx, table)
	if IsTableNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// TableState returns the state of a table (ENABLED, ENABLING, ...); a
// TableNotFoundException when there is no such table.
func (c *Client) TableState(ctx context.Context, table string) (pb.TableState_State, error) {
	call := hrpc.NewGetTableStateCall(table)
	if _, err := c.onMaster(ctx, call); err != nil {
		return 0, fmt.Errorf("table %s: %w", table, err)
	}
	return call.Response.(*pb.GetTableStateResponse).GetTableState().GetState(), nil
}

// TableStateInMeta reads a table's state where HBase 2.x keeps it, in
// hbase:meta (row: the table's name, column table:state), so it needs the
// server holding meta and not the master. found is false when meta holds
// no state for the table: it does not exist, or its creation has not got
// that far.
func (c *Client) TableStateInMeta(ctx context.Context, table string) (st pb.TableState_State, found bool, err error) {
	cells, err := c.Get(ctx, "hbase:meta", &hrpc.Get{Row: []byte(table), Families: [][]byte{metaTableFamily}})
	if err != nil {
		return 0, false, fmt.Errorf("table %s: state in hbase:meta: %w", table, err)
	}
	for _, cell := range cells {
		if string(cell.Qualifier) != "state" {
			continue
		}
		var ts pb.TableState
		if err := proto.Unmarshal(cell.Value, &ts); err != nil || ts.State == nil {
			return 0, false, fmt.Errorf("table %s: state in hbase:meta %q: not a TableState (%v)", table, cell.Value, err)
		}
		return ts.GetState(), true, nil
	}
	return 0, false, nil
}

// metaTableFamily is hbase:meta's family of table states.
var metaTableFamily = []byte("table")

// WaitEnabled waits until a table being created or enabled is ENABLED and
// every one of its regions has a server.
func (c *Client) WaitEnabled(ctx context.Context, table string) error {
	for attempt := 0; ; attempt++ {
		st, err := c.TableState(ctx, table)
		if err != nil {
			return err
		}
		if st == pb.TableState_ENABLED {
			return c.waitAssigned(ctx, table, 1)
		}
		if st != pb.TableState_ENABLING {
			return fmt.Errorf("table %s is %v", table, st)
		}
		if err := sleep(ctx, min(attempt, 4), false); err != nil {
			return fmt.Errorf("table %s still %v: %w", table, st, err)
		}
	}
}

// DisableTable disables a table and waits until it is disabled.
func (c *Client) DisableTable(ctx context.Context, table string) error {
	call := hrpc.NewDisableTableCall(table, c.nonceGroup, c.nonce())
	if _, err := c.onMaster(ctx, call); err != nil {
		return fmt.Errorf("disable table %s: %w", table, err)
	}
	if err := c.waitProcedure(ctx, call.Response.(*pb.DisableTableResponse).GetProcId()); err != nil {
		return fmt.Errorf("disable table %s: %w", table, err)
	}
	return nil
}

// DeleteTable deletes a disabled table and waits until it is gone.
func (c *Client) DeleteTable(ctx context.Context, table string) error {
	call := hrpc.NewDeleteTableCall(table, c.nonceGroup, c.nonce())
	if _, err := c.onMaster(ctx, call); err != nil {
		return fmt.Errorf("delete table %s: %w", table, err)
	}
	c.cache.removeTable(table)
	if err := c.waitProcedure(ctx, call.Response.(*pb.DeleteTableResponse).GetProcId()); err != nil {
		return fmt.Errorf("delete table %s: %w", table, err)
	}
	return nil
}

// onRegionServer runs an AdminService call for one region on its server.
func (c *Client) onRegionServer(ctx context.Context, r *RegionInfo, call *hrpc.Call) error {
	conn, err := c.conn(ctx, r.Addr, hrpc.AdminService)
	if err != nil {
		return err
	}
	if _, err := c.call(ctx, conn, call); err != nil {
		return fmt.Errorf("%s of %s: %w", call.Method, r, err)
	}
	return nil
}

// eachRegion calls f on every region of table, in turn, and stops at the
// first error, which it returns as f gave it.
func (c *Client) eachRegion(ctx context.Context, table string, f func(r *RegionInfo) error) error {
	regions, err := c.Regions(ctx, table)
	if err != nil {
		return err
	}
	for _, r := range regions {
		if err := f(r); err != nil {
			return err
		}
	}
	return nil
}

// compacting reports whether a compaction runs in region r.
func (c *Client) compacting(ctx context.Context, r *RegionInfo) (bool, error) {
	call := hrpc.NewRegionInfoCall(r.Name)
	if err := c.onRegionServer(ctx, r, call); err != nil {
		return false, err
	}
	return call.Response.(*pb.GetRegionInfoResponse).GetCompactionState() != pb.GetRegionInfoResponse_NONE, nil
}

// flushRegion flushes the memstore of region r of table to files.
func (c *Client) flushRegion(ctx context.Context, table string, r *RegionInfo) error {
	if err := c.onRegionServer(ctx, r, hrpc.NewFlushRegionCall(r.Name)); err != nil {
		return fmt.Errorf("flush %s: %w", table, err)
	}
	return nil
}

// FlushTable flushes the memstores of every region of a table to files.
func (c *Client) FlushTable(ctx context.Context, table string) error {
	return c.eachRegion(ctx, table, func(r *RegionInfo) error { return c.flushRegion(ctx, table, r) })
}

// MajorCompactTable major-compacts every region of a table and waits until
// no compaction runs on any of them.
func (c *Client) MajorCompactTable(ctx context.Context, table string) error {
	regions, err := c.Regions(ctx, table)
	if err != nil {
		return err
	}
	for _, r := range regions {
		if err := c.onRegionServer(ctx, r, hrpc.NewCompactRegionCall(r.Name, "", true)); err != nil {
			return fmt.Errorf("compact %s: %w", table, err)
		}
	}
	// The compaction is queued, so the state may read NONE before it
	// starts: accept NONE once it was seen running, or after a grace time.
	start := time.Now()
	for _, r := range regions {
		seen := false
		for attempt := 0; ; attempt++ {
			busy, err := c.compacting(ctx, r)
			if err != nil {
				return fmt.Errorf("compact %s: %w", table, err)
			}
			if busy {
				seen = true
			} else if seen || time.Since(start) > 2*time.Second {
				break
			}
			if err := sleep(ctx, min(attempt, 4), false); err != nil {
				return fmt.Errorf("compact %s: %w", table, err)
			}
		}
	}
	return nil
}

// FlushAndCompactFamily flushes each region of table in turn and asks it
// for a major compaction of family, without waiting for the compactions:
// each region server runs them from its compaction queue. Region by region,
// so that when ctx ends part way the regions done are done; the flush
// first, since a major compaction rewrites files only, and deletes still in
// a memstore would keep the cells they hide in the files.
func (c *Client) FlushAndCompactFamily(ctx context.Context, table, family string) error {
	return c.eachRegion(ctx, table, func(r *RegionInfo) error {
		if err := c.flushRegion(ctx, table, r); err != nil {
			return err
		}
		if err := c.onRegionServer(ctx, r, hrpc.NewCompactRegionCall(r.Name, family, true)); err != nil {
			return fmt.Errorf("compact family %s of %s: %w", family, table, err)
		}
		return nil
	})
}

// Compacting reports whether a compaction runs in any region of table.
func (c *Client) Compacting(ctx context.Context, table string) (bool, error) {
	regions, err := c.Regions(ctx, table)
	if err != nil {
		return false, err
	}
	for _, r := range regions {
		busy, err := c.compacting(ctx, r)
		if err != nil {
			return false, fmt.Errorf("compaction state of %s: %w", table, err)
		}
		if busy {
			return true, nil
		}
	}
	return false, nil
}

// StoreFiles returns the names of the store files of family in every
// region of table, as the region servers list them.
func (c *Client) StoreFiles(ctx context.Context, table, family string) ([]string, error) {
	var out []string
	err := c.eachRegion(ctx, table, func(r *RegionInfo) error {
		call := hrpc.NewStoreFilesCall(r.Name, family)
		if err := c.onRegionServer(ctx, r, call); err != nil {
			return fmt.Errorf("store files of family %s of %s: %w", family, table, err)
		}
		out = append(out, call.Response.(*pb.GetStoreFileResponse).GetStoreFile()...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RegionAt returns the region of table holding row, read from meta now.
func (c *Client) RegionAt(ctx context.Context, table string, row []byte) (*RegionInfo, error) {
	regions, err := c.Regions(ctx, table)
	if err != nil {
		return nil, err
	}
	for _, r := range regions {
		if r.Contains(row) {
			return r, nil
		}
	}
	return nil, fmt.Errorf("no region of %s holds row %s", table, hrpc.QuoteKey(row))
}

// SplitRegion splits the region holding splitKey at splitKey and waits
// until the split finished.
func (c *Client) SplitRegion(ctx context.Context, table string, splitKey []byte) error {
	r, err := c.RegionAt(ctx, table, splitKey)
	if err != nil {
		return err
	}
	call := hrpc.NewSplitRegionCall(r.info, splitKey, c.nonceGroup, c.nonce())
	if _, err := c.onMaster(ctx, call); err != nil {
		return fmt.Errorf("split %s at %q: %w", table, splitKey, err)
	}
	if err := c.waitProcedure(ctx, call.Response.(*pb.SplitTableRegionResponse).GetProcId()); err != nil {
		return fmt.Errorf("split %s at %q: %w", table, splitKey, err)
	}
	return nil
}

// MoveRegion moves the region holding row to the server at dest
// ("host:port"; "" lets the master choose). HBase skips a move to the server
// that already holds the region; use ReopenRegion for that.
func (c *Client) MoveRegion(ctx context.Context, table string, row []byte, dest string) error {
	r, err := c.RegionAt(ctx, table, row)
	if err != nil {
		return err
	}
	var sn *pb.ServerName
	if dest != "" {
		host, port, err := net.SplitHostPort(dest)
		if err != nil {
			return fmt.Errorf("move: destination %q: %w", dest, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return fmt.Errorf("move: destination %q: %w", dest, err)
		}
		code, err := c.liveStartCode(ctx, dest)
		if err != nil {
			return fmt.Errorf("move %s: %w", r, err)
		}
		sn = &pb.ServerName{HostName: proto.String(host), Port: proto.Uint32(uint32(p)), StartCode: proto.Uint64(code)}
	}
	if _, err := c.onMaster(ctx, hrpc.NewMoveRegionCall(r.EncodedName(), sn)); err != nil {
		return fmt.Errorf("move %s: %w", r, err)
	}
	return nil
}

// LiveRegionServers returns the host:port of every live region server, as
// ZooKeeper lists them.
func (c *Client) LiveRegionServers(ctx context.Context) ([]string, error) {
	servers, err := c.zk.RegionServers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Addr()
	}
	return out, nil
}

// liveStartCode returns the start code of the live region server at addr.
// A move must name it: a server restarted on the same host and port is
// another server to the master, and a destination without a start code may
// resolve to the dead one still being processed, where the master drops the
// move.
func (c *Client) liveStartCode(ctx context.Context, addr string) (uint64, error) {
	servers, err := c.zk.RegionServers(ctx)
	if err != nil {
		return 0, err
	}
	for _, s := range servers {
		if s.Addr() == addr {
			return s.StartCode, nil
		}
	}
	return 0, fmt.Errorf("no live region server at %s", addr)
}

// ReopenRegion closes the region holding row and opens it again, as a move
// does, and waits until it is open. Clients holding its location get
// NotServingRegionException meanwhile.
func (c *Client) ReopenRegion(ctx context.Context, table string, row []byte) error {
	r, err := c.RegionAt(ctx, table, row)
	if err != nil {
		return err
	}
	if _, err := c.onMaster(ctx, hrpc.NewUnassignRegionCall(r.Name)); err != nil {
		return fmt.Errorf("unassign %s: %w", r, err)
	}
	if _, err := c.onMaster(ctx, hrpc.NewAssignRegionCall(r.Name)); err != nil {
		return fmt.Errorf("assign %s: %w", r, err)
	}
	regions, err := c.Regions(ctx, table)
	if err != nil {
		return err
	}
	return c.waitAssigned(ctx, table, len(regions))
}

// ModifyFamily sets f's attributes on an existing family of a table, as
// hrpc.MergeFamily merges them into the family's descriptor, and waits
// until the procedure finished: every region reopened with it. A change
// refused because another one replaced the descriptor meanwhile (say an
// AddFamily by an adapter starting at the same time) is retried as
// AddFamily's is, each attempt merging into the family as it is then.
func (c *Client) ModifyFamily(ctx context.Context, table string, f hrpc.Family) error {
	return c.retrySchemaChange(ctx, func() error { return c.modifyFamily(ctx, table, f) })
}

func (c *Client) modifyFamily(ctx context.Context, table string, f hrpc.Family) error {
	cur, err := c.familySchema(ctx, table, f.Name)
	if err != nil {
		return fmt.Errorf("modify family %s of %s: %w", f.Name, table, err)
	}
	schema, err := hrpc.MergeFamily(cur, f)
	if err != nil {
		return err
	}
	call := hrpc.NewModifyColumnSchemaCall(table, schema, c.nonceGroup, c.nonce())
	if _, err := c.onMaster(ctx, call); err != nil {
		return fmt.Errorf("modify family %s of %s: %w", f.Name, table, err)
	}
	resp := call.Response.(*pb.ModifyColumnResponse)
	if resp.ProcId == nil {
		return nil // the master found nothing to change
	}
	if err := c.waitProcedure(ctx, resp.GetProcId()); err != nil {
		return fmt.Errorf("modify family %s of %s: %w", f.Name, table, err)
	}
	return nil
}

// AddFamily adds family f to an existing table and waits until the
// procedure finished: every region reopened with it. A *Exception of class
// InvalidFamilyOperationException means the table has the family already.
//
// The master checks the descriptor before it queues the change and refuses
// the change, with ConcurrentTableModificationException, when another one
// (say a racing AddFamily of the same family) replaced the descriptor
// meanwhile. That is retried, with a new nonce: the next check then sees
// what the other change did.
func (c *Client) AddFamily(ctx context.Context, table string, f hrpc.Family) error {
	return c.retrySchemaChange(ctx, func() error { return c.addFamily(ctx, table, f) })
}

// retrySchemaChange runs change, a schema change of one table that asks
// for a new nonce each run, again while the master refuses it with
// ConcurrentTableModificationException, with the client's backoff and
// attempt limit.
func (c *Client) retrySchemaChange(ctx context.Context, change func() error) error {
	var err error
	for attempt := 0; attempt < c.cfg.MaxAttempts; attempt++ {
		if attempt > 0 {
			if serr := sleep(ctx, attempt-1, false); serr != nil {
				return errors.Join(serr, err)
			}
		}
		err = change()
		var x *hrpc.Exception
		if !errors.As(err, &x) || x.Class != hrpc.ConcurrentTableModification {
			return err
		}
	}
	return &RetryError{Attempts: c.cfg.MaxAttempts, Err: err}
}

func (c *Client) addFamily(ctx context.Context, table string, f hrpc.Family) error {
	call, err := hrpc.NewAddColumnCall(table, f, c.nonceGroup, c.nonce())
	if err != nil {
		return err
	}
	if _, err := c.onMaster(ctx, call); err != nil {
		return fmt.Errorf("add family %s to %s: %w", f.Name, table, err)
	}
	if err := c.waitProcedure(ctx, call.Response.(*pb.AddColumnResponse).GetProcId()); err != nil {
		return fmt.Errorf("add family %s to %s: %w", f.Name, table, err)
	}
	return nil
}

// familySchema reads one family's descriptor as HBase has it.
func (c *Client) familySchema(ctx context.Context, table, family string) (*pb.ColumnFamilySchema, error) {
	call := hrpc.NewGetTableDescriptorsCall(table)
	if _, err := c.onMaster(ctx, call); err != nil {
		return nil, fmt.Errorf("describe %s: %w", table, err)
	}
	schemas := call.Response.(*pb.GetTableDescriptorsResponse).GetTableSchema()
	if len(schemas) == 0 {
		return nil, tableNotFound(table)
	}
	for _, cf := range schemas[0].GetColumnFamilies() {
		if string(cf.GetName()) == family {
			return cf, nil
		}
	}
	// What the master itself answers a ModifyColumn of an absent family.
	return nil, &hrpc.Exception{Class: hrpc.InvalidFamilyOperation,
		Message: fmt.Sprintf("family %q does not exist in table %s", family, table), DoNotRetry: true}
}

// TableFamilies reads the column families of a table from its descriptor,
// with the attributes CreateTable sets.
func (c *Client) TableFamilies(ctx context.Context, table string) ([]hrpc.Family, error) {
	call := hrpc.NewGetTableDescriptorsCall(table)
	if _, err := c.onMaster(ctx, call); err != nil {
		return nil, fmt.Errorf("describe %s: %w", table, err)
	}
	schemas := call.Response.(*pb.GetTableDescriptorsResponse).GetTableSchema()
	if len(schemas) == 0 {
		return nil, tableNotFound(table)
	}
	var out []hrpc.Family
	for _, cf := range schemas[0].GetColumnFamilies() {
		f := hrpc.Family{Name: string(cf.GetName())}
		for _, a := range cf.GetAttributes() {
			v := string(a.GetSecond())
			switch string(a.GetFirst()) {
			case "VERSIONS":
				f.MaxVersions, _ = strconv.Atoi(v)
			case "TTL":
				// HBase stores "forever" as the largest int.
				if s, err := strconv.ParseInt(v, 10, 64); err == nil && s < 1<<31-1 {
					f.TTL = time.Duration(s) * time.Second
				}
			case "BLOOMFILTER":
				f.BloomFilter = v
			case "DATA_BLOCK_ENCODING":
				f.DataBlockEncoding = v
			case "COMPRESSION":
				f.Compression = v
			case "IN_MEMORY":
				f.InMemory = strings.EqualFold(v, "true")
			case "NEW_VERSION_BEHAVIOR":
				f.NewVersionBehavior = strings.EqualFold(v, "true")
			case "IN_MEMORY_COMPACTION":
				f.InMemoryCompaction = v
			case hrpc.MSLABKey:
				f.NoMSLAB = strings.EqualFold(v, "false")
			case hrpc.PipelineSegmentsKey:
				f.PipelineSegments, _ = strconv.Atoi(v)
			}
		}
		out = append(out, f)
	}
	return out, nil
}
