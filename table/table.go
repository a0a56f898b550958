// Package table is the wide-column table interface that the time-series store
// is written against, and the conformance suite (package tabletest) that every
// backend must pass.
//
// It owns the contract: rows sorted bytewise, cells addressed by (row, family,
// qualifier), one version per cell, timestamps in milliseconds. It must not know
// the time-series layout (row keys, UIDs, samples) nor any backend's wire or
// file format.
package table

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"
)

// LatestTimestamp asks the backend to stamp a cell with its own clock.
const LatestTimestamp int64 = 1<<63 - 1

// Cell is one value in a row. Timestamp is in milliseconds since the epoch; it
// is what retention (the family TTL) counts from.
type Cell struct {
	Row       []byte
	Family    string
	Qualifier []byte
	Timestamp int64
	Value     []byte
}

// Row is a row with its cells sorted by (family, qualifier).
type Row struct {
	Key   []byte
	Cells []Cell
}

// Scanner iterates over rows in key order. The Row returned by At and the byte
// slices inside it are valid only until the next call to Next. Close must be
// called when the caller stops early; it is safe to call it more than once.
type Scanner interface {
	Next() bool
	At() Row
	Err() error
	Close() error
}

// ScanOptions selects rows for Scan.
type ScanOptions struct {
	// Start is inclusive, Stop exclusive; nil means the table's start or end.
	Start, Stop []byte
	// Ranges, when not empty, restricts the scan to the rows in any of
	// these ranges, which must be sorted, disjoint and non-empty, each with
	// a Stop; Start and Stop are then ignored. One scan of several ranges
	// costs a backend one scanner where one scan each would cost one each
	// (HBase: a scan RPC and a region scanner per range, see RangeGrouper).
	Ranges []RowRange
	// Family restricts the scan to one family; empty means all.
	Family string
	// KeyOnly returns cells with empty values (qualifiers and timestamps kept).
	KeyOnly bool
	// FirstCellOnly returns only the first cell of each row; combined with
	// KeyOnly it is the cheapest way to list row keys.
	FirstCellOnly bool
	// Filter, when set, returns only the rows whose key it accepts.
	Filter *KeyFilter
	// QualifierPrefixes, when not empty, returns only the cells whose
	// qualifier starts with one of these prefixes, which must be non-empty
	// and sorted bytewise, none a prefix of another (CheckQualifierPrefixes);
	// a row left without cells is not returned. With FirstCellOnly, a row
	// gives its first cell that matches.
	QualifierPrefixes [][]byte
	// RowsPerCall hints how many rows a backend fetches per round trip (0: default).
	RowsPerCall int
}

// KeyFilter accepts row keys. A backend may evaluate it remotely (HBase:
// RowFilter with a RegexStringComparator, FuzzyRowFilter) or locally; the
// result is the same.
type KeyFilter struct {
	// Regex, when not empty, must match the whole key, the key read as
	// ISO-8859-1 (one character per byte). It uses only syntax that Java and
	// RE2 agree on: (?s), ^, $, ., [...] classes, (?:...), |, quantifiers *,
	// +, ?, {n}, {n,m}, and \xNN escapes for bytes.
	Regex string
	// When both Regex and Fuzzy are set, a key must satisfy both.
	//
	// Fuzzy, when not empty, accepts a key when any of its patterns does: the
	// key is at least as long as the pattern and equals it at every position
	// whose mask byte is 0 (a mask byte of 1 means any byte).
	Fuzzy []FuzzyKey
}

// FuzzyKey is one fixed-position pattern of a KeyFilter.
type FuzzyKey struct {
	Key, Mask []byte
}

