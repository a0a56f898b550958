package hbase

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// Limits of one Multi call: HBase warns above 5000 rows, and big answers
// delay every other call on the connection.
const (
	maxMultiActions = 4000
	maxMultiBytes   = 4 << 20
)

// BatchError reports the actions of a batch that failed, by position.
// The others succeeded.
type BatchError struct {
	// Errs has one entry per action of the batch, nil where it succeeded.
	Errs   []error
	Failed int
}

func (e *BatchError) Error() string {
	for i, err := range e.Errs {
		if err != nil {
			return fmt.Sprintf("%d of %d actions failed; action %d: %v", e.Failed, len(e.Errs), i, err)
		}
	}
	return fmt.Sprintf("%d of %d actions failed", e.Failed, len(e.Errs))
}

// Unwrap returns the distinct errors, so errors.Is and errors.As see them.
func (e *BatchError) Unwrap() []error {
	var out []error
	seen := map[string]bool{}
	for _, err := range e.Errs {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			out = append(out, err)
			if len(out) == 8 {
				break
			}
		}
	}
	return out
}

// MutateBatch applies mutations of any rows of a table: one Multi per
// region server (several when large), servers in parallel, retrying only
// the actions that failed. A *BatchError names the ones that failed for
// good.
func (c *Client) MutateBatch(ctx context.Context, table string, muts []*hrpc.Mutation) error {
	for _, m := range muts {
		if err := m.Check(); err != nil {
			return err
		}
	}
	rows := func(i int) []byte { return muts[i].Row }
	add := func(b *hrpc.Multi, region []byte, i int) int {
		b.AddMutation(region, uint32(i), muts[i])
		return muts[i].CellsSize()
	}
	return c.batch(ctx, table, len(muts), rows, add, nil)
}

// GetBatch reads many rows of a table with Multi calls, as MutateBatch
// sends mutations. The answer has one entry per get, nil for a missing row.
func (c *Client) GetBatch(ctx context.Context, table string, gets []*hrpc.Get) ([][]hrpc.Cell, error) {
	pgs := make([]*pb.Get, len(gets))
	for i, g := range gets {
		var err error
		if pgs[i], err = g.Proto(); err != nil {
			return nil, err
		}
	}
	out := make([][]hrpc.Cell, len(gets))
	rows := func(i int) []byte { return gets[i].Row }
	add := func(b *hrpc.Multi, region []byte, i int) int {
		b.AddGet(region, uint32(i), pgs[i])
		return 64 + len(gets[i].Row)
	}
	onResult := func(i int, cells []hrpc.Cell) { out[i] = cells }
	if err := c.batch(ctx, table, len(gets), rows, add, onResult); err != nil {
		return nil, err
	}
	return out, nil
}

// multiChunk is one Multi call: the regions it covers, in the order of its
// region actions, with the batch positions of each region's actions.
type multiChunk struct {
	addr    string
	regions []*RegionInfo
	actions [][]int
	multi   hrpc.Multi
	size    int
}

// batch runs n actions with Multi calls until each succeeded or failed for
// good.
func (c *Client) batch(ctx context.Context, table string, n int, row func(int) []byte,
	add func(b *hrpc.Multi, region []byte, i int) int, onResult func(i int, cells []hrpc.Cell)) error {
	errs := make([]error, n)
	pending := make([]int, n)
	for i := range pending {
		pending[i] = i
	}
	var last error
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt >= c.cfg.MaxAttempts || (attempt > 0 && sleep(ctx, attempt-1, isCallQueueTooBig(last)) != nil) {
			cause := last
			if ctx.Err() != nil {
				cause = errors.Join(ctx.Err(), last)
			}
			for _, i := range pending {
				if errs[i] == nil {
					errs[i] = &RetryError{Attempts: attempt, Err: cause}
				}
			}
			break
		}
		// Group by server and region, in key order within a region.
		byRegion := map[*RegionInfo][]int{}
		var retry []int
		for _, i := range pending {
			r, err := c.locate(ctx, table, row(i))
			if err != nil {
				if ctx.Err() != nil || classify(err) == hrpc.Fatal {
					errs[i] = err
				} else {
					retry = append(retry, i)
					last = err
				}
				continue
			}
			byRegion[r] = append(byRegion[r], i)
		}
		chunks := c.chunks(byRegion, add)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, ch := range chunks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				again, err := c.runChunk(ctx, ch, errs, onResult)
				mu.Lock()
				retry = append(retry, again...)
				if err != nil {
					last = err
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
		for _, i := range retry {
			errs[i] = nil
		}
		pending = retry
	}
	be := &BatchError{Errs: errs}
	for _, err := range errs {
		if err != nil {
			be.Failed++
		}
	}
	if be.Failed > 0 {
		return be
	}
	return nil
}

