package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/table"
)

// Defaults of CompactorConfig.
const (
	DefaultCompactGrace = 10 * time.Minute
	// NoGrace, as a grace, closes an hour as soon as it ends (a zero grace
	// means the default).
	NoGrace                 time.Duration = -1
	DefaultCompactInterval                = time.Minute
	DefaultCompactRate                    = 100_000
	DefaultCompactLease                   = 2 * time.Minute
	DefaultCompactQuiet                   = MarkRefresh + 2*time.Minute
	DefaultCompactBatchRows               = 128
	DefaultRawSweepEvery                  = time.Hour
)

// CompactorConfig configures a Compactor. The zero value gives the
// defaults.
type CompactorConfig struct {
	// Grace is how long after its end an hour is closed: from then on its
	// raw cells are compacted. Samples arriving later still land, as raw
	// cells beside the chunks, and a later pass folds them in. Zero means
	// DefaultCompactGrace; NoGrace closes an hour at its end.
	Grace time.Duration
	// Interval is the time between the starts of two passes.
	Interval time.Duration
	// Rate bounds the raw cells compacted per second, so that the deletes
	// and chunk writes leave ingest its throughput (negative: no limit).
	Rate float64
	// Lease is how long a claim on a bucket-hour lasts unless renewed; a
	// killed compactor's work is taken over after it.
	Lease time.Duration
	// Quiet is how old the newest mark of a (bucket, metric, hour) must be
	// before it is compacted and its marks deleted: it must exceed
	// MarkRefresh plus the longest write plus the clock skew between
	// adapters (see MarkRefresh).
	Quiet time.Duration
	// BatchRows is the number of hour rows read, and then written, per call.
	BatchRows int
	// RawSweepEvery spaces the rewrites of FamilyRaw without the raw cells
	// the passes deleted (see sweepRaw): at most one per RawSweepEvery, after
	// a pass that deleted some. Zero means DefaultRawSweepEvery; negative,
	// never.
	RawSweepEvery time.Duration
	Registerer    prometheus.Registerer
	Logger        *slog.Logger

	// now is the compactor's clock (tests move it).
	now func() time.Time
}

func (c *CompactorConfig) setDefaults() {
	if c.Grace == 0 {
		c.Grace = DefaultCompactGrace
	}
	if c.Interval <= 0 {
		c.Interval = DefaultCompactInterval
	}
	if c.Rate == 0 {
		c.Rate = DefaultCompactRate
	}
	if c.Lease <= 0 {
		c.Lease = DefaultCompactLease
	}
	if c.Quiet <= 0 {
		c.Quiet = DefaultCompactQuiet
	}
	setDefault(&c.BatchRows, DefaultCompactBatchRows)
	if c.RawSweepEvery == 0 {
		c.RawSweepEvery = DefaultRawSweepEvery
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
}

// Compactor turns the raw cells of closed hours into chunk cells
// (DESIGN.md section 5). Any number of compactors, in any number of
// processes, may run on the same tables: they divide the work through
// leases in the compaction table. Each is driven by Run, or pass by pass by
// Pass; one Compactor runs one pass at a time.
type Compactor struct {
	cfg    CompactorConfig
	layout rowkey.Layout
	data   table.Table
	todo   table.Table
	id     [idLen]byte
	m      *compactMetrics
	pace   pacer
	plan   compactPlan
	dels   pendingDeletes // deletions of written folds (apply)
	// delsLost: a flushDeletes of the bucket-hour under way failed, and
	// the deletions it held (any of its metrics') are gone from the queue.
	delsLost bool
	conds    []table.CondPut // putFenced's scratch

	// Marks of the pass's folds, deleted at its end once markDelay has
	// passed since marksDue was set (deleteMarks).
	doneMarks []table.Cell
	marksDue  time.Time
	markDelay time.Duration

	// Marks deleted since the compaction table was last tidied, and when;
	// tidyTried once the first tidying was asked for (see tidy).
	untidy    int
	lastTidy  time.Time
	tidyTried bool
	// Raw cells deleted since FamilyRaw was last swept, and when.
	unswept   int
	lastSweep time.Time
}

// NewCompactor returns a compactor of the store's tables.
func (s *Store) NewCompactor(cfg CompactorConfig) (*Compactor, error) {
	if s.todo == nil {
		return nil, errors.New("store has no compaction table")
	}
	c, err := newCompactor(s.layout, s.data, s.todo.t, cfg)
	if err != nil {
		return nil, err
	}
	c.plan.xorOnly = s.cfg.FloatChunks == FloatChunksXOR
	return c, nil
}

func newCompactor(layout rowkey.Layout, data, todo table.Table, cfg CompactorConfig) (*Compactor, error) {
	cfg.setDefaults()
	if cfg.Quiet <= MarkRefresh {
		return nil, fmt.Errorf("compactor quiet period %v must exceed the mark refresh of %v plus the longest write and the clock skew between adapters", cfg.Quiet, MarkRefresh)
	}
	m, err := newCompactMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Compactor{cfg: cfg, layout: layout, data: data, todo: todo, id: newProcessID(), m: m, pace: pacer{rate: cfg.Rate}, markDelay: markDelay}, nil
}

// Run runs passes every Interval until ctx ends. The first pass starts after
// a random part of the interval, so that adapters started together do not
// compact in step.
func (c *Compactor) Run(ctx context.Context) {
	wait := time.Duration(rand.Int64N(int64(c.cfg.Interval)))
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		start := time.Now()
		if _, err := c.Pass(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Error("compaction pass failed", "err", err)
		}
		wait = max(0, c.cfg.Interval-time.Since(start))
	}
}

