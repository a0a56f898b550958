package store

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/seriesrules"
	"github.com/prom-hbase/prom-hbase/table"
)

// Table and family names. The UID table holds, beside labels2uid's id and
// name families, a meta family for metric metadata (row = metric family
// name, qualifiers type, unit, help) and the schema row (see schema.go).
const (
	DataTableSuffix = "prom-data"
	UIDTableSuffix  = "prom-uid"
	// FamilyData is the data table's family of chunk cells, and of the raw
	// cells that stay raw (samples no chunk gives back exactly, and raw
	// cells written before FamilyRaw existed). Every read reads it.
	FamilyData = "t"
	// FamilyRaw is the data table's family of raw cells waiting for the
	// compactor. A read reads it only for the (bucket, metric, hour)s the
	// compaction table marks (rawhours.go), so that once an hour is folded
	// its raw cells' delete markers cost reads nothing.
	FamilyRaw = "r"
	// FamilyFence is the data table's family of fence cells, one a
	// compacted row (cellcodec/fence.go), which every fold of the row
	// changes and conditions its writes on. Reads of unmarked hours name
	// FamilyData alone (on HBase they never open its files), and its cells
	// are not raw, so the raw family's sweeps do not rewrite them.
	FamilyFence = "f"
	// FamilyMeta holds metric metadata in the UID table.
	FamilyMeta = "meta"
)

// Defaults of Config.
const (
	DefaultMaxLabels           = 64
	DefaultMaxLabelNameLength  = 1024
	DefaultMaxLabelValueLength = 4096
	DefaultReadBatchSeries     = 256
	DefaultReadBatchRows       = 512
	DefaultScanConcurrency     = 8
	DefaultReadPrefetchBytes   = 8 << 20
	DefaultWriteTimeout        = 30 * time.Second
	DefaultDataCompression     = "SNAPPY"
	DefaultChunkCompression    = "GZ"
	DefaultRawMemstore         = RawMemstoreBasic
)

// Config.RawMemstore values: the in-memory compaction of FamilyRaw.
const (
	RawMemstoreBasic = "BASIC"
	RawMemstoreNone  = "NONE"
)

// Config.FloatChunks values: how the compactor and WriteHistory store the
// float samples of a closed series-hour.
const (
	// FloatChunksAuto (also "") stores a dense cell (cellcodec/dense.go)
	// where it takes at least DenseMinSaving fewer bytes than the
	// run's XOR chunks, and XOR chunks elsewhere.
	FloatChunksAuto = "auto"
	// FloatChunksXOR stores XOR chunks only, each of which a streamed read
	// sends on as it is.
	FloatChunksXOR = "xor"
)

// DenseMinSaving is the least fraction of an hour's XOR bytes that a dense
// cell must save to be stored instead under FloatChunksAuto. A streamed
// read sends an XOR chunk as it is but must decode a dense cell and encode
// its samples into XOR chunks anew, about 10 ns a sample, so a dense cell
// that saves little costs more than it is worth.
const DenseMinSaving = 0.2

