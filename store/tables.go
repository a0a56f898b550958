package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prom-hbase/prom-hbase/labels2uid"
	"github.com/prom-hbase/prom-hbase/table"
)

// uidTableSpec is the UID table: small, read on every cache miss, and its
// counter cells take every assignment's increment. Hence ROW blooms (a miss
// costs one block read or none), DIFF block encoding (string rows share long
// prefixes: about half the bytes, as OpenTSDB's tsdb-uid), the in-memory
// hint, and no NEW_VERSION_BEHAVIOR: with it, each increment of a counter
// costs HBase about ten times the CPU (37 s against 3 s for 10,000), and the
// UID table needs none of what it gives (its cells are never re-written after
// a delete).
func uidTableSpec(cfg Config) table.TableSpec {
	fam := func(name string) table.FamilySpec {
		return table.FamilySpec{Name: name, BloomFilter: "ROW", DataBlockEncoding: "DIFF", InMemory: true}
	}
	return table.TableSpec{
		Name:     cfg.TablePrefix + UIDTableSuffix,
		Families: []table.FamilySpec{fam(labels2uid.FamilyID), fam(labels2uid.FamilyName), fam(FamilyMeta)},
	}
}

// dataTableSpec is the data table: chunks in FamilyData, raw cells waiting
// for the compactor in FamilyRaw, with the same attributes but their block
// compression, and the compacted rows' fence cells in FamilyFence, which
// the compactor writes with the chunks and which live as long: they take
// the chunks' compression (BENCHMARKS.md, "Fence cells: bytes"). They keep
// NEW_VERSION_BEHAVIOR so that a cell re-written after a delete (a late or
// retried sample after the compactor removed the raw cells) is visible
// whatever its timestamp. The TTL is the retention, counted from each
// sample's own time.
//
// Blocks are compressed (Config.DataCompression, SNAPPY by default, for raw
// cells; Config.ChunkCompression, GZ by default, for chunks) and
// ROW_INDEX_V1 encoded: a query seeks to each of a metric's salt-bucket
// ranges, and in a FAST_DIFF block a seek decodes every cell from the
// block's start, about three quarters of HBase's CPU on reads of compacted
// hours; ROW_INDEX_V1 finds the row by binary search and leaves keys whole,
// which the compression then shrinks. Measured on make bench's data set
// (HFiles after a major compaction; HBase CPU of a warm read of it all):
// compacted hours 3.38 bytes/sample and 24 ms FAST_DIFF, 2.82 and 15 ms
// ROW_INDEX_V1 + SNAPPY; raw cells 12.4 and 13.0 bytes/sample. Without
// compression, ROW_INDEX_V1 would hold raw cells in 69 bytes/sample, so a
// family stays FAST_DIFF then.
//
// The two families differ in codec because they differ in heat. Raw cells
// are written at the ingest rate and live an hour or so: SNAPPY costs
// their flushes little. Chunks are a sixth of the bytes, written once by
// the compactor, and kept for the retention: GZ holds the same compacted
// hours in 2.18 bytes/sample against SNAPPY's 2.83 (make bench's data
// set), and reads served from HBase's block cache, which holds blocks
// decompressed, read the same (BENCHMARKS.md, "Chunk compression").
//
// The raw family's memstore is compacted in memory (Config.RawMemstore,
// BASIC by default, the MSLAB off): every sample is a cell inserted into
// it, and HBase spent a third of its ingest CPU walking the skip list (a
// JFR profile at 10,000 series, 2,000 samples a request).
func dataTableSpec(cfg Config) table.TableSpec {
	fam := func(name, compression string) table.FamilySpec {
		encoding := "ROW_INDEX_V1"
		if compression == "NONE" {
			encoding = "FAST_DIFF"
		}
		return table.FamilySpec{
			Name:               name,
			MaxVersions:        1,
			TTL:                cfg.Retention,
			BloomFilter:        "ROW",
			DataBlockEncoding:  encoding,
			Compression:        compression,
			NewVersionBehavior: true,
		}
	}
	raw := fam(FamilyRaw, cfg.DataCompression)
	raw.InMemoryCompaction = cfg.RawMemstore
	spec := table.TableSpec{
		Name:     cfg.TablePrefix + DataTableSuffix,
		Families: []table.FamilySpec{fam(FamilyData, cfg.ChunkCompression), raw, fam(FamilyFence, cfg.ChunkCompression)},
	}
	spec.SplitKeys = dataSplitKeys(cfg.Layout.SaltBuckets, cfg.DataRegions)
	return spec
}

// dataSplitKeys splits buckets salt buckets into regions regions of
// near-equal bucket counts (0 or more than buckets: one per bucket): a
// bucket's rows all begin with its byte, so the split keys are bucket bytes.
func dataSplitKeys(buckets, regions int) [][]byte {
	if regions <= 0 || regions > buckets {
		regions = buckets
	}
	var keys [][]byte
	for r := 1; r < regions; r++ {
		keys = append(keys, []byte{byte(r * buckets / regions)})
	}
	return keys
}

