// Command adapter is the Prometheus remote-storage adapter: remote write
// 1.0/2.0 in, remote read out, samples kept in HBase (or, when no ZooKeeper
// quorum is given, in an embedded Pebble directory).
//
// This package turns flags into configuration and wires the pieces
// together; nothing else. The protocols live in remote/, the data model in
// store/, the backends under table/.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hbasemetrics"
	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/remote"
	"github.com/prom-hbase/prom-hbase/rowkey"
	"github.com/prom-hbase/prom-hbase/store"
	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/table/hbasetable"
	"github.com/prom-hbase/prom-hbase/table/pebbletable"
	"github.com/prom-hbase/prom-hbase/table/tablemetrics"
)

// retentionEvery is how often the embedded store deletes the hours past the
// retention: rows are hours, so a pass an hour keeps at most two hours of
// expired samples stored (reads never see them).
const retentionEvery = time.Hour

// startRetention runs the store's retention passes until the returned stop
// is called. On the embedded store they delete whole expired hours by
// range, and the Pebble sweep then leaves the data table alone; on HBase,
// whose TTL does this, RunRetention returns at once.
func startRetention(ctx context.Context, st *store.Store) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.RunRetention(ctx, retentionEvery)
	}()
	return func() { cancel(); <-done }
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// config is everything the flags decide.
type config struct {
	web *web.FlagConfig
	log promslog.Config
	storageFlags

	write         remote.WriteConfig
	maxBodyBytes  units.Base2Bytes
	maxDecoded    units.Base2Bytes
	maxReqMemory  units.Base2Bytes
	maxInFlight   units.Base2Bytes
	seriesCache   units.Base2Bytes
	read          remote.ReadConfig
	maxFrameBytes units.Base2Bytes

	shutdownTimeout time.Duration
	testing         testingFlags
	compactor       *compactorFlags
}

func parseFlags(args []string) (*config, error) {
	app := kingpin.New("adapter", "Prometheus remote-storage adapter: remote write (1.0, 2.0) and remote read on HBase, in OpenTSDB's table layout.")
	app.HelpFlag.Short('h')
	c := &config{web: kingpinflag.AddFlags(app, ":9201")}
	promslogflag.AddFlags(app, &c.log)
	addTestingFlags(app, &c.testing)
	c.compactor = addCompactorFlags(app)

	addStorageFlags(app, &c.storageFlags)

	app.Flag("write.max-body-bytes", "Largest compressed remote-write body accepted (413 above).").
		Default("16MiB").BytesVar(&c.maxBodyBytes)
	app.Flag("write.max-decoded-bytes", "Largest decompressed remote-write body accepted, checked before decompressing (413 above).").
		Default("64MiB").BytesVar(&c.maxDecoded)
	app.Flag("write.max-request-memory", "Most memory one remote-write request may take: body, decompressed body and decoded series, counted before they are allocated (413 above).").
		Default("128MiB").BytesVar(&c.maxReqMemory)
	app.Flag("write.max-bytes-in-flight", "Most memory all remote-write requests being served may take, counted as for --write.max-request-memory; beyond it 429 with Retry-After (0: a quarter of the memory available, 64MiB to 4GiB).").
		Default("0").BytesVar(&c.maxInFlight)
	app.Flag("write.series-cache-bytes", "Memory for the remote-write series seen before (1.0 and 2.0), each kept by its label bytes with its labels and series ID so that it is neither checked nor resolved again, nor, in 1.0, decoded (about 600 bytes a series of 6 labels; 0: no cache).").
		Default("256MiB").BytesVar(&c.seriesCache)
	app.Flag("write.timeout", "Time the storage has to acknowledge a write before the sender gets 503 and retries.").
		Default(store.DefaultWriteTimeout.String()).DurationVar(&c.write.Timeout)
	app.Flag("read.sample-limit", "Most samples in one non-streamed (SAMPLES) remote-read response (0: no limit).").
		Default("50000000").IntVar(&c.read.SampleLimit)
	app.Flag("read.concurrent-limit", "Most remote reads served at once; more wait up to 5s, then get 429.").
		Default("10").IntVar(&c.read.ConcurrentLimit)
	app.Flag("read.timeout", "Longest a remote read may run; one still running then gets 503 (or its stream is cut). 0: no limit.").
		Default("2m").DurationVar(&c.read.Timeout)
	app.Flag("read.max-bytes-in-frame", "Largest frame of a streamed remote-read response (a frame may exceed it by one chunk).").
		Default("1MiB").BytesVar(&c.maxFrameBytes)
	app.Flag("web.shutdown-timeout", "On SIGTERM, how long in-flight requests may take to finish.").
		Default("40s").DurationVar(&c.shutdownTimeout)

	if _, err := app.Parse(args); err != nil {
		return nil, err
	}
	c.write.MaxBodyBytes = int64(c.maxBodyBytes)
	c.write.MaxDecodedBytes = int64(c.maxDecoded)
	c.write.MaxRequestMemory = int64(c.maxReqMemory)
	c.write.MaxBytesInFlight = int64(c.maxInFlight)
	c.write.SeriesCacheBytes = int64(c.seriesCache)
	c.write.Limits = c.limits
	c.read.MaxBytesInFrame = int(c.maxFrameBytes)
	if c.read.Timeout == 0 {
		c.read.Timeout = -1 // remote.ReadConfig: negative means no limit
	}
	if c.read.SampleLimit == 0 {
		c.read.SampleLimit = -1 // remote.ReadConfig: negative means no limit
	}
	if err := c.checkLayout(); err != nil {
		return nil, err
	}
	c.compactGrace, c.writeTimeout = c.compactor.grace, c.write.Timeout
	return c, nil
}

