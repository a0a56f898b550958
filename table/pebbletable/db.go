// Package pebbletable is the embedded backend of the table interface: many
// tables in one Pebble (an LSM engine in-process) directory, kept across
// restarts.
//
// It owns the mapping of tables, rows and cells onto Pebble keys (keys.go),
// the table catalog stored next to the data, retention (cells older than their
// family's TTL are hidden at once and deleted by a background sweep, since
// Pebble has no TTL), and the row locks that make Increment and CheckAndPut
// atomic. It must not know what the rows mean (the time-series layout).
package pebbletable

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prom-hbase/prom-hbase/table"
)

// Options configures a DB.
type Options struct {
	// Now is the clock that TTLs and LatestTimestamp count from (nil: time.Now).
	Now func() time.Time
	// SweepInterval is how often the sweeper looks for tables due a sweep,
	// the physical deletion of expired cells (0: one hour; negative: never).
	// A table is swept once every eighth of its shortest TTL, or every
	// SweepInterval if that is longer (see sweep.go).
	SweepInterval time.Duration
	// Logger receives the backend's and Pebble's logs (nil: slog.Default()).
	Logger *slog.Logger
	// CacheBytes is the size of Pebble's block cache, which holds blocks
	// decompressed (0: DefaultCacheBytes). A block read from outside it is
	// a system call and a decompression, even from the OS's page cache.
	CacheBytes int64
	// MemTableBytes is the size of one of Pebble's memtables, the writes
	// not yet flushed to a table file (0: DefaultMemTableBytes). Up to two
	// are held while one flushes.
	MemTableBytes int64
	// CloseWait is how long Close waits for the calls under way and the
	// scanners open to end (0: DefaultCloseWait).
	CloseWait time.Duration
}

// DefaultCloseWait is Close's wait for calls under way: a query whose
// context is cancelled stops within a few thousand cells.
const DefaultCloseWait = 10 * time.Second

// DefaultCacheBytes is the block cache of a DB whose Options name none:
// 64 MiB, where Pebble's own default is 8. Queries of the last hours read
// the same blocks again and again (dashboards); with 8 MiB, `store`'s
// BenchmarkSelectChunksPerMetric read half the samples a second it did
// with 64 (BENCHMARKS.md, "The embedded store: block cache and scans per
// query").
const DefaultCacheBytes = 64 << 20

// DefaultMemTableBytes is the memtable of a DB whose Options name none:
// 64 MiB, where Pebble's own default is 4. Every flush of a store's raw
// cells spans the whole key space (each series writes into its own row),
// so each L0 compaction rewrites the base level's files across it; with 4
// MiB flushes the compactions took three quarters of the adapter's CPU
// and a sustained ingest ran at 103k samples/s and 12.3 CPU-s per M, with
// 64 MiB at 406-454k and 3.7-4.0 (BENCHMARKS.md, "The embedded store:
// memtable size").
const DefaultMemTableBytes = 64 << 20

// DB is a set of tables in one Pebble directory. It implements table.DB.
type DB struct {
	pdb    *pebble.DB
	now    func() time.Time
	logger *slog.Logger
	locks  rowLocks
	ops    opGate // calls under way and scanners open, which Close waits for
	// closeWait bounds that wait (Options.CloseWait).
	closeWait time.Duration

	mu     sync.RWMutex // guards tables and nextID; held across catalog writes
	tables map[string]*tbl
	nextID uint32

	stopSweep context.CancelFunc
	sweepDone chan struct{}
	sweepMu   sync.Mutex // one sweep at a time
}

var _ table.DB = (*DB)(nil)

// tableRecord is a table's catalog entry.
type tableRecord struct {
	ID uint32 `json:"id"`
	// Families are in key byte order: CreateTable's sorted by name, then
	// those AddFamily added, each with the next byte.
	Families []familyRecord `json:"families"`
}

