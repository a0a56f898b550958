package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/prom-hbase/prom-hbase/table"
	"github.com/prom-hbase/prom-hbase/uid"
)

// The compaction table (<prefix>prom-compact, family c) is the compactor's
// to-do list and its locks, so that finding work never scans the data table.
//
// Row key: the base hour (u32 big-endian seconds) then the salt bucket (one
// byte; 0 unsalted). Rows sort by hour: the oldest pending hour comes first.
// Cells:
//   - a mark: qualifier 'r' + metric UID (MetricWidth bytes) + the writing
//     process's ID (8 random bytes), value 0x01, timestamp the writer's
//     clock in ms, strictly increasing within a process. It says "rows of
//     this metric in this bucket-hour may hold raw cells in FamilyRaw", and
//     reads take that family of those rows only then (rawhours.go). Each
//     process writes its own cell, so a compactor deleting the version it
//     read never removes a newer one (see Compactor). Versions before
//     FamilyRaw wrote 'm' marks, for raw cells in FamilyData: the compactor
//     takes both, and an adapter of such a version, which knows only 'm',
//     never deletes a mark that makes reads take FamilyRaw.
//   - the lease: qualifier "lease", value holder ID (8 bytes) + expiry (u64
//     ms, the holder's clock); see lease.go.
const (
	CompactTableSuffix = "prom-compact"
	familyCompact      = "c"
	markPrefix         = 'r'
	legacyMarkPrefix   = 'm'
	idLen              = 8
)

var leaseQualifier = []byte("lease")

// MarkRefresh is how long a process trusts a mark it wrote: within it, more
// samples for the same (bucket, metric, hour) add no put. The compactor
// deletes a mark only once it is older than its quiet period, which must
// exceed MarkRefresh plus the longest write plus clock skew between
// processes: every sample a trusted mark covered has then landed, and the
// compactor's read of the rows sees it.
const MarkRefresh = time.Minute

func compactTableSpec(cfg Config) table.TableSpec {
	return table.TableSpec{
		Name: cfg.TablePrefix + CompactTableSuffix,
		Families: []table.FamilySpec{{
			Name: familyCompact, MaxVersions: 1, BloomFilter: "ROW", InMemory: true,
			// A mark written after the compactor deleted an older version of
			// it must stay visible whatever its timestamp.
			NewVersionBehavior: true,
		}},
	}
}

// todoList is the write path's side of the compaction table: it marks the
// (bucket, metric, hour)s that received raw cells, once per MarkRefresh per
// process.
type todoList struct {
	t      table.Table
	id     [idLen]byte
	prefix int // row-key prefix that names (bucket, metric, hour)
	salt   int // salt width
	metric int // metric UID width
	clock  stampClock
	now    func() time.Time

	mu        sync.RWMutex
	marked    map[markKey]int64 // row-key prefix -> when its mark was written, unix ms
	lastPrune int64
}

// markKey is a row key's prefix naming a (bucket, metric, hour), at most 13
// bytes (rowkey.Layout.HeaderWidth), zero-padded: a map key that costs no
// allocation where a string of the bytes costs one a new hour's mark.
type markKey [16]byte

func markKeyOf(prefix []byte) (k markKey) {
	copy(k[:], prefix)
	return k
}

// openTodo opens (creating it if needed) the compaction table.
func openTodo(ctx context.Context, db table.DB, cfg Config) (*todoList, error) {
	if w := cfg.Layout.HeaderWidth(); w > len(markKey{}) {
		return nil, fmt.Errorf("open compaction table: row keys of %d-byte prefixes (salt, metric, hour), more than the %d a mark's key holds", w, len(markKey{}))
	}
	t, err := table.EnsureTable(ctx, db, compactTableSpec(cfg))
	if err != nil {
		return nil, fmt.Errorf("open compaction table: %w", err)
	}
	l := cfg.Layout
	td := &todoList{
		t: t, id: newProcessID(),
		prefix: l.HeaderWidth(), salt: l.SaltWidth(), metric: l.MetricWidth,
		now: time.Now, marked: map[markKey]int64{},
	}
	return td, nil
}

func newProcessID() [idLen]byte {
	var id [idLen]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
	return id
}

// noteDirty makes sure that the compaction table marks every (bucket,
// metric, hour) that cells (raw cells of the data table, any number of rows)
// write to. The write path calls it before it puts the cells: a mark that
// is written while its samples are not is harmless (the compactor finds
// nothing), a sample without a mark would never be compacted. Marks this
// process wrote less than MarkRefresh ago are not written again, so in the
// steady state it costs a map lookup per row and one small put per bucket,
// metric and minute.
func (s *Store) noteDirty(ctx context.Context, cells []table.Cell) error {
	if s.todo == nil {
		return nil
	}
	return s.todo.note(ctx, cells)
}