// Config configures a Store. The zero value gives the defaults.
type Config struct {
	// TablePrefix is prepended to the table names prom-data and prom-uid.
	TablePrefix string
	// Layout fixes the row keys (a SaltBuckets of 1 means no salt byte). A
	// field of 0 is not given: tables that exist keep what they were created
	// with, new tables take DefaultLayout's. A field given must be what
	// the tables were created with (Open refuses them otherwise).
	Layout rowkey.Layout
	// DefaultLayout is the layout of new tables where Layout leaves a field
	// 0; its own fields of 0 take rowkey.DefaultLayout's (UID widths 3, 3,
	// 4 and 16 salt buckets).
	DefaultLayout rowkey.Layout
	// DataRegions is how many regions the data table is created with,
	// split at salt bucket boundaries (0, or more than the buckets: one per
	// bucket). A write request's series fall in every bucket and a query
	// reads all of a metric's buckets: HBase pays per region each touches,
	// so fewer regions make small writes and small queries cheaper.
	DataRegions int
	// DataCompression is the block compression of FamilyRaw, the raw
	// cells of the hours not compacted yet (HBase's COMPRESSION: SNAPPY,
	// LZ4, ZSTD, GZ, NONE; "" means DefaultDataCompression), and
	// ChunkCompression that of FamilyData, the chunks ("" means
	// DefaultChunkCompression). With compression a family's blocks are
	// ROW_INDEX_V1 encoded, without it FAST_DIFF (dataTableSpec). Backends
	// without the notion ignore them.
	DataCompression  string
	ChunkCompression string
	// RawMemstore is the IN_MEMORY_COMPACTION of FamilyRaw, which takes
	// every sample written: "BASIC" (DefaultRawMemstore, also "") or
	// "NONE". With BASIC, HBase inserts each cell into a skip list of a
	// few MiB, flattened into sorted arrays as it fills, instead of one of
	// the whole memstore (128 MiB by default), where an insert walks more
	// levels, each likely a cache miss: about 30 % less HBase CPU per
	// sample written (BENCHMARKS.md, "Ingest: the raw family's memstore").
	// The HBase backend turns the family's MSLAB off with it: flattened
	// segments indexed in MSLAB chunks ran a 1 GiB region server out of
	// heap, array-indexed ones did not. The other kinds (EAGER, ADAPTIVE)
	// drop versions in memory and are not offered. Backends without the
	// notion ignore it.
	RawMemstore string
	// FloatChunks is how closed hours' floats are stored: FloatChunksAuto
	// ("" too) or FloatChunksXOR. Readers take both, whatever this says.
	FloatChunks string
	// Retention is the data family's TTL, counted from each sample's time
	// (0: keep forever).
	Retention time.Duration
	// CompactGrace is the compactor's grace (CompactorConfig.Grace, the
	// adapter's --compactor.grace): WriteHistory writes the hours it has
	// closed as chunk cells, later ones as raw cells (0: DefaultCompactGrace;
	// NoGrace: an hour is closed at its end).
	CompactGrace time.Duration
	// WriteTimeout is the longest a write may take to land (the adapter's
	// --write.timeout, which the compactor's quiet period covers):
	// WriteHistory reads rows and writes them back within it (0:
	// DefaultWriteTimeout).
	WriteTimeout time.Duration
	// Limits on the series of a write (0: defaults).
	MaxLabels           int
	MaxLabelNameLength  int
	MaxLabelValueLength int
	// UIDCacheSize bounds each UID cache (see labels2uid.Config.CacheSize).
	UIDCacheSize int
	// ReadBatchSeries and ReadBatchRows bound one phase-two multi-get: at
	// most that many series and (series, hour) rows. They bound the memory
	// of a read, whatever the size of its answer.
	ReadBatchSeries int
	ReadBatchRows   int
	// ScanConcurrency bounds the phase-one scans that run at once.
	ScanConcurrency int
	// ReadPrefetchBytes bounds the cell bytes that phase one keeps of the
	// rows it lists, per metric group of a query (0: the default; negative:
	// list keys only). Rows within it need no phase-two multi-get.
	ReadPrefetchBytes int
	Registerer        prometheus.Registerer
	Logger            *slog.Logger
}