// openHourFrom is the first hour that is not closed at now: an hour is
// closed once its end plus grace has passed. The compactor reads only
// closed hours, and WriteHistory writes them as chunk cells.
func openHourFrom(now time.Time, grace time.Duration) uint32 {
	return uint32(now.Add(-max(grace, 0)).Unix() / rowkey.HourSeconds * rowkey.HourSeconds)
}

// PassStats sums up one pass.
type PassStats struct {
	BucketHours     int           // bucket-hours compacted to the end
	Pending         int           // closed bucket-hours left for later (busy, quiet, failed)
	SeriesHours     int           // hour rows rewritten
	RawCellsDeleted int           // raw cells folded into chunks
	MarksDeleted    int           // compaction table marks of rows compacted
	BytesWritten    int           // chunk qualifier and value bytes written
	Errors          int           // bucket-hours that failed
	Lag             time.Duration // age of the oldest closed hour left pending
}

// Pass compacts the closed bucket-hours marked in the compaction table, oldest
// first. It returns an error only when the compaction table cannot be read;
// a bucket-hour that fails is counted, logged and retried by a later pass.
func (c *Compactor) Pass(ctx context.Context) (PassStats, error) {
	began := time.Now()
	c.m.passes.Inc()
	var st PassStats
	now := c.cfg.now()
	// Hours from openFrom on are not closed yet: their rows are not read.
	openFrom := openHourFrom(now, c.cfg.Grace)
	oldest := uint32(0)
	pending := false
	err := c.scanTodo(ctx, todoKey(openFrom, 0), func(row table.Row) {
		done, err := c.bucketHour(ctx, row, &st)
		if err != nil {
			st.Errors++
			c.m.errors.Inc()
			c.cfg.Logger.Warn("compaction of a bucket-hour failed", "row", fmt.Sprintf("%x", row.Key), "err", err)
		}
		if done {
			st.BucketHours++
			return
		}
		st.Pending++
		if hour, _, ok := parseTodoKey(row.Key); ok && (!pending || hour < oldest) {
			oldest, pending = hour, true
		}
	})
	if derr := c.deleteMarks(ctx, &st); derr != nil && ctx.Err() == nil {
		st.Errors++
		c.m.errors.Inc()
		c.cfg.Logger.Warn("marks of compacted rows not deleted; a later pass folds their rows again", "err", derr)
	}
	if pending {
		closed := time.Unix(int64(oldest)+rowkey.HourSeconds, 0).Add(max(c.cfg.Grace, 0))
		st.Lag = max(0, now.Sub(closed))
	}
	c.m.lag.Set(st.Lag.Seconds())
	if err != nil {
		c.m.errors.Inc()
		return st, err
	}
	c.cfg.Logger.Info("compaction pass",
		"bucket_hours", st.BucketHours, "pending", st.Pending, "series_hours", st.SeriesHours,
		"raw_cells_deleted", st.RawCellsDeleted, "bytes_written", st.BytesWritten,
		"errors", st.Errors, "lag", st.Lag.Round(time.Second), "took", time.Since(began).Round(time.Millisecond))
	c.tidy(ctx, st)
	c.sweepRaw(ctx, st)
	return st, nil
}

// tidyEvery spaces the tidying of the compaction table while closed hours
// are still pending; tidyTimeout bounds one.
const (
	tidyEvery   = 10 * time.Minute
	tidyTimeout = time.Minute
	// sweepTimeout bounds a sweep of FamilyRaw (sweepRaw).
	sweepTimeout = 5 * time.Minute
)