// Table is one table of a backend. All methods are safe for concurrent use. A
// method returns nil only when everything it was asked to do is durable.
type Table interface {
	// Put writes the cells, in any number of rows, as one batch. Writing the
	// same (row, family, qualifier, timestamp) again overwrites the value.
	Put(ctx context.Context, cells []Cell) error
	// Delete removes, for each cell given, the column (row, family, qualifier)
	// in all its versions; a nil Qualifier removes the whole family in that row
	// and an empty Family removes the whole row. Values and timestamps are
	// ignored.
	Delete(ctx context.Context, cells []Cell) error
	// Get fetches the rows with exactly these keys, restricted to family when it
	// is not empty. The result has one Row per key, in the order asked; a
	// missing row has no cells.
	Get(ctx context.Context, family string, keys [][]byte) ([]Row, error)
	// Scan iterates over the rows in a key range.
	Scan(ctx context.Context, opts ScanOptions) Scanner
	// Increment atomically adds delta to the 8-byte big-endian counter in a
	// cell (absent = 0) and returns the new value.
	Increment(ctx context.Context, row []byte, family string, qualifier []byte, delta int64) (int64, error)
	// CheckAndPut writes put (cells of row) only if the cell (row, family,
	// qualifier) currently holds expected, or is absent when expected is nil.
	// It reports whether it wrote. Callers never store empty values in cells
	// they check: HBase cannot tell an empty value from an absent cell.
	CheckAndPut(ctx context.Context, row []byte, family string, qualifier, expected []byte, put []Cell) (bool, error)
	// CheckAndPutBatch applies each conditional put as CheckAndPut would,
	// independently of the others, in as few round trips as the backend can
	// (HBase: one Multi per region server, a condition on each RegionAction).
	// written[i] reports whether puts[i] wrote. Puts conditioned on the same
	// cell are applied one after the other, in an order the backend picks.
	// On error the outcome of some puts is unknown (written may be nil): a
	// caller that retries must take "not written, yet the cell holds what I
	// meant to write" as its own earlier success.
	CheckAndPutBatch(ctx context.Context, puts []CondPut) (written []bool, err error)
	// DeleteVersions removes, for each cell given, exactly the version of
	// (row, family, qualifier) whose timestamp is the cell's Timestamp; other
	// versions, and in families with NewVersionBehavior a version written
	// after the call, are not touched. Values are ignored; a Timestamp of
	// LatestTimestamp is refused. The compactor uses it to remove exactly the
	// raw cells it folded into a chunk.
	DeleteVersions(ctx context.Context, cells []Cell) error
	// CheckAndDeleteBatch applies each conditional deletion, as
	// DeleteVersions would, only where the cell (Row, Family, Qualifier)
	// holds Expected (absent when Expected is nil), in as few round trips as
	// the backend can (HBase: as CheckAndPutBatch). Each deletion is atomic
	// within its row. A batch names a row at most once (CheckCondDeletes), so
	// every condition is checked against the table as the batch found it.
	// deleted[i] reports whether dels[i] was applied. On error the outcome
	// of some is unknown; applying one twice is applying it once.
	CheckAndDeleteBatch(ctx context.Context, dels []CondDelete) (deleted []bool, err error)
}

// RowRangeDeleter is a Table that can remove every cell of ranges of rows
// at a cost independent of how many cells they hold (Pebble: a range
// deletion each). Wrappers implement it by forwarding, and answer
// errors.ErrUnsupported when the table they wrap does not (HBase, where
// the families' TTL does this work in major compactions).
type RowRangeDeleter interface {
	// DeleteRows removes every cell, in every family, of the rows in each
	// range [Start, Stop) (a nil Stop: to the end of the table), expired or
	// not. A range that holds nothing costs a seek and leaves no trace.
	DeleteRows(ctx context.Context, ranges []RowRange) error
}

// Compacter is a Table whose backend keeps deleted cells, and a marker per
// deletion, until it rewrites its files (HBase: until a major compaction,
// weekly by default), every read stepping over them meanwhile. Wrappers
// implement it by forwarding, and answer errors.ErrUnsupported when the
// table they wrap does not (Pebble, whose own compactions drop them).
type Compacter interface {
	// Compact writes out what the table holds in memory and rewrites its
	// files without the deleted cells and markers, at a cost in proportion
	// to the whole table: meant for small tables.
	Compact(ctx context.Context) error
}

// FamilyCompacter is a Table that rewrites the files of one family without
// its deleted cells and markers (see Compacter), at a cost in proportion to
// that family alone. It returns once the rewrite is asked for: the backend
// does it in the background. Wrappers forward it, and answer
// errors.ErrUnsupported when the table they wrap does not.
type FamilyCompacter interface {
	CompactFamily(ctx context.Context, family string) error
}

// RowRange is a range of row keys: Start inclusive, Stop exclusive.
type RowRange struct{ Start, Stop []byte }

