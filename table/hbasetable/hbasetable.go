// Package hbasetable is the HBase backend of the table interface, on top of
// the project's native client (package hbase). It owns the mapping from
// table's notions (cells, key filters, table specs) to HBase's (mutations,
// server-side filters, column family attributes); it must not know the
// time-series layout stored in the tables.
package hbasetable

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prom-hbase/prom-hbase/hbase"
	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
	"github.com/prom-hbase/prom-hbase/table"
)

// Config says how to reach HBase.
type Config struct {
	// ZooKeeper is the comma-separated quorum, host:port each.
	ZooKeeper string
	// ZKRoot is zookeeper.znode.parent ("" means /hbase).
	ZKRoot string
	// RPCTimeout bounds one attempt of one call (0: the client's default).
	RPCTimeout time.Duration
	// DisableWriteCoalescing makes each Put and Delete send Multis of its
	// own instead of sharing them with concurrent ones (see
	// hbase.Config.DisableWriteCoalescing).
	DisableWriteCoalescing bool
	// WriteMultisInFlight is how many Multis of writes go to one region
	// server at once before further writes wait to share one (0: the
	// client's default; see hbase.Config.WriteMultisInFlight).
	WriteMultisInFlight int
}

// DB is an HBase cluster as a table.DB.
type DB struct {
	c *hbase.Client
}

var _ table.DB = (*DB)(nil)

// Open connects to HBase and checks that it answers.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	if cfg.ZooKeeper == "" {
		return nil, errors.New("hbasetable: no ZooKeeper quorum given")
	}
	db := &DB{c: hbase.New(hbase.Config{ZooKeeper: cfg.ZooKeeper, ZKRoot: cfg.ZKRoot, RPCTimeout: cfg.RPCTimeout,
		DisableWriteCoalescing: cfg.DisableWriteCoalescing, WriteMultisInFlight: cfg.WriteMultisInFlight})}
	if err := db.Ping(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("hbasetable: connect to HBase via ZooKeeper %s: %w", cfg.ZooKeeper, err)
	}
	return db, nil
}

// Client is the underlying HBase client.
func (db *DB) Client() *hbase.Client { return db.c }

// Ping reads a row of hbase:meta, so it fails unless the server holding
// meta answers. It asks neither the master nor, while meta's location is
// cached, ZooKeeper: reads and writes need neither, so an adapter stays
// ready (and in its load balancer) while they restart or fail over.
func (db *DB) Ping(ctx context.Context) error {
	_, err := db.c.Get(ctx, "hbase:meta", &hrpc.Get{Row: []byte("hbase:namespace")})
	return err
}

// Close closes the connections.
func (db *DB) Close() error { return db.c.Close() }

func isClass(err error, class string) bool {
	var x *hbase.Exception
	return errors.As(err, &x) && x.Class == class
}

// CreateTable creates the table and waits until every region is served.
func (db *DB) CreateTable(ctx context.Context, spec table.TableSpec) error {
	fams := make([]hrpc.Family, len(spec.Families))
	for i, f := range spec.Families {
		fams[i] = family(f)
	}
	err := db.c.CreateTable(ctx, spec.Name, fams, spec.SplitKeys)
	if isClass(err, hrpc.TableExists) {
		return fmt.Errorf("hbasetable: create %s: %w (%v)", spec.Name, table.ErrTableExists, err)
	}
	if err != nil {
		return fmt.Errorf("hbasetable: %w", err)
	}
	return nil
}