// chunks packs the grouped actions into Multi calls, per server.
func (c *Client) chunks(byRegion map[*RegionInfo][]int, add func(b *hrpc.Multi, region []byte, i int) int) []*multiChunk {
	regions := make([]*RegionInfo, 0, len(byRegion))
	for r := range byRegion {
		regions = append(regions, r)
	}
	sort.Slice(regions, func(a, b int) bool {
		if regions[a].Addr != regions[b].Addr {
			return regions[a].Addr < regions[b].Addr
		}
		return string(regions[a].Start) < string(regions[b].Start)
	})
	var out []*multiChunk
	var cur *multiChunk
	count := 0
	for _, r := range regions {
		for _, i := range byRegion[r] {
			if cur == nil || cur.addr != r.Addr || count >= maxMultiActions || cur.size >= maxMultiBytes {
				cur = &multiChunk{addr: r.Addr}
				out = append(out, cur)
				count = 0
			}
			if k := len(cur.regions); k == 0 || cur.regions[k-1] != r {
				cur.regions = append(cur.regions, r)
				cur.actions = append(cur.actions, nil)
			}
			k := len(cur.regions) - 1
			cur.actions[k] = append(cur.actions[k], i)
			cur.size += add(&cur.multi, r.Name, i)
			count++
		}
	}
	return out
}

// runChunk sends one Multi and returns the actions to retry. It records
// final errors in errs.
func (c *Client) runChunk(ctx context.Context, ch *multiChunk, errs []error, onResult func(int, []hrpc.Cell)) ([]int, error) {
	all := func() []int {
		var out []int
		for _, a := range ch.actions {
			out = append(out, a...)
		}
		return out
	}
	failAll := func(err error) {
		for _, i := range all() {
			errs[i] = err
		}
	}
	conn, err := c.conn(ctx, ch.addr, hrpc.ClientService)
	if err != nil {
		if ctx.Err() != nil {
			failAll(err)
			return nil, err
		}
		c.cache.removeServer(ch.addr)
		return all(), err
	}
	call := ch.multi.Call(0)
	block, err := c.call(ctx, conn, call)
	if err != nil {
		kind := classify(err)
		if ctx.Err() == nil && kind != hrpc.Fatal {
			c.noteRetry(kind, err)
		}
		switch {
		case ctx.Err() != nil || kind == hrpc.Fatal:
			failAll(fmt.Errorf("multi on %s: %w", ch.addr, err))
			return nil, err
		case kind == hrpc.ServerDown:
			c.dropConn(conn)
			c.cache.removeServer(ch.addr)
		case kind == hrpc.Relocate:
			for _, r := range ch.regions {
				c.cache.remove(r)
			}
		}
		return all(), err
	}
	resp := call.Response.(*pb.MultiResponse)
	results := resp.GetRegionActionResult()
	var retry []int
	var last error
	var cells []hrpc.Cell
	for k, r := range ch.regions {
		if k >= len(results) {
			retry = append(retry, ch.actions[k]...)
			continue
		}
		rar := results[k]
		if x := rar.GetException(); x != nil {
			e := hrpc.FromNameBytes(x)
			last = e
			if e.Kind() != hrpc.Fatal {
				c.noteRetry(e.Kind(), e)
			}
			switch e.Kind() {
			case hrpc.Fatal:
				for _, i := range ch.actions[k] {
					errs[i] = fmt.Errorf("region %q: %w", r.Name, e)
				}
				continue
			default:
				c.forget(e.Kind(), r, nil, e)
			}
			retry = append(retry, ch.actions[k]...)
			continue
		}
		answered := make(map[int]bool, len(ch.actions[k]))
		for _, roe := range rar.GetResultOrException() {
			i := int(roe.GetIndex())
			if res := roe.GetResult(); res != nil {
				// Cells of results come in the block in answer order.
				cells, block, err = hrpc.ResultCells(nil, res, block)
				if err != nil {
					// A corrupt answer: nothing in it can be trusted, and
					// the writes in it may have been applied.
					failAll(fmt.Errorf("multi on %s: %w", ch.addr, err))
					return nil, err
				}
			} else {
				cells = nil
			}
			if i >= len(errs) {
				continue
			}
			answered[i] = true
			if x := roe.GetException(); x != nil {
				e := hrpc.FromNameBytes(x)
				last = e
				if e.Kind() != hrpc.Fatal {
					c.noteRetry(e.Kind(), e)
				}
				switch e.Kind() {
				case hrpc.Fatal:
					errs[i] = fmt.Errorf("action %d in region %q: %w", i, r.Name, e)
					continue
				default:
					c.forget(e.Kind(), r, nil, e)
				}
				retry = append(retry, i)
				continue
			}
			if onResult != nil {
				onResult(i, cells)
			}
		}
		for _, i := range ch.actions[k] {
			if !answered[i] {
				retry = append(retry, i)
			}
		}
	}
	return retry, last
}