// RangeGrouper is a Table that tells which ranges one scan serves at the
// cost of one: HBase serves ranges held by one region with one scanner (a
// MultiRowRangeFilter), while ranges in different regions, often on
// different servers, are better scanned in parallel. Wrappers implement it
// by forwarding, and answer one group per range when the table they wrap
// does not.
type RangeGrouper interface {
	// GroupRanges splits ranges (sorted, disjoint) into groups of ranges to
	// scan together with ScanOptions.Ranges, each group sorted, together
	// holding every range once. The grouping is a hint: a stale one costs
	// speed, never rows.
	GroupRanges(ctx context.Context, ranges []RowRange) ([][]RowRange, error)
}

// GroupRanges groups ranges with t's RangeGrouper, or one group per range
// when t has none.
func GroupRanges(ctx context.Context, t Table, ranges []RowRange) ([][]RowRange, error) {
	if g, ok := t.(RangeGrouper); ok {
		return g.GroupRanges(ctx, ranges)
	}
	return Ungrouped(ranges), nil
}

// CheckRanges enforces ScanOptions.Ranges' contract: sorted, disjoint,
// non-empty ranges, each with a Stop.
func CheckRanges(ranges []RowRange) error {
	for i, r := range ranges {
		if r.Stop == nil || bytes.Compare(r.Start, r.Stop) >= 0 {
			return fmt.Errorf("scan range %d [%q, %q) is empty or open", i, r.Start, r.Stop)
		}
		if i > 0 && bytes.Compare(ranges[i-1].Stop, r.Start) > 0 {
			return fmt.Errorf("scan range %d starts before range %d ends", i, i-1)
		}
	}
	return nil
}

// CheckQualifierPrefixes enforces ScanOptions.QualifierPrefixes' contract:
// non-empty prefixes, sorted bytewise, none a prefix of another. HBase's
// MultipleColumnPrefixFilter looks only at the greatest prefix not above a
// qualifier, so one prefix hiding in another would lose cells. In a sorted
// list a prefix of another is also a prefix of the one after it.
func CheckQualifierPrefixes(prefixes [][]byte) error {
	for i, p := range prefixes {
		if len(p) == 0 {
			return fmt.Errorf("qualifier prefix %d is empty", i)
		}
		if i == 0 {
			continue
		}
		if prev := prefixes[i-1]; bytes.Compare(prev, p) >= 0 {
			return fmt.Errorf("qualifier prefixes %d %q and %d %q are out of order", i-1, prev, i, p)
		} else if bytes.HasPrefix(p, prev) {
			return fmt.Errorf("qualifier prefix %d %q starts with prefix %d %q", i, p, i-1, prev)
		}
	}
	return nil
}

// Ungrouped is one group per range.
func Ungrouped(ranges []RowRange) [][]RowRange {
	out := make([][]RowRange, len(ranges))
	for i := range ranges {
		out[i] = ranges[i : i+1 : i+1]
	}
	return out
}

// CondDelete is one conditional deletion of CheckAndDeleteBatch: the
// versions Delete (cells of Row, each with its family and exact timestamp,
// as DeleteVersions takes them) are removed only if the cell (Row, Family,
// Qualifier) holds Expected, or is absent when Expected is nil.
type CondDelete struct {
	Row       []byte
	Family    string
	Qualifier []byte
	Expected  []byte
	Delete    []Cell
}

// CheckCondDeletes checks what CheckAndDeleteBatch asks of its deletions:
// each of its own row, and some cells, all of that row (HBase reads a
// delete of no cells as a delete of the whole row).
func CheckCondDeletes(dels []CondDelete) error {
	seen := make(map[string]struct{}, len(dels))
	for i := range dels {
		d := &dels[i]
		if _, dup := seen[string(d.Row)]; dup {
			return fmt.Errorf("conditional deletions %d and an earlier one name the same row %q", i, d.Row)
		}
		seen[string(d.Row)] = struct{}{}
		if len(d.Delete) == 0 {
			return fmt.Errorf("conditional deletion %d of row %q has no cells", i, d.Row)
		}
		for j := range d.Delete {
			if !bytes.Equal(d.Delete[j].Row, d.Row) {
				return fmt.Errorf("conditional deletion %d: cell %d is in row %q, not %q", i, j, d.Delete[j].Row, d.Row)
			}
		}
	}
	return nil
}

// CondPut is one conditional write of CheckAndPutBatch: Put (cells of Row)
// is written only if the cell (Row, Family, Qualifier) holds Expected, or is
// absent when Expected is nil.
type CondPut struct {
	Row       []byte
	Family    string
	Qualifier []byte
	Expected  []byte
	Put       []Cell
}