// Table opens an existing table. A table still being created by someone
// else is waited for, so that its first use finds every region served.
func (db *DB) Table(ctx context.Context, name string) (table.Table, error) {
	// An enabled table is opened on hbase:meta's word alone: an adapter
	// then starts while the master is down or failing over. Any other
	// answer (absent, being created or enabled, meta not answering) is
	// the master's to give.
	if st, found, err := db.c.TableStateInMeta(ctx, name); err == nil && found && st == pb.TableState_ENABLED {
		return &Table{c: db.c, name: name}, nil
	}
	err := db.c.WaitEnabled(ctx, name)
	if hbase.IsTableNotFound(err) {
		return nil, fmt.Errorf("hbasetable: %s: %w", name, table.ErrTableNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("hbasetable: open %s: %w", name, err)
	}
	return &Table{c: db.c, name: name}, nil
}

// family maps a family spec onto HBase's attributes.
func family(f table.FamilySpec) hrpc.Family {
	h := hrpc.Family{
		Name: f.Name, MaxVersions: f.MaxVersions, TTL: f.TTL,
		BloomFilter: f.BloomFilter, DataBlockEncoding: f.DataBlockEncoding, Compression: f.Compression,
		InMemory: f.InMemory, NewVersionBehavior: f.NewVersionBehavior, InMemoryCompaction: f.InMemoryCompaction,
	}
	if h.MaxVersions == 0 {
		h.MaxVersions = 1
	}
	if strings.EqualFold(f.InMemoryCompaction, "BASIC") {
		// Flattened segments indexed in MSLAB chunks held a 1 GiB region
		// server's heap until it failed (BENCHMARKS.md, "Ingest: the raw
		// family's memstore"); plain arrays do not.
		h.NoMSLAB = true
		h.PipelineSegments = basicPipelineSegments
	}
	return h
}

// basicPipelineSegments is the flattened segments a BASIC memstore keeps
// before merging them. HBase's default, 2, merges everything not yet
// flushed at every second flattening: 19 % of the region server's CPU at
// 200 samples a request (a JFR profile), 7 % at 16, and at 64 only the
// flattening (3 %). A read of the memstore looks into each segment, so
// more segments cost reads of cells not yet flushed: against the default,
// 16 took about half of 64's ingest gain, and reads of a full memstore
// lost up to a fifth against up to a third at 64 (BENCHMARKS.md, "Ingest:
// merging the memstore's segments").
const basicPipelineSegments = 16

// memstoreSetting is the in-memory compaction of a family as Describe
// reports it: a BASIC family without the MSLAB and pipeline settings that
// family() gives one (made by an older adapter or by hand) is reported
// with what differs, so a store comparing it with its spec alters it.
func memstoreSetting(f hrpc.Family) string {
	if !strings.EqualFold(f.InMemoryCompaction, "BASIC") {
		return f.InMemoryCompaction
	}
	var odd []string
	if !f.NoMSLAB {
		odd = append(odd, "MSLAB on")
	}
	if f.PipelineSegments != basicPipelineSegments {
		n := "the region server's"
		if f.PipelineSegments > 0 {
			n = strconv.Itoa(f.PipelineSegments)
		}
		odd = append(odd, "pipeline segments "+n)
	}
	if len(odd) == 0 {
		return f.InMemoryCompaction
	}
	return f.InMemoryCompaction + " (" + strings.Join(odd, ", ") + ")"
}

// Describe reads the table's families from its descriptor.
func (db *DB) Describe(ctx context.Context, name string) (table.TableSpec, error) {
	fams, err := db.c.TableFamilies(ctx, name)
	if hbase.IsTableNotFound(err) {
		return table.TableSpec{}, fmt.Errorf("hbasetable: describe %s: %w", name, table.ErrTableNotFound)
	}
	if err != nil {
		return table.TableSpec{}, fmt.Errorf("hbasetable: %w", err)
	}
	spec := table.TableSpec{Name: name, Families: make([]table.FamilySpec, len(fams))}
	for i, f := range fams {
		spec.Families[i] = table.FamilySpec{
			Name: f.Name, MaxVersions: f.MaxVersions, TTL: f.TTL,
			BloomFilter: f.BloomFilter, DataBlockEncoding: f.DataBlockEncoding, Compression: f.Compression,
			InMemory: f.InMemory, NewVersionBehavior: f.NewVersionBehavior, InMemoryCompaction: memstoreSetting(f),
		}
	}
	return spec, nil
}

// AlterFamily replaces the family's descriptor with fam's attributes, all
// of them (what fam leaves empty returns to HBase's default), and waits
// until every region has reopened with it.
func (db *DB) AlterFamily(ctx context.Context, name string, fam table.FamilySpec) error {
	err := db.c.ModifyFamily(ctx, name, family(fam))
	if hbase.IsTableNotFound(err) {
		return fmt.Errorf("hbasetable: alter family %s of %s: %w", fam.Name, name, table.ErrTableNotFound)
	}
	if err != nil {
		return fmt.Errorf("hbasetable: %w", err)
	}
	return nil
}

// AddFamily adds the family, with fam's attributes translated as
// CreateTable's, and waits until every region has reopened with it.
func (db *DB) AddFamily(ctx context.Context, name string, fam table.FamilySpec) error {
	err := db.c.AddFamily(ctx, name, family(fam))
	switch {
	case hbase.IsTableNotFound(err):
		return fmt.Errorf("hbasetable: add family %s to %s: %w", fam.Name, name, table.ErrTableNotFound)
	case isClass(err, hrpc.InvalidFamilyOperation):
		// What the master answers AddColumn of a family the table has.
		return fmt.Errorf("hbasetable: add family %s to %s: %w (%v)", fam.Name, name, table.ErrFamilyExists, err)
	case err != nil:
		return fmt.Errorf("hbasetable: %w", err)
	}
	return nil
}
