package hbase

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// Get reads one row. The cells point into the answer; nil means no row.
func (c *Client) Get(ctx context.Context, table string, g *hrpc.Get) ([]hrpc.Cell, error) {
	pg, err := g.Proto()
	if err != nil {
		return nil, err
	}
	call, block, err := c.onRegion(ctx, table, g.Row, func(r *RegionInfo) (*hrpc.Call, error) {
		return hrpc.NewGetCall(r.Name, pg), nil
	})
	if err != nil {
		return nil, fmt.Errorf("get %s row %s: %w", table, hrpc.QuoteKey(g.Row), err)
	}
	cells, _, err := hrpc.ResultCells(nil, call.Response.(*pb.GetResponse).GetResult(), block)
	if err != nil {
		return nil, fmt.Errorf("get %s row %s: %w", table, hrpc.QuoteKey(g.Row), err)
	}
	return cells, nil
}

// Mutate applies one mutation (put or delete) to its row.
func (c *Client) Mutate(ctx context.Context, table string, m *hrpc.Mutation) error {
	if err := m.Check(); err != nil {
		return err
	}
	_, _, err := c.onRegion(ctx, table, m.Row, func(r *RegionInfo) (*hrpc.Call, error) {
		return hrpc.NewMutateCall(r.Name, m, nil, c.nonceGroup), nil
	})
	if err != nil {
		return fmt.Errorf("mutate %s row %s: %w", table, hrpc.QuoteKey(m.Row), err)
	}
	return nil
}

// Increment atomically adds delta to the 8-byte counter in a cell and
// returns the new value. A nonce makes a retried increment apply once: a
// retry that reaches the server that applied it is answered with the
// counter as that first attempt left it, so the value is this call's own
// even while other writers increment the same counter.
func (c *Client) Increment(ctx context.Context, table string, row, family, qualifier []byte, delta int64) (int64, error) {
	m := &hrpc.Mutation{
		Type:  hrpc.MutationIncrement,
		Row:   row,
		Nonce: rand.Uint64() | 1,
		Cells: []hrpc.MutationCell{{
			Family: family, Qualifier: qualifier, Timestamp: hrpc.LatestTimestamp, Type: hrpc.TypePut,
			Value: binary.BigEndian.AppendUint64(nil, uint64(delta)),
		}},
	}
	if err := m.Check(); err != nil {
		return 0, err
	}
	for attempt := 1; ; attempt++ {
		call, block, err := c.onRegion(ctx, table, row, func(r *RegionInfo) (*hrpc.Call, error) {
			return hrpc.NewMutateCall(r.Name, m, nil, c.nonceGroup), nil
		})
		if err != nil {
			return 0, fmt.Errorf("increment %s row %s: %w", table, hrpc.QuoteKey(row), err)
		}
		v, err := counterOf(call, block, row, family, qualifier)
		if err == nil {
			return v, nil
		}
		// HBase 2.6.4 once answered an increment, while the counter's
		// region moved, with a cell of the right length holding other
		// bytes. The increment was applied; asking again with the same
		// nonce gets its value (or, from the server the region moved to,
		// which has not seen the nonce, applies it again: a value of its
		// own too, the first one's delta wasted).
		if attempt == garbledAnswerAttempts || ctx.Err() != nil {
			return 0, fmt.Errorf("increment %s row %s: %d answers that do not decode, the last: %w", table, hrpc.QuoteKey(row), attempt, err)
		}
		c.noteRetry(hrpc.RetryNow, err)
	}
}

// garbledAnswerAttempts bounds the attempts of an increment whose answers
// do not decode.
const garbledAnswerAttempts = 3

// counterOf reads the counter an increment's answer carries: the one cell of
// the row, family and qualifier asked for, 8 bytes.
func counterOf(call *hrpc.Call, block, row, family, qualifier []byte) (int64, error) {
	cells, _, err := hrpc.ResultCells(nil, call.Response.(*pb.MutateResponse).GetResult(), block)
	if err != nil {
		return 0, err
	}
	for _, cell := range cells {
		if string(cell.Row) == string(row) && string(cell.Family) == string(family) && string(cell.Qualifier) == string(qualifier) {
			if len(cell.Value) != 8 {
				return 0, fmt.Errorf("counter of %d bytes", len(cell.Value))
			}
			return int64(binary.BigEndian.Uint64(cell.Value)), nil
		}
	}
	return 0, fmt.Errorf("answer of %d cells without the counter cell", len(cells))
}

// CheckAndPut applies put only if the cell (put's row, family, qualifier)
// holds expected, or is absent when expected is nil. It reports whether it
// wrote.
func (c *Client) CheckAndPut(ctx context.Context, table string, put *hrpc.Mutation, family, qualifier, expected []byte) (bool, error) {
	if err := put.Check(); err != nil {
		return false, err
	}
	cond, err := hrpc.ValueCondition(put.Row, family, qualifier, expected)
	if err != nil {
		return false, err
	}
	call, _, err := c.onRegion(ctx, table, put.Row, func(r *RegionInfo) (*hrpc.Call, error) {
		return hrpc.NewMutateCall(r.Name, put, cond, c.nonceGroup), nil
	})
	if err != nil {
		return false, fmt.Errorf("check-and-put %s row %s: %w", table, hrpc.QuoteKey(put.Row), err)
	}
	return call.Response.(*pb.MutateResponse).GetProcessed(), nil
}