// storageFlags say which tables to use and how they are laid out: the
// adapter and its import command share them, so that both name the same
// tables the same way.
type storageFlags struct {
	storagePath      string
	storageCache     units.Base2Bytes
	storageMemTable  units.Base2Bytes
	zkQuorum         string
	zkRoot           string
	rpcTimeout       time.Duration
	coalesce         bool
	multisInFlight   int
	tablePrefix      string
	retention        model.Duration
	retentionSet     bool
	layout           rowkey.Layout
	uidCacheSize     int
	dataRegions      string
	compression      string
	chunkCompression string
	rawMemstore      string
	floatChunks      string
	limits           remote.Limits
	// compactGrace and writeTimeout are --compactor.grace and
	// --write.timeout, which the adapter and its import command register
	// each with its own help: the store's history writes depend on them.
	compactGrace time.Duration
	writeTimeout time.Duration
}

// addBackendFlags are the flags that name the backend and the tables:
// what every command needs to find them.
func addBackendFlags(app *kingpin.Application, c *storageFlags) {
	app.Flag("storage.path", "Directory of the embedded Pebble store, used when --hbase.zookeeper-quorum is not set.").
		Default("data/").StringVar(&c.storagePath)
	app.Flag("storage.cache-size", "Block cache of the embedded Pebble store: blocks kept decompressed for the reads of recent hours (0: none). Not used with HBase, whose region servers keep their own.").
		Default("64MiB").BytesVar(&c.storageCache)
	app.Flag("storage.memtable-size", "Memtable of the embedded Pebble store: writes gathered in memory before a flush to disk (up to two are held while one flushes; some three times it in write-ahead log files on disk). Larger flushes cost fewer compactions: 4MiB, Pebble's default, took three times the CPU a sample of 64MiB. Not used with HBase.").
		Default("64MiB").BytesVar(&c.storageMemTable)
	app.Flag("hbase.zookeeper-quorum", "ZooKeeper quorum of the HBase cluster (host:port,host:port). When set, samples are stored in HBase instead of --storage.path.").
		PlaceHolder("HOST:PORT,...").StringVar(&c.zkQuorum)
	app.Flag("hbase.zookeeper-root", "Root znode of the HBase cluster (zookeeper.znode.parent).").
		Default("/hbase").StringVar(&c.zkRoot)
	app.Flag("hbase.rpc-timeout", "Timeout of one HBase RPC attempt.").
		Default("10s").DurationVar(&c.rpcTimeout)
	app.Flag("hbase.table-prefix", "Prefix of the table names (<prefix>prom-data, <prefix>prom-uid); may carry a namespace, e.g. 'metrics:'.").
		Default("").StringVar(&c.tablePrefix)
	c.multisInFlight = hbase.DefaultWriteMultisInFlight // for commands without the write flags
}