type familyRecord struct {
	Name string `json:"name"`
	// Index is the family's byte in cell keys, for good: an added family
	// takes a byte no family had, the others keep theirs. Entries written
	// before families could be added have none; theirs is the position in
	// Families, sorted by name (see checkFamilies). Families stay in key
	// byte order, so that a version without this field still finds each
	// family's cells.
	Index *int `json:"index,omitempty"`

	TTLMillis   int64 `json:"ttl_ms,omitempty"`
	MaxVersions int   `json:"max_versions,omitempty"`
	// Recorded as asked, not applied (Pebble has no such notions), so that
	// Describe answers what the table was created or altered with and a
	// caller comparing specs sees no difference to mend.
	BloomFilter        string `json:"bloom_filter,omitempty"`
	DataBlockEncoding  string `json:"data_block_encoding,omitempty"`
	Compression        string `json:"compression,omitempty"`
	InMemory           bool   `json:"in_memory,omitempty"`
	NewVersionBehavior bool   `json:"new_version_behavior,omitempty"`
	InMemoryCompaction string `json:"in_memory_compaction,omitempty"`
}

// newFamilyRecord is the catalog entry of a family spec, its key byte index.
func newFamilyRecord(f table.FamilySpec, index int) familyRecord {
	return familyRecord{
		Name: f.Name, Index: &index, TTLMillis: f.TTL.Milliseconds(), MaxVersions: f.MaxVersions,
		BloomFilter: f.BloomFilter, DataBlockEncoding: f.DataBlockEncoding, Compression: f.Compression,
		InMemory: f.InMemory, NewVersionBehavior: f.NewVersionBehavior, InMemoryCompaction: f.InMemoryCompaction,
	}
}

// index is the family's key byte; set on every entry checkFamilies passed.
func (f familyRecord) index() int { return *f.Index }

// checkFamilies gives the entries of rec that have no key byte index
// (written before AddFamily existed) the one they had then, their position
// in Families, and checks that no two families share a name or a byte.
func checkFamilies(rec *tableRecord) error {
	var names map[string]bool
	var used [maxFamilies]bool
	for i := range rec.Families {
		f := &rec.Families[i]
		if f.Index == nil {
			f.Index = &i
		}
		if f.Name == "" || names[f.Name] || f.index() < 0 || f.index() >= maxFamilies || used[f.index()] {
			return fmt.Errorf("family %q with key byte %d: empty, repeated or out of range", f.Name, f.index())
		}
		if names == nil {
			names = map[string]bool{}
		}
		names[f.Name] = true
		used[f.index()] = true
	}
	return nil
}

// spec is the family spec of a catalog entry.
func (f familyRecord) spec() table.FamilySpec {
	return table.FamilySpec{
		Name: f.Name, TTL: time.Duration(f.TTLMillis) * time.Millisecond, MaxVersions: f.MaxVersions,
		BloomFilter: f.BloomFilter, DataBlockEncoding: f.DataBlockEncoding, Compression: f.Compression,
		InMemory: f.InMemory, NewVersionBehavior: f.NewVersionBehavior, InMemoryCompaction: f.InMemoryCompaction,
	}
}

// Open opens (creating it if needed) the database in dir.
func Open(dir string, opts Options) (*DB, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = time.Hour
	}
	pdb, err := pebble.Open(dir, &pebble.Options{
		Logger:             pebbleLogger{opts.Logger},
		FormatMajorVersion: pebble.FormatNewest,
		CacheSize:          cmp.Or(opts.CacheBytes, DefaultCacheBytes),
		MemTableSize:       uint64(cmp.Or(opts.MemTableBytes, DefaultMemTableBytes)),
	})
	if err != nil {
		return nil, fmt.Errorf("open pebble in %s: %w", dir, err)
	}
	db := &DB{
		pdb:       pdb,
		now:       opts.Now,
		logger:    opts.Logger,
		tables:    map[string]*tbl{},
		closeWait: cmp.Or(opts.CloseWait, DefaultCloseWait),
	}
	db.locks.init()
	if err := db.loadCatalog(); err != nil {
		_ = pdb.Close()
		return nil, err
	}
	if _, err := db.checkKeys(); err != nil {
		_ = pdb.Close()
		return nil, err
	}
	db.sweepDone = make(chan struct{})
	if opts.SweepInterval > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		db.stopSweep = cancel
		go db.sweepLoop(ctx, opts.SweepInterval)
	} else {
		close(db.sweepDone)
	}
	return db, nil
}

func (db *DB) loadCatalog() error {
	lower := appendCatalogKey(nil, "")
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixSuccessor(lower)})
	if err != nil {
		return fmt.Errorf("read table catalog: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		name := string(it.Key()[len(lower):])
		var rec tableRecord
		if err := json.Unmarshal(it.Value(), &rec); err != nil {
			return fmt.Errorf("table catalog entry %q: %w", name, err)
		}
		if err := checkFamilies(&rec); err != nil {
			return fmt.Errorf("table catalog entry %q: %w", name, err)
		}
		db.tables[name] = newTbl(db, name, rec)
		db.nextID = max(db.nextID, rec.ID+1)
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("read table catalog: %w", err)
	}
	return nil
}

