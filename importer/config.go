package importer

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/prom-hbase/prom-hbase/seriesrules"
	"github.com/prom-hbase/prom-hbase/store"
)

// Writer is where the history goes: (*store.Store).WriteHistory. An error
// wrapping store.ErrInvalidInput means nothing of the call was written
// (store.RefusedError: the series it counts were not written, the rest
// was); any other error is a storage fault, and the call is safe to repeat.
type Writer interface {
	WriteHistory(ctx context.Context, batch []store.SeriesIn) error
}

var _ Writer = (*store.Store)(nil)

// Defaults of Config.
const (
	// DefaultBatchSamples bounds the samples of one WriteHistory call: large
	// enough that a call carries hundreds of series-hours, small enough
	// that the batches in flight stay a few MiB each.
	DefaultBatchSamples = 100_000
	DefaultAttempts     = 10
	DefaultWriteTimeout = 2 * time.Minute
	DefaultLogEvery     = 10 * time.Second
)

// Config is one import run.
type Config struct {
	Source Source
	Writer Writer
	// Reader reads units back for Verify (*store.Store).
	Reader store.Querier
	// State keeps which units are done; nil keeps nothing (every unit is
	// imported, and a killed run starts over).
	State *State
	// Selection is what, beside the unit, decides what is imported (the
	// matchers and time range given): a unit is done only for the selection
	// it was imported with, so a run with another one imports it again.
	Selection string
	// From is the first millisecond the run imports: the selection's start
	// after the retention cut it (0: no cut; samples before 1970 are not
	// imported anyway). The selection keys
	// the state as given, the retention horizon moving on between runs, so
	// a unit is done only if the run that did it began at From or before:
	// one that began later (a retention raised since) left its earlier
	// samples out, and is imported again.
	From int64

	// Workers is how many units are read, and how many batches written, at
	// once (0: GOMAXPROCS). Batches that hold the same series-hour are
	// written one after the other, as WriteHistory requires (hourLocks).
	Workers int
	// BatchSamples bounds the samples (floats and histograms) of one write
	// (0: DefaultBatchSamples). At most 2 x Workers batches exist at once:
	// that, and what the source holds for one series, is the import's
	// memory whatever the size of a unit.
	BatchSamples int
	// Limits are the store's limits on a series' labels: a series beyond
	// them is dropped (and counted) rather than failing its batch.
	Limits seriesrules.Limits
	// Force imports units that the state says are done.
	Force bool
	// Verify reads every unit back through Reader once it is imported (or
	// found done) and compares it with the source.
	Verify bool

	// Attempts bounds the tries of one write that meets storage faults (0:
	// DefaultAttempts), each within WriteTimeout (0: DefaultWriteTimeout).
	Attempts     int
	WriteTimeout time.Duration
	// Backoff is the pause after the first failed try, doubled after each
	// (0: 200ms; at most 10s).
	Backoff time.Duration

	// Progress, a terminal, receives a progress line redrawn in place
	// (units, series, samples, samples/s, ETA). When nil, Logger gets the
	// same figures every LogEvery (0: DefaultLogEvery).
	Progress io.Writer
	LogEvery time.Duration
	Logger   *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.BatchSamples <= 0 {
		c.BatchSamples = DefaultBatchSamples
	}
	if c.Attempts <= 0 {
		c.Attempts = DefaultAttempts
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.Backoff <= 0 {
		c.Backoff = 200 * time.Millisecond
	}
	if c.LogEvery <= 0 {
		c.LogEvery = DefaultLogEvery
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}