func addStorageFlags(app *kingpin.Application, c *storageFlags) {
	addBackendFlags(app, c)
	app.Flag("hbase.coalesce-writes", "Let concurrent write requests share HBase Multi calls: while --hbase.write-multis-in-flight Multis are in flight to a region server, the requests for that server wait and the next carries them all. Each request is still answered only once its own samples are acknowledged.").
		Default("true").BoolVar(&c.coalesce)
	app.Flag("hbase.write-multis-in-flight", "With --hbase.coalesce-writes, how many Multi calls of writes go to one region server at once before further requests for it wait to share the next: fewer merge more requests into each (less HBase CPU per sample), more keep more of the region server's handlers busy.").
		Default(strconv.Itoa(hbase.DefaultWriteMultisInFlight)).IntVar(&c.multisInFlight)
	app.Flag("storage.retention", "How long samples are kept, counted from each sample's own time (0: forever). Becomes the data table's TTL.").
		Default("0s").IsSetByUser(&c.retentionSet).SetValue(&c.retention)
	// The layout flags have no default value: left out, an adapter takes
	// what the tables were created with (store.Config.Layout), so that
	// only the adapter that creates them needs them.
	app.Flag("uid.width.metric", "Bytes of a metric-name UID (1..8) of new tables (default 3). Fixed when the tables are created; left out, an adapter takes the tables' own.").
		PlaceHolder("3").IntVar(&c.layout.MetricWidth)
	app.Flag("uid.width.tagk", "Bytes of a label-name UID (1..8) of new tables (default 3). Fixed when the tables are created; left out, an adapter takes the tables' own.").
		PlaceHolder("3").IntVar(&c.layout.TagKWidth)
	app.Flag("uid.width.tagv", "Bytes of a label-value UID (1..8) of new tables (default 4). Fixed when the tables are created; left out, an adapter takes the tables' own.").
		PlaceHolder("4").IntVar(&c.layout.TagVWidth)
	app.Flag("salt.buckets", fmt.Sprintf("Salt buckets of the row keys of new tables (1: no salt byte; 2..256; default %d with HBase, 1 for the embedded store, which gains nothing from salt). Fixed when the tables are created; left out, an adapter takes the tables' own.", rowkey.DefaultLayout.SaltBuckets)).
		PlaceHolder("N").IntVar(&c.layout.SaltBuckets)
	codecs := []string{"SNAPPY", "LZ4", "ZSTD", "GZ", "LZO", "BZIP2", "LZMA", "NONE"}
	app.Flag("hbase.data-compression", "Block compression of the data table's raw family r, the samples of the hours not compacted yet (one of HBase's: SNAPPY, LZ4, ZSTD, GZ, LZO, BZIP2, LZMA, or NONE; a codec the region servers have). With compression its blocks are ROW_INDEX_V1 encoded, which makes reads seek cheaply, without it FAST_DIFF. Applied to an existing table at start.").
		Default(store.DefaultDataCompression).EnumVar(&c.compression, codecs...)
	app.Flag("hbase.chunk-compression", "Block compression of the data table's chunk family t, the compacted hours kept for the retention, and of its fence family f (codecs and encoding as --hbase.data-compression). GZ holds them in about a quarter fewer bytes than SNAPPY; reads from HBase's block cache are the same. Applied to an existing table at start.").
		Default(store.DefaultChunkCompression).EnumVar(&c.chunkCompression, codecs...)
	app.Flag("hbase.raw-memstore", "In-memory compaction of the data table's raw family r, which takes every sample written (HBase's IN_MEMORY_COMPACTION: BASIC or NONE). BASIC keeps the skip list each write is inserted into at a few MiB, flattening it into sorted arrays as it fills, and turns the family's MSLAB off, which keeps such a memstore's heap bounded: about 30 % less region server CPU per sample. Applied to an existing table at start.").
		Default(store.DefaultRawMemstore).EnumVar(&c.rawMemstore, store.RawMemstoreBasic, store.RawMemstoreNone)
	app.Flag("storage.float-chunks", "How the compactor (and the import) store a closed hour's float samples. 'auto': as a dense cell (decimal mantissas bit-packed, about 1 byte a sample for what exporters write) where that takes at least a fifth fewer bytes than Prometheus XOR chunks, else as XOR chunks; 'xor': XOR chunks only, which a streamed remote read sends on as they are, where it re-encodes a dense cell's samples (about 10 ns a sample). Adapters of either setting read both.").
		Default(store.FloatChunksAuto).EnumVar(&c.floatChunks, store.FloatChunksAuto, store.FloatChunksXOR)
	app.Flag("hbase.data-regions", "Regions the data table is created with, split at salt bucket boundaries ('auto': one per live region server; 0: one per bucket). Fewer regions make small write requests and small queries cheaper: HBase pays per region a request touches. Used only when the table is created.").
		Default("auto").StringVar(&c.dataRegions)
	app.Flag("uid.cache-size", "Entries of each of the six UID caches (forward and reverse, per kind); the default suits about a million active series. Hit ratio: promhbase_uid_cache_hits_total / (hits + misses).").
		Default(fmt.Sprint(labels2uid.DefaultCacheSize)).IntVar(&c.uidCacheSize)

	app.Flag("limits.max-labels", "Most labels in one series, __name__ included (400 above).").
		Default(fmt.Sprint(store.DefaultMaxLabels)).IntVar(&c.limits.MaxLabels)
	app.Flag("limits.max-label-name-length", "Longest label name in bytes (400 above; at most 32000, what a UID table row key holds).").
		Default(fmt.Sprint(store.DefaultMaxLabelNameLength)).IntVar(&c.limits.MaxLabelNameLength)
	app.Flag("limits.max-label-value-length", "Longest label value in bytes (400 above; at most 32000, what a UID table row key holds).").
		Default(fmt.Sprint(store.DefaultMaxLabelValueLength)).IntVar(&c.limits.MaxLabelValueLength)
}