var errClosed = errors.New("pebbletable: database closed")

// check reports whether a call may go on, without counting it in (enter):
// for a call counted in already (a loop's later steps) or one that reads
// nothing of Pebble (Ping).
func (db *DB) check(ctx context.Context) error {
	if db.ops.isClosed() {
		return errClosed
	}
	return ctx.Err()
}

// CreateTable implements table.DB. Split keys are accepted and ignored: one
// Pebble keyspace has no regions.
func (db *DB) CreateTable(ctx context.Context, spec table.TableSpec) error {
	if err := db.enter(ctx); err != nil {
		return err
	}
	defer db.exit()
	if spec.Name == "" {
		return errors.New("create table: empty name")
	}
	if len(spec.Families) == 0 || len(spec.Families) > maxFamilies {
		return fmt.Errorf("create table %q: %d families, want 1 to 256", spec.Name, len(spec.Families))
	}
	rec := tableRecord{Families: make([]familyRecord, 0, len(spec.Families))}
	for _, f := range spec.Families {
		if f.Name == "" || f.TTL < 0 {
			return fmt.Errorf("create table %q: invalid family %+v", spec.Name, f)
		}
		rec.Families = append(rec.Families, familyRecord{})
	}
	// Key bytes in name order: a row's cells come out of Pebble sorted.
	fams := slices.SortedFunc(slices.Values(spec.Families), func(a, b table.FamilySpec) int { return cmpString(a.Name, b.Name) })
	for i, f := range fams {
		if i > 0 && f.Name == fams[i-1].Name {
			return fmt.Errorf("create table %q: family %q given twice", spec.Name, f.Name)
		}
		rec.Families[i] = newFamilyRecord(f, i)
	}

	db.mu.Lock()
	defer db.mu.Unlock()
	if _, ok := db.tables[spec.Name]; ok {
		return fmt.Errorf("create table %q: %w", spec.Name, table.ErrTableExists)
	}
	rec.ID = db.nextID
	if err := db.writeCatalog(spec.Name, rec); err != nil {
		return fmt.Errorf("create table %q: %w", spec.Name, err)
	}
	db.nextID++
	db.tables[spec.Name] = newTbl(db, spec.Name, rec)
	return nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Table implements table.DB.
func (db *DB) Table(ctx context.Context, name string) (table.Table, error) {
	if err := db.enter(ctx); err != nil {
		return nil, err
	}
	defer db.exit()
	db.mu.RLock()
	t, ok := db.tables[name]
	db.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("table %q: %w", name, table.ErrTableNotFound)
	}
	return t, nil
}

// Ping implements table.DB.
func (db *DB) Ping(ctx context.Context) error {
	return db.check(ctx)
}

// Close refuses new calls, stops the sweeper, waits for the calls under
// way and the scanners open to end (at most Options.CloseWait), and closes
// Pebble. When they outlast the wait it returns an error and leaves Pebble
// open, the process being about to end: every write it acknowledged is
// synced already, and Pebble panics on use after its Close. Calls after
// the first return nil.
func (db *DB) Close() error {
	idle, n, first := db.ops.close()
	if !first {
		return nil
	}
	if db.stopSweep != nil {
		db.stopSweep()
	}
	<-db.sweepDone
	if n > 0 {
		t := time.NewTimer(db.closeWait)
		defer t.Stop()
		select {
		case <-idle:
		case <-t.C:
			return fmt.Errorf("close: calls or scans still under way after %v (%d at the start of the wait); Pebble left open, every acknowledged write synced", db.closeWait, n)
		}
	}
	if err := db.pdb.Close(); err != nil {
		return fmt.Errorf("close pebble: %w", err)
	}
	return nil
}

func (db *DB) nowMillis() int64 { return db.now().UnixMilli() }

// pebbleLogger sends Pebble's logs to slog; its routine chatter (flushes,
// compactions, WAL rotation) goes to debug.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l.Enabled(context.Background(), slog.LevelDebug) {
		p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf is called by Pebble on unrecoverable corruption; it must not return.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "component", "pebble")
	panic("pebble: " + msg)
}
