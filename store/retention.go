package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// retentionBatch bounds the ranges of one DeleteRows call.
const retentionBatch = 4096

// DeleteExpired removes the hour rows that lie wholly before the retention
// horizon (now - Config.Retention), on a backend that deletes rows by range
// (the embedded store; table.RowRangeDeleter): for every salt bucket and
// every metric UID ever assigned, the range of the metric's hours before the
// horizon's, one seek each and a range deletion where something is stored.
// Its cost thus follows the number of metrics and what it deletes, not the
// size of the table. The row of the horizon's own hour stays until the next
// hour: reads hide its expired samples meanwhile, as they hide every cell
// past the TTL. It returns errors.ErrUnsupported on HBase, whose TTL
// removes expired cells in major compactions.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) error {
	if s.cfg.Retention <= 0 {
		return nil
	}
	d, ok := s.data.(table.RowRangeDeleter)
	if !ok {
		return errors.ErrUnsupported
	}
	horizon, _, err := rowkey.BaseHour(now.Add(-s.cfg.Retention).UnixMilli())
	if err != nil || horizon < rowkey.HourSeconds {
		return nil // nothing before 1970 to delete
	}
	metrics, err := s.uids.Assigned(ctx, labels2uid.Metric)
	if err != nil {
		return err
	}
	var ranges []rowkey.Range
	batch := make([]table.RowRange, 0, retentionBatch)
	for m := uint64(1); m <= metrics; m++ {
		ranges = s.layout.AppendScanRanges(ranges[:0], m, 0, horizon-rowkey.HourSeconds)
		for _, r := range ranges {
			batch = append(batch, table.RowRange{Start: r.Start, Stop: r.Stop})
		}
		if len(batch) >= retentionBatch-len(ranges) || m == metrics {
			if err := d.DeleteRows(ctx, batch); err != nil {
				return fmt.Errorf("delete hours before %s: %w", time.Unix(int64(horizon), 0).UTC().Format(time.RFC3339), err)
			}
			batch = batch[:0]
		}
	}
	return nil
}

// RunRetention calls DeleteExpired every interval until ctx ends, logging
// failures; it returns at once on a backend without range deletions.
func (s *Store) RunRetention(ctx context.Context, every time.Duration) {
	if s.cfg.Retention <= 0 {
		return
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		start := time.Now()
		err := s.DeleteExpired(ctx, start)
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			return
		case err != nil && ctx.Err() == nil:
			s.cfg.Logger.Error("deleting the hours past the retention failed", "err", err)
		case err == nil:
			s.cfg.Logger.Debug("deleted the hours past the retention", "retention", s.cfg.Retention, "took", time.Since(start))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