// EmbeddedSaltBuckets is the salt buckets of new embedded stores. Salt
// spreads a metric's writes over region servers; one Pebble store has none
// to spread them over, and each bucket costs a query a seek (a streamed
// read of make bench's data cost 7-24 % more CPU a sample with 16 buckets,
// BENCHMARKS.md "The embedded store: salt buckets").
const EmbeddedSaltBuckets = 1

// checkLayout validates the layout flags given, before any table is
// touched; those left out are the tables' own or the defaults.
func (c *storageFlags) checkLayout() error {
	if err := c.layout.WithDefaults(rowkey.DefaultLayout).Validate(); err != nil {
		return fmt.Errorf("row-key layout flags: %w", err)
	}
	return nil
}

// defaultLayout is the layout of new tables where the flags leave it out:
// the store's, but for the salt of an embedded store.
func (c *storageFlags) defaultLayout() rowkey.Layout {
	if c.zkQuorum == "" {
		return rowkey.Layout{SaltBuckets: EmbeddedSaltBuckets}
	}
	return rowkey.Layout{}
}

// storeConfig is the store's configuration from the flags.
func (c *storageFlags) storeConfig(dataRegions int, reg prometheus.Registerer, logger *slog.Logger) store.Config {
	return store.Config{
		DataRegions:         dataRegions,
		DataCompression:     c.compression,
		ChunkCompression:    c.chunkCompression,
		RawMemstore:         c.rawMemstore,
		FloatChunks:         c.floatChunks,
		TablePrefix:         c.tablePrefix,
		Layout:              c.layout,
		DefaultLayout:       c.defaultLayout(),
		Retention:           time.Duration(c.retention),
		MaxLabels:           c.limits.MaxLabels,
		MaxLabelNameLength:  c.limits.MaxLabelNameLength,
		MaxLabelValueLength: c.limits.MaxLabelValueLength,
		UIDCacheSize:        c.uidCacheSize,
		CompactGrace:        storeGrace(c.compactGrace),
		WriteTimeout:        c.writeTimeout,
		Registerer:          reg,
		Logger:              logger,
	}
}

func run(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "import":
			return runImport(args[1:])
		case "check":
			return runCheck(args[1:])
		}
	}
	cfg, err := parseFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "adapter:", err)
		return 2
	}
	logger := promslog.New(&cfg.log)
	if err := serve(cfg, logger); err != nil {
		logger.Error("adapter stopped", "err", err)
		return 1
	}
	return 0
}