func (td *todoList) note(ctx context.Context, cells []table.Cell) error {
	now := td.now().UnixMilli()
	var (
		prev []byte
		todo [][]byte
	)
	td.mu.RLock()
	for i := range cells {
		row := cells[i].Row
		if len(row) < td.prefix || (prev != nil && bytes.Equal(row[:td.prefix], prev)) {
			continue
		}
		prev = row[:td.prefix]
		if at, ok := td.marked[markKeyOf(prev)]; ok && now-at < MarkRefresh.Milliseconds() {
			continue
		}
		dup := false
		for _, p := range todo {
			if bytes.Equal(p, prev) {
				dup = true
				break
			}
		}
		if !dup {
			todo = append(todo, prev)
		}
	}
	td.mu.RUnlock()
	if len(todo) == 0 {
		return nil
	}
	// One buffer holds every mark's row and qualifier: a write that enters
	// a new hour marks each of its (bucket, metric)s, hundreds at once.
	// The marks are of distinct columns, so one stamp serves them all: a
	// stamp per mark ran the clock a millisecond a mark ahead of the wall
	// clock, seconds for a write entering a new hour with thousands of
	// metrics, and so delayed their compaction by as much.
	ts := td.clock.next(now)
	marks := make([]table.Cell, len(todo))
	buf := make([]byte, 0, len(todo)*td.markLen())
	for i, p := range todo {
		marks[i], buf = td.appendMark(buf, p, ts)
	}
	if err := td.t.Put(ctx, marks); err != nil {
		return fmt.Errorf("mark %d bucket-hours for compaction: %w", len(marks), err)
	}
	td.mu.Lock()
	defer td.mu.Unlock()
	for _, p := range todo {
		td.marked[markKeyOf(p)] = now
	}
	if now-td.lastPrune > MarkRefresh.Milliseconds() {
		for k, at := range td.marked {
			if now-at >= MarkRefresh.Milliseconds() {
				delete(td.marked, k)
			}
		}
		td.lastPrune = now
	}
	return nil
}

// parseMark reads a compaction table qualifier as a mark of a metric of
// metricWidth bytes: its kind (markPrefix or legacyMarkPrefix) and metric
// UID; ok is false for any other cell (the lease).
func parseMark(q []byte, metricWidth int) (kind byte, metric uint64, ok bool) {
	if len(q) != 1+metricWidth+idLen || (q[0] != markPrefix && q[0] != legacyMarkPrefix) {
		return 0, 0, false
	}
	return q[0], uid.Decode(q[1 : 1+metricWidth]), true
}

// markValue is every mark's value; marks share it, and nothing writes
// into a cell's value once it is built.
var markValue = []byte{1}

// markLen is the bytes appendMark appends for one mark.
func (td *todoList) markLen() int { return todoKeyLen + 1 + td.metric + idLen }

// appendMark returns the mark of the data rows whose keys start with prefix
// (salt, metric UID, base hour), its row and qualifier appended to buf.
func (td *todoList) appendMark(buf, prefix []byte, ts int64) (table.Cell, []byte) {
	salt := byte(0)
	if td.salt == 1 {
		salt = prefix[0]
	}
	metric := prefix[td.salt : td.salt+td.metric]
	hour := binary.BigEndian.Uint32(prefix[td.salt+td.metric : td.prefix])
	at := len(buf)
	buf = appendTodoKey(buf, hour, salt)
	row := buf[at:len(buf):len(buf)]
	at = len(buf)
	buf = append(append(append(buf, markPrefix), metric...), td.id[:]...)
	q := buf[at:len(buf):len(buf)]
	return table.Cell{Row: row, Family: familyCompact, Qualifier: q, Timestamp: ts, Value: markValue}, buf
}

// todoKey is the compaction table's row of a bucket-hour.
func todoKey(hour uint32, salt byte) []byte {
	return appendTodoKey(make([]byte, 0, todoKeyLen), hour, salt)
}

// appendTodoKey appends todoKey(hour, salt) to dst.
func appendTodoKey(dst []byte, hour uint32, salt byte) []byte {
	return append(binary.BigEndian.AppendUint32(dst, hour), salt)
}

// todoKeyLen is the length of a todoKey: the base hour, then the bucket.
const todoKeyLen = 5

// parseTodoKey splits a compaction table row key.
func parseTodoKey(key []byte) (hour uint32, salt byte, ok bool) {
	if len(key) != todoKeyLen {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(key), key[4], true
}

// stampClock hands out strictly increasing millisecond timestamps that
// follow the wall clock, one per put of marks, so that two marks one process
// writes to the same column never share a version (a put holds a column
// once).
type stampClock struct {
	mu   sync.Mutex
	last int64
}

func (c *stampClock) next(now int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now <= c.last {
		now = c.last + 1
	}
	c.last = now
	return now
}
