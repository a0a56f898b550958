package main

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/prom-hbase/prom-hbase/importer"
	"github.com/prom-hbase/prom-hbase/store"
)

// pausing wraps w for --testing.pause-after-batches: once that many writes
// succeeded, every write waits until the import is ended. The end-to-end
// suite kills the import then, in the middle of a unit.
func (f *importFlags) pausing(w importer.Writer, logger *slog.Logger) importer.Writer {
	if f.pauseAfter <= 0 {
		return w
	}
	return &pauser{w: w, left: f.pauseAfter, logger: logger}
}

type pauser struct {
	w      importer.Writer
	left   int64
	n      atomic.Int64
	logger *slog.Logger
}

func (p *pauser) WriteHistory(ctx context.Context, b []store.SeriesIn) error {
	if p.n.Add(1) > p.left {
		if p.n.Load() == p.left+1 {
			p.logger.Warn("TESTING: import paused", "batches_written", p.left)
		}
		<-ctx.Done()
		return ctx.Err()
	}
	return p.w.WriteHistory(ctx, b)
}