// FamilySpec describes a column family at table creation.
type FamilySpec struct {
	Name string
	// MaxVersions is HBase's VERSIONS (0: backend default of 1).
	MaxVersions int
	// TTL expires cells whose timestamp is older than now-TTL (0: forever).
	TTL time.Duration
	// BloomFilter (NONE, ROW, ROWCOL), DataBlockEncoding (NONE, FAST_DIFF, ...)
	// and Compression (NONE, SNAPPY, GZ, ...) are HBase's attributes; backends
	// without such notions ignore them. Empty means the backend's default.
	BloomFilter       string
	DataBlockEncoding string
	Compression       string
	// InMemory is HBase's IN_MEMORY hint (keep the family's blocks in the
	// in-memory priority of the block cache).
	InMemory bool
	// NewVersionBehavior is HBase's NEW_VERSION_BEHAVIOR: a delete hides
	// only the writes made before it, whatever their timestamps, so a cell
	// re-written after a delete is visible at once. The data family needs it
	// (late and retried samples after the compactor deleted raw cells); the
	// UID families must not have it (it makes each counter increment about
	// ten times dearer for HBase). Backends with one version per cell and no
	// delete markers (Pebble) always behave this way.
	NewVersionBehavior bool
	// InMemoryCompaction is HBase's IN_MEMORY_COMPACTION (NONE, BASIC, ...):
	// BASIC keeps the memstore's skip list, where each write is inserted,
	// small by flattening it into sorted arrays every few MiB; the HBase
	// backend turns the family's MSLAB off with it and lets more flattened
	// segments gather before merging them (hrpc.Family.NoMSLAB and
	// PipelineSegments), and describes a BASIC family set up otherwise with
	// a remark after the policy ("BASIC (MSLAB on)"). Empty means the
	// backend's default; Pebble records it and has no such notion.
	InMemoryCompaction string
}

// TableSpec describes a table at creation.
type TableSpec struct {
	Name      string
	Families  []FamilySpec
	SplitKeys [][]byte
}

// DB is a backend: a set of tables.
type DB interface {
	// CreateTable creates the table and waits until it is usable. It returns
	// ErrTableExists (wrapped) when a table of that name exists already.
	CreateTable(ctx context.Context, spec TableSpec) error
	// Table opens an existing table; ErrTableNotFound (wrapped) if absent.
	Table(ctx context.Context, name string) (Table, error)
	// Describe returns the table's families as the backend has them now
	// (SplitKeys is left empty); ErrTableNotFound (wrapped) if absent.
	// Attributes the backend ignores come back empty or false; those the
	// creating spec left empty may come back as the backend's defaults.
	Describe(ctx context.Context, name string) (TableSpec, error)
	// AlterFamily sets the attributes of an existing family of the table to
	// fam's (matched by name) and waits until the table serves with them.
	// Nothing of the stored data changes. Backends without a notion of an
	// attribute ignore it (Pebble keeps TTL and MaxVersions).
	AlterFamily(ctx context.Context, name string, fam FamilySpec) error
	// AddFamily adds fam to an existing table and waits until the table
	// serves with it; the other families and their data are untouched. It
	// returns ErrFamilyExists (wrapped) when the table has a family of that
	// name already, whatever its attributes, and ErrTableNotFound (wrapped)
	// when there is no such table. Of several callers racing to add the same
	// family, one succeeds and the others get ErrFamilyExists (or succeed
	// too): a caller that only needs the family there takes ErrFamilyExists
	// as success.
	AddFamily(ctx context.Context, name string, fam FamilySpec) error
	// Ping answers nil when the backend serves requests.
	Ping(ctx context.Context) error
	Close() error
}

var (
	ErrTableExists   = errors.New("table exists")
	ErrTableNotFound = errors.New("table not found")
	ErrFamilyExists  = errors.New("family exists")
)

// EnsureTable opens the table, creating it from spec first when it is absent.
// Safe when several processes race to create the same table.
func EnsureTable(ctx context.Context, db DB, spec TableSpec) (Table, error) {
	t, err := db.Table(ctx, spec.Name)
	if err == nil {
		return t, nil
	}
	if !errors.Is(err, ErrTableNotFound) {
		return nil, err
	}
	if err := db.CreateTable(ctx, spec); err != nil && !errors.Is(err, ErrTableExists) {
		return nil, err
	}
	return db.Table(ctx, spec.Name)
}