// tidy has the backend rewrite the compaction table without the marks
// passes deleted, once no closed hour is pending or tidyEvery after the
// last time. Every query reads the marks of its hours (rawhours.go), and
// HBase keeps a deleted mark and its delete marker until a major
// compaction: 1,280 of them (make bench's data set) cost 2-10 ms of HBase
// CPU per query, against 0.15 ms once compacted. The table is small, so
// rewriting it is cheap; a failure only leaves reads slower.
//
// The first pass of a compactor tidies even when it deleted nothing: the
// count of deleted marks lives in the process that deleted them, so one
// that stopped before its tidying (a restart during a catch-up, when
// tidying waits for tidyEvery) would otherwise leave them to every query
// until a later pass deletes marks, which never comes once writes stop: up
// to HBase's weekly major compaction. It is asked for once per process, so
// that a backend refusing it is not asked every pass.
func (c *Compactor) tidy(ctx context.Context, st PassStats) {
	c.untidy += st.MarksDeleted
	if (c.untidy == 0 && c.tidyTried) || (st.Pending > 0 && time.Since(c.lastTidy) < tidyEvery) {
		return
	}
	c.tidyTried = true
	tc, ok := c.todo.(table.Compacter)
	if !ok {
		return
	}
	began := time.Now()
	// A wait for HBase's compaction queue must not hold up the next pass:
	// the rewrite, once asked for, goes on without the wait.
	tctx, cancel := context.WithTimeout(ctx, tidyTimeout)
	defer cancel()
	if err := tc.Compact(tctx); err != nil {
		if !errors.Is(err, errors.ErrUnsupported) {
			c.cfg.Logger.Warn("compaction table not tidied; reads step over deleted marks until it is", "err", err)
		}
		return
	}
	c.cfg.Logger.Info("compaction table tidied", "marks_deleted", c.untidy, "took", time.Since(began).Round(time.Millisecond))
	c.untidy, c.lastTidy = 0, began
}

// sweepRaw has the backend rewrite FamilyRaw without the raw cells the
// passes folded and deleted, after a pass that deleted some and at most
// once per RawSweepEvery (table.FamilyCompacter: on HBase a major compaction
// of the family; on Pebble a flush of the memtable, where the deletions
// otherwise wait for hours on a quiet store, doubling the CPU of reads of
// the folded rows). HBase keeps a deleted cell and its delete marker
// until a major compaction (weekly by default), and a read steps over both:
// reads of hours with no mark never open FamilyRaw (rawhours.go), but a
// late sample marks its hour again, and then every read of the hour and the
// compactor's next fold of it read the dead cells of the fold before. On
// make bench's data set one late sample per series made a whole read 7x
// slower (HBase CPU per sample 11x) until the dead cells were compacted
// away; and until then they hold their 13 bytes a sample on disk beside
// the chunks. FamilyRaw holds only the hours not compacted yet, so the
// rewrite is small; it runs in the background, and a failure (an adapter
// without the right to ask for compactions) only leaves that cost.
func (c *Compactor) sweepRaw(ctx context.Context, st PassStats) {
	c.unswept += st.RawCellsDeleted
	now := c.cfg.now()
	if c.cfg.RawSweepEvery < 0 || c.unswept == 0 || (!c.lastSweep.IsZero() && now.Sub(c.lastSweep) < c.cfg.RawSweepEvery) {
		return
	}
	fc, ok := c.data.(table.FamilyCompacter)
	if !ok {
		return
	}
	began := time.Now()
	// The next pass waits for this one: a flush per region of the data
	// table, done one by one, takes its time on a large table (the regions
	// done before a timeout stay done).
	tctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	// Whatever happens, the next try waits RawSweepEvery: a failure to ask
	// is not retried pass after pass.
	c.lastSweep = now
	if err := fc.CompactFamily(tctx, FamilyRaw); err != nil {
		if !errors.Is(err, errors.ErrUnsupported) {
			c.m.errors.Inc()
			c.cfg.Logger.Warn("raw family not swept; reads of hours with late samples step over the folded raw cells until HBase's major compaction", "err", err)
		}
		return
	}
	c.m.rawSweeps.Inc()
	c.cfg.Logger.Info("raw family compaction queued", "raw_cells_deleted", c.unswept, "took", time.Since(began).Round(time.Millisecond))
	c.unswept = 0
}

// todoPage is the number of compaction table rows read per scan: the scan
// is closed while they are worked on, which may take long.
const todoPage = 64

// scanTodo calls f on each compaction table row before stop, in pages.
func (c *Compactor) scanTodo(ctx context.Context, stop []byte, f func(table.Row)) error {
	var start []byte
	for {
		rows, err := scanPage(ctx, c.todo, table.ScanOptions{Start: start, Stop: stop, Family: familyCompact}, todoPage)
		if err != nil {
			return fmt.Errorf("read compaction table: %w", err)
		}
		for _, r := range rows {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			f(r)
		}
		if len(rows) < todoPage {
			return nil
		}
		start = append(slices.Clip(rows[len(rows)-1].Key), 0)
	}
}

// scanPage reads up to n rows, copied out of the scanner.
func scanPage(ctx context.Context, t table.Table, opts table.ScanOptions, n int) ([]table.Row, error) {
	opts.RowsPerCall = n
	sc := t.Scan(ctx, opts)
	defer sc.Close()
	var rows []table.Row
	for len(rows) < n && sc.Next() {
		rows = append(rows, cloneRow(sc.At()))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return rows, sc.Close()
}

func cloneRow(r table.Row) table.Row {
	out := table.Row{Key: bytes.Clone(r.Key), Cells: make([]table.Cell, len(r.Cells))}
	for i, c := range r.Cells {
		out.Cells[i] = table.Cell{
			Row: out.Key, Family: c.Family, Qualifier: bytes.Clone(c.Qualifier),
			Timestamp: c.Timestamp, Value: bytes.Clone(c.Value),
		}
	}
	return out
}