func (c *Config) setDefaults() {
	c.DefaultLayout = c.DefaultLayout.WithDefaults(rowkey.DefaultLayout)
	setDefault(&c.MaxLabels, DefaultMaxLabels)
	setDefault(&c.MaxLabelNameLength, DefaultMaxLabelNameLength)
	setDefault(&c.MaxLabelValueLength, DefaultMaxLabelValueLength)
	setDefault(&c.ReadBatchSeries, DefaultReadBatchSeries)
	setDefault(&c.ReadBatchRows, DefaultReadBatchRows)
	setDefault(&c.ScanConcurrency, DefaultScanConcurrency)
	c.DataCompression = strings.ToUpper(cmp.Or(c.DataCompression, DefaultDataCompression))
	c.ChunkCompression = strings.ToUpper(cmp.Or(c.ChunkCompression, DefaultChunkCompression))
	c.RawMemstore = strings.ToUpper(cmp.Or(c.RawMemstore, DefaultRawMemstore))
	c.FloatChunks = cmp.Or(c.FloatChunks, FloatChunksAuto)
	if c.CompactGrace == 0 {
		c.CompactGrace = DefaultCompactGrace
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.ReadPrefetchBytes == 0 {
		c.ReadPrefetchBytes = DefaultReadPrefetchBytes
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// limits are the series rules' limits of the store's configuration.
func (c *Config) limits() seriesrules.Limits {
	return seriesrules.Limits{MaxLabels: c.MaxLabels, MaxLabelNameLength: c.MaxLabelNameLength, MaxLabelValueLength: c.MaxLabelValueLength}
}

func setDefault(v *int, d int) {
	if *v <= 0 {
		*v = d
	}
}

// Store is the time-series store over a table.DB. It is safe for concurrent
// use.
type Store struct {
	cfg    Config
	layout rowkey.Layout
	db     table.DB
	data   table.Table
	uid    table.Table
	uids   *labels2uid.Resolver

	writers   sync.Pool // *writer
	histories sync.Pool // *historyWriter (history.go)
	history   historyCounters
	now       func() time.Time // WriteHistory's clock (tests move it)

	todo *todoList // the compactor's to-do marks (compact_todo.go)
	read readState // the read path's caches (readstate.go)
}

var (
	_ Appender = (*Store)(nil)
	_ Querier  = (*Store)(nil)
)

// Open opens the store's tables in db, creating them on first use, and
// checks that they were created with the settings of cfg: the UID widths,
// the salt buckets and the cell layout can never change once data exists.
// Those cfg leaves 0 are taken from the tables (Config.Layout). Closing the
// Store does not close db.
func Open(ctx context.Context, db table.DB, cfg Config) (*Store, error) {
	cfg.setDefaults()
	// Given settings are checked before the tables are touched.
	if err := cfg.Layout.WithDefaults(cfg.DefaultLayout).Validate(); err != nil {
		return nil, fmt.Errorf("store layout: %w", err)
	}
	if cfg.RawMemstore != RawMemstoreBasic && cfg.RawMemstore != RawMemstoreNone {
		return nil, fmt.Errorf("raw family memstore %q: want %s or %s", cfg.RawMemstore, RawMemstoreBasic, RawMemstoreNone)
	}
	if cfg.FloatChunks != FloatChunksAuto && cfg.FloatChunks != FloatChunksXOR {
		return nil, fmt.Errorf("float chunks %q: want %q or %q", cfg.FloatChunks, FloatChunksAuto, FloatChunksXOR)
	}
	if err := cfg.limits().Check(); err != nil {
		return nil, fmt.Errorf("store limits: %w", err)
	}
	uid, err := ensureTable(ctx, db, uidTableSpec(cfg), nil, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("open UID table: %w", err)
	}
	schema, err := checkSchema(ctx, uid, schemaOf(cfg.Layout, cfg.DefaultLayout))
	if err != nil {
		return nil, err
	}
	if cfg.Layout, err = layoutOfSchema(schema); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, layout: cfg.Layout, db: db, uid: uid, now: time.Now}
	s.data, err = ensureTable(ctx, db, dataTableSpec(cfg), s.uid, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("open data table (block compression %s of raw cells, %s of chunks): %w", cfg.DataCompression, cfg.ChunkCompression, err)
	}
	if s.todo, err = openTodo(ctx, db, cfg); err != nil {
		return nil, err
	}
	s.uids, err = labels2uid.New(ctx, s.uid, labels2uid.Config{
		Widths:     labels2uid.Widths{cfg.Layout.MetricWidth, cfg.Layout.TagKWidth, cfg.Layout.TagVWidth},
		CacheSize:  cfg.UIDCacheSize,
		Registerer: cfg.Registerer,
		Logger:     cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	s.read.names = newNameCache(s.uids)
	s.read.markWindow = markDelay / 2
	if cfg.Registerer != nil {
		rereads := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "promhbase_read_early_rereads_total",
			Help: "Scans of a query's older hours read again after its marks, because the marks came back too late to keep what was read meanwhile (DESIGN.md section 5, the early read).",
		}, func() float64 { return float64(s.read.earlyRereads.Load()) })
		markReads := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "promhbase_read_marks_reads_total",
			Help: "Reads of the compaction table's marks; queries that ask while one is under way share the next (promhbase_read_marks_queries_total counts the queries served).",
		}, func() float64 { return float64(s.read.marks.reads.Load()) })
		markQueries := prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "promhbase_read_marks_queries_total",
			Help: "Queries served by reads of the compaction table's marks (promhbase_read_marks_reads_total).",
		}, func() float64 { return float64(s.read.marks.queries.Load()) })
		for _, c := range []prometheus.Collector{rereads, markReads, markQueries} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("store metrics: %w", err)
			}
		}
	}
	s.writers.New = func() any { return new(writer) }
	s.histories.New = func() any { return &historyWriter{plan: compactPlan{xorOnly: cfg.FloatChunks == FloatChunksXOR}} }
	// Last: only an adapter that opened everything moves the tables'
	// layout version forward (checkSchema), refusing older adapters then.
	if _, err := upgradeLayout(ctx, uid, schema); err != nil {
		return nil, err
	}
	return s, nil
}

// Resolver is the store's label-string to UID mapping.
func (s *Store) Resolver() *labels2uid.Resolver { return s.uids }

// Layout is the row-key layout in use.
func (s *Store) Layout() rowkey.Layout { return s.layout }

// WriteTimeout is the longest a write may take to land (Config.WriteTimeout,
// its default in place of 0): a compactor's quiet period must exceed it.
func (s *Store) WriteTimeout() time.Duration { return s.cfg.WriteTimeout }

// Ping answers nil when the backend serves requests.
func (s *Store) Ping(ctx context.Context) error { return s.db.Ping(ctx) }

// Close releases the store; the DB stays open.
func (s *Store) Close() error { return nil }