// openDB opens the backend the flags name.
func openDB(ctx context.Context, cfg *storageFlags, logger *slog.Logger) (table.DB, error) {
	if cfg.zkQuorum != "" {
		if cfg.multisInFlight < 1 {
			return nil, fmt.Errorf("--hbase.write-multis-in-flight=%d: at least 1", cfg.multisInFlight)
		}
		logger.Info("opening HBase", "zookeeper", cfg.zkQuorum, "root", cfg.zkRoot)
		db, err := hbasetable.Open(ctx, hbasetable.Config{ZooKeeper: cfg.zkQuorum, ZKRoot: cfg.zkRoot, RPCTimeout: cfg.rpcTimeout,
			DisableWriteCoalescing: !cfg.coalesce, WriteMultisInFlight: cfg.multisInFlight})
		if err != nil {
			return nil, fmt.Errorf("connect to HBase via ZooKeeper %s: %w", cfg.zkQuorum, err)
		}
		return db, nil
	}
	logger.Info("opening embedded storage", "path", cfg.storagePath)
	// --storage.cache-size=0 asks for no cache, where the backend's 0 means
	// its default: a cache of one byte keeps nothing.
	db, err := pebbletable.Open(cfg.storagePath, pebbletable.Options{Logger: logger, CacheBytes: max(int64(cfg.storageCache), 1), MemTableBytes: int64(cfg.storageMemTable)})
	if err != nil {
		return nil, fmt.Errorf("open embedded storage: %w", err)
	}
	return db, nil
}

// dataRegions is --hbase.data-regions as a region count: a number, or
// "auto", one region per live region server.
func dataRegions(ctx context.Context, db table.DB, flag string) (int, error) {
	if flag != "auto" {
		n, err := strconv.Atoi(flag)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("--hbase.data-regions=%s: neither a region count nor auto", flag)
		}
		return n, nil
	}
	hdb, ok := db.(*hbasetable.DB)
	if !ok {
		return 0, nil
	}
	servers, err := hdb.Client().LiveRegionServers(ctx)
	if err != nil {
		return 0, fmt.Errorf("list the live region servers: %w", err)
	}
	return max(1, len(servers)), nil
}

func serve(cfg *config, logger *slog.Logger) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	db, err := openDB(ctx, &cfg.storageFlags, logger)
	if err != nil {
		return err
	}
	if hdb, ok := db.(*hbasetable.DB); ok {
		reg.MustRegister(hbasemetrics.NewCollector(hdb.Client()))
	}
	defer func() {
		if cerr := db.Close(); cerr != nil {
			logger.Error("closing storage", "err", cerr)
			if err == nil {
				err = fmt.Errorf("close storage: %w", cerr)
			}
		}
	}()
	regions, err := dataRegions(ctx, db, cfg.dataRegions)
	if err != nil {
		return err
	}
	faultDB, armFaults := cfg.testing.wrap(db, logger)
	st, err := store.Open(ctx, tablemetrics.Wrap(faultDB, tablemetrics.NewMetrics(reg)), cfg.storeConfig(regions, reg, logger))
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	armFaults()
	defer func() {
		if err := st.Close(); err != nil {
			logger.Error("closing store", "err", err)
		}
	}()

	stopCompactor, err := startCompactor(ctx, st, cfg.compactor, reg, logger)
	if err != nil {
		return err
	}
	defer stopCompactor()
	defer startRetention(ctx, st)()

	m := remote.NewMetrics(reg)
	mux := http.NewServeMux()
	mux.Handle("/api/v1/write", remote.NewWriteHandler(st, cfg.write, m, logger))
	mux.Handle("/api/v1/read", remote.NewReadHandler(st, cfg.read, m, logger))
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	// Go's profiles, where Prometheus serves them: on the web port.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "Healthy.")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := st.Ping(ctx); err != nil {
			http.Error(w, "Storage not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "Ready.")
	})

	// The requests' contexts end once the shutdown's grace is over (or the
	// server failed), before the store and the backend close (the defers
	// above): a read that outlived the grace stops, a write in flight is
	// answered 503, and neither goes on into a closed store.
	reqs, endRequests := context.WithCancel(context.Background())
	defer endRequests()
	srv := &http.Server{
		BaseContext:       func(net.Listener) context.Context { return reqs },
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- web.ListenAndServe(srv, cfg.web, logger) }()

	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: finishing in-flight requests", "timeout", cfg.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("in-flight requests cut short", "err", err)
		endRequests()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Warn("http server", "err", err)
	}
	logger.Info("stopped")
	return nil
}