// ensureTable opens the table of spec, creating it when absent, and brings
// the attributes of an existing table's families to spec's where they
// differ: tables created by an earlier version, or a changed retention.
// These changes touch no data: HBase applies them as regions reopen.
//
// Once they match, the schema row of uid (the UID table; nil: the table
// itself) records spec's families. A later start whose spec is the one
// recorded waits for the families' description at most describeWait, then
// starts on the record: HBase describes a table only through the master,
// and an adapter should start while the master fails over, as it serves.
// Without that record it needs the description, as the backend's retries
// allow, since families it cannot check may lack what reads and writes
// count on (the raw family, NEW_VERSION_BEHAVIOR).
func ensureTable(ctx context.Context, db table.DB, spec table.TableSpec, uid table.Table, logger *slog.Logger) (table.Table, error) {
	t, err := table.EnsureTable(ctx, db, spec)
	if err != nil {
		return nil, err
	}
	if uid == nil {
		uid = t
	}
	recorded, err := familiesRecorded(ctx, uid, spec)
	if err != nil {
		return nil, err
	}
	dctx := ctx
	if recorded {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(ctx, describeWait)
		defer cancel()
	}
	have, err := db.Describe(dctx, spec.Name)
	if err != nil && recorded && ctx.Err() == nil {
		logger.Warn("the table's families could not be described (HBase: the master did not answer), so they were not checked: they are as an earlier start with these settings left them",
			"table", spec.Name, "err", err)
		return t, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describe table %s: %w", spec.Name, err)
	}
	for _, want := range spec.Families {
		got, ok := findFamily(have, want.Name)
		if !ok {
			if !addable[want.Name] {
				return nil, fmt.Errorf("table %s has no family %q: was it created by something else?", spec.Name, want.Name)
			}
			if err := addFamily(ctx, db, spec.Name, want, logger); err != nil {
				return nil, err
			}
			continue
		}
		diff := familyDiff(got, want)
		if len(diff) == 0 {
			continue
		}
		if err := db.AlterFamily(ctx, spec.Name, want); err != nil {
			return nil, fmt.Errorf("table %s: bring family %s to %s: %w", spec.Name, want.Name, strings.Join(diff, ", "), err)
		}
		// Report what took effect: a backend ignores what it has no notion
		// of (Pebble has no block encoding), and that is no change.
		now, err := db.Describe(ctx, spec.Name)
		if err != nil {
			return nil, fmt.Errorf("describe table %s: %w", spec.Name, err)
		}
		after, _ := findFamily(now, want.Name)
		if changed := familyDiff(got, after); len(changed) > 0 {
			logger.Info("table family altered to this adapter's settings; no data was changed",
				"table", spec.Name, "family", want.Name, "changes", strings.Join(changed, ", "))
		}
	}
	if !recorded {
		if err := recordFamilies(ctx, uid, spec); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// describeWait is how long a start whose table families are recorded
// waits for their description before it starts on the record.
var describeWait = 15 * time.Second // tests shorten it

// addable are the families a table created by an earlier version may lack:
// ensureTable adds them.
var addable = map[string]bool{FamilyRaw: true, FamilyFence: true}

// addFamily adds a family to an existing table; another adapter adding it
// first is as good.
func addFamily(ctx context.Context, db table.DB, name string, fam table.FamilySpec, logger *slog.Logger) error {
	err := db.AddFamily(ctx, name, fam)
	if errors.Is(err, table.ErrFamilyExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("table %s: add family %s: %w", name, fam.Name, err)
	}
	logger.Info("family added to a table created by an earlier version; no data was changed", "table", name, "family", fam.Name)
	return nil
}

func findFamily(spec table.TableSpec, name string) (table.FamilySpec, bool) {
	for _, f := range spec.Families {
		if f.Name == name {
			return f, true
		}
	}
	return table.FamilySpec{}, false
}

// familyDiff lists the attributes the store cares about that differ between
// two descriptions of a family, as "ATTRIBUTE have -> want". An empty
// attribute is HBase's default.
func familyDiff(have, want table.FamilySpec) []string {
	var d []string
	add := func(name, a, b string) {
		if a != b {
			d = append(d, fmt.Sprintf("%s %s -> %s", name, a, b))
		}
	}
	add("TTL", ttlString(have.TTL), ttlString(want.TTL))
	add("BLOOMFILTER", orDefault(have.BloomFilter, "ROW"), orDefault(want.BloomFilter, "ROW"))
	add("DATA_BLOCK_ENCODING", orDefault(have.DataBlockEncoding, "NONE"), orDefault(want.DataBlockEncoding, "NONE"))
	if want.Compression != "" {
		add("COMPRESSION", orDefault(have.Compression, "NONE"), orDefault(want.Compression, "NONE"))
	}
	add("IN_MEMORY", fmt.Sprint(have.InMemory), fmt.Sprint(want.InMemory))
	add("NEW_VERSION_BEHAVIOR", fmt.Sprint(have.NewVersionBehavior), fmt.Sprint(want.NewVersionBehavior))
	if want.InMemoryCompaction != "" {
		add("IN_MEMORY_COMPACTION", memstoreName(have.InMemoryCompaction), memstoreName(want.InMemoryCompaction))
	}
	return d
}

// memstoreName is an in-memory compaction as familyDiff compares it: the
// policy upper-cased, a backend's remark after it kept as written
// (hbasetable describes "BASIC (MSLAB on)" for a BASIC family it would not
// have made so).
func memstoreName(s string) string {
	policy, remark, _ := strings.Cut(s, " ")
	if remark != "" {
		remark = " " + remark
	}
	return orDefault(policy, "NONE") + remark
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return strings.ToUpper(s)
}

func ttlString(d time.Duration) string {
	if d <= 0 {
		return "forever"
	}
	return d.String()
}
