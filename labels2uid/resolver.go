package labels2uid

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/prom-hbase/prom-hbase/table"
)

// Config configures a Resolver. The zero value is usable.
type Config struct {
	// Widths are the UID widths (zero value: DefaultWidths).
	Widths Widths
	// CacheSize bounds each of the six caches (forward and reverse, per
	// kind) in entries (0: DefaultCacheSize).
	CacheSize int
	// Registerer receives the resolver's metrics (nil: none).
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// DefaultCacheSize is the default bound of each UID cache: a million series
// bring about a million tag values (pod and container names churn), fewer
// names and metrics. At roughly 100 bytes an entry a full cache of tag values
// holds about 100 MiB in each direction.
const DefaultCacheSize = 1 << 20

// Resolver maps strings to UIDs and back through the UID table. It is safe
// for concurrent use; several Resolvers (in one process or many) may share a
// UID table.
type Resolver struct {
	tbl     table.Table
	widths  Widths
	logger  *slog.Logger
	forward [NumKinds]*cache[string, uint64]
	reverse [NumKinds]*cache[uint64, string]

	flightMu sync.Mutex
	flights  map[flightKey]*flight

	assigned  *prometheus.CounterVec
	wasted    *prometheus.CounterVec
	remaining *prometheus.GaugeVec
	// exhaustedLogged is when a kind's running out was last logged (ns).
	exhaustedLogged [NumKinds]atomic.Int64
	mu              sync.Mutex              // orders updates of remaining
	counters        [NumKinds]atomic.Uint64 // highest counter value seen per kind
}

type flightKey struct {
	kind Kind
	name string
}

// flight is one string being assigned; done closes when uid (0: the kind's
// UID space is used up) or err is set.
type flight struct {
	done chan struct{}
	uid  uint64
	err  error
}

// New returns a Resolver over tbl, the UID table (families FamilyID and
// FamilyName).
func New(ctx context.Context, tbl table.Table, cfg Config) (*Resolver, error) {
	if cfg.Widths == (Widths{}) {
		cfg.Widths = DefaultWidths
	}
	if err := cfg.Widths.Validate(); err != nil {
		return nil, err
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Resolver{
		tbl:     tbl,
		widths:  cfg.Widths,
		logger:  cfg.Logger,
		flights: make(map[flightKey]*flight),
		assigned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_uid_assignments_total",
			Help: "New UIDs this process assigned, by kind.",
		}, []string{"kind"}),
		wasted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhbase_uid_wasted_total",
			Help: "UIDs this process reserved but did not use, by kind: lost races with other writers, or beyond the kind's width.",
		}, []string{"kind"}),
		remaining: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "promhbase_uid_remaining",
			Help: "UIDs left to assign, by kind, as of this process's last look at the counter.",
		}, []string{"kind"}),
	}
	for k := range NumKinds {
		r.forward[k] = newCache[string, uint64](cfg.CacheSize, hashString)
		r.reverse[k] = newCache[uint64, string](cfg.CacheSize, hashUID)
		// Exported from the start, so that rates and alerts see a zero.
		r.assigned.WithLabelValues(Kind(k).String())
		r.wasted.WithLabelValues(Kind(k).String())
	}
	rows, err := tbl.Get(ctx, FamilyID, [][]byte{counterRow})
	if err != nil {
		return nil, fmt.Errorf("read UID counters: %w", err)
	}
	for k := range NumKinds {
		var n uint64
		if c := findCell(rows[0], qualifiers[k]); c != nil && len(c.Value) == 8 {
			n = binary.BigEndian.Uint64(c.Value)
		}
		r.setRemaining(Kind(k), n)
	}
	if cfg.Registerer != nil {
		if err := r.register(cfg.Registerer); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Resolver) register(reg prometheus.Registerer) error {
	cs := []prometheus.Collector{r.assigned, r.wasted, r.remaining}
	for k := range NumKinds {
		for _, dir := range []struct {
			name                            string
			hits, misses, entries, capacity func() float64
		}{
			{"forward",
				func() float64 { h, _ := r.forward[k].stats(); return float64(h) },
				func() float64 { _, m := r.forward[k].stats(); return float64(m) },
				func() float64 { return float64(r.forward[k].len()) },
				func() float64 { return float64(r.forward[k].capacity()) }},
			{"reverse",
				func() float64 { h, _ := r.reverse[k].stats(); return float64(h) },
				func() float64 { _, m := r.reverse[k].stats(); return float64(m) },
				func() float64 { return float64(r.reverse[k].len()) },
				func() float64 { return float64(r.reverse[k].capacity()) }},
		} {
			lbls := prometheus.Labels{"kind": Kind(k).String(), "direction": dir.name}
			cs = append(cs,
				prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "promhbase_uid_cache_hits_total", Help: "UID cache lookups answered from memory.", ConstLabels: lbls}, dir.hits),
				prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "promhbase_uid_cache_misses_total", Help: "UID cache lookups that went to the UID table.", ConstLabels: lbls}, dir.misses),
				prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "promhbase_uid_cache_entries", Help: "Entries in the UID cache.", ConstLabels: lbls}, dir.entries),
				prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "promhbase_uid_cache_capacity", Help: "Most entries the UID cache holds (--uid.cache-size).", ConstLabels: lbls}, dir.capacity),
			)
		}
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register UID metrics: %w", err)
		}
	}
	return nil
}

// Widths returns the UID widths.
func (r *Resolver) Widths() Widths { return r.widths }

// Cached returns the UID of name from the cache only. It is the write path's
// fast path: no allocation, no I/O.
func (r *Resolver) Cached(kind Kind, name string) (uint64, bool) {
	if name == "" {
		return 0, true
	}
	return r.forward[kind].get(name)
}

// Batch is a set of strings to resolve in one round trip, per kind, and the
// answers. Reuse it with Reset.
type Batch struct {
	Names [NumKinds][]string
	UIDs  [NumKinds][]uint64
	// Found reports, after Lookup, which names have a UID.
	Found [NumKinds][]bool

	keys    [][]byte
	keyIdx  map[string]int
	missing []missRef
}

type missRef struct {
	kind Kind
	i    int
	row  int
}

// Add queues name and returns its index in b.Names[kind].
func (b *Batch) Add(kind Kind, name string) int {
	b.Names[kind] = append(b.Names[kind], name)
	return len(b.Names[kind]) - 1
}

// Len is the number of queued names.
func (b *Batch) Len() int { return len(b.Names[0]) + len(b.Names[1]) + len(b.Names[2]) }

// Reset empties b, keeping its memory.
func (b *Batch) Reset() {
	for k := range NumKinds {
		clear(b.Names[k]) // drop string references
		b.Names[k] = b.Names[k][:0]
		b.UIDs[k] = b.UIDs[k][:0]
		b.Found[k] = b.Found[k][:0]
	}
}

// Lookup sets b.UIDs and b.Found for the strings that have a UID, without
// assigning any.
func (r *Resolver) Lookup(ctx context.Context, b *Batch) error {
	return r.lookup(ctx, b)
}

func (r *Resolver) lookup(ctx context.Context, b *Batch) error {
	b.keys = b.keys[:0]
	b.missing = b.missing[:0]
	if b.keyIdx == nil {
		b.keyIdx = make(map[string]int)
	}
	clear(b.keyIdx)
	for k := range NumKinds {
		names := b.Names[k]
		b.UIDs[k] = resize(b.UIDs[k], len(names))
		b.Found[k] = resize(b.Found[k], len(names))
		for i, name := range names {
			if reserved(name) {
				return fmt.Errorf("%s %q: %w", Kind(k), name, ErrReserved)
			}
			if name == "" {
				b.UIDs[k][i], b.Found[k][i] = 0, true
				continue
			}
			uid, ok := r.forward[k].get(name)
			b.UIDs[k][i], b.Found[k][i] = uid, ok
			if ok {
				continue
			}
			// A string missed as both tag key and tag value is one forward row.
			row, seen := b.keyIdx[name]
			if !seen {
				row = len(b.keys)
				b.keyIdx[name] = row
				b.keys = append(b.keys, []byte(name))
			}
			b.missing = append(b.missing, missRef{kind: Kind(k), i: i, row: row})
		}
	}
	if len(b.missing) == 0 {
		return nil
	}
	rows, err := r.tbl.Get(ctx, FamilyID, b.keys)
	if err != nil {
		return fmt.Errorf("read forward UID mappings: %w", err)
	}
	for _, m := range b.missing {
		c := findCell(rows[m.row], qualifiers[m.kind])
		if c == nil {
			continue
		}
		uid, err := r.decode(m.kind, c.Value)
		if err != nil {
			return fmt.Errorf("forward mapping of %s %q: %w", m.kind, b.Names[m.kind][m.i], err)
		}
		b.UIDs[m.kind][m.i], b.Found[m.kind][m.i] = uid, true
		r.forward[m.kind].put(b.Names[m.kind][m.i], uid)
	}
	return nil
}

// setRemaining updates the gauge from a counter value; concurrent
// assignments report their values in any order, so only the highest counts.
func (r *Resolver) setRemaining(kind Kind, counter uint64) {
	for {
		seen := r.counters[kind].Load()
		if counter < seen {
			return
		}
		if r.counters[kind].CompareAndSwap(seen, counter) {
			break
		}
	}
	max := MaxUID(r.widths[kind])
	left := uint64(0)
	if counter < max {
		left = max - counter
	}
	r.mu.Lock()
	// Set under the lock and re-checked, so a lower value never lands last.
	if r.counters[kind].Load() == counter {
		r.remaining.WithLabelValues(kind.String()).Set(float64(left))
	}
	r.mu.Unlock()
}

func (r *Resolver) decode(kind Kind, b []byte) (uint64, error) {
	if len(b) != r.widths[kind] {
		return 0, fmt.Errorf("UID is %d bytes, want %d (UID width mismatch)", len(b), r.widths[kind])
	}
	return DecodeUID(b), nil
}

// Names appends to dst the strings of the UIDs of kind, in order. A UID
// without a reverse mapping is an error: data rows only use UIDs whose
// reverse mapping was written first.
func (r *Resolver) Names(ctx context.Context, kind Kind, uids []uint64, dst []string) ([]string, error) {
	base := len(dst)
	var missIdx []int
	var miss []uint64
	for i, uid := range uids {
		if uid == 0 {
			dst = append(dst, "")
			continue
		}
		name, ok := r.reverse[kind].get(uid)
		dst = append(dst, name)
		if !ok {
			missIdx = append(missIdx, i)
			miss = append(miss, uid)
		}
	}
	// One Get for them all: the client splits it into Multis by region
	// server and sends those at once, where batches would go one by one.
	err := r.readNames(ctx, kind, miss, len(miss), func(j int, name string, ok bool) error {
		if !ok {
			return fmt.Errorf("%s UID %d has no name in the UID table", kind, miss[j])
		}
		dst[base+missIdx[j]] = name
		return nil
	})
	return dst, err
}

// readNames reads the reverse mappings of uids of kind, which the reverse
// cache missed, at most batch (>= 1) a Get, and caches those it finds. It
// calls found for each UID in order, with its index in uids and whether it
// has a mapping, and stops at found's first error: what a missing mapping
// means is the caller's to say.
func (r *Resolver) readNames(ctx context.Context, kind Kind, uids []uint64, batch int, found func(j int, name string, ok bool) error) error {
	batch = max(batch, 1)
	keys := make([][]byte, 0, min(batch, len(uids)))
	for done := 0; done < len(uids); {
		n := min(batch, len(uids)-done)
		keys = keys[:0]
		for _, uid := range uids[done : done+n] {
			keys = append(keys, AppendUID(nil, uid, r.widths[kind]))
		}
		rows, err := r.tbl.Get(ctx, FamilyName, keys)
		if err != nil {
			return fmt.Errorf("read the reverse mappings of %d %s UIDs: %w", n, kind, err)
		}
		for k, row := range rows {
			j := done + k
			var name string
			c := findCell(row, qualifiers[kind])
			if c != nil {
				name = string(c.Value)
				r.reverse[kind].put(uids[j], name)
			}
			if err := found(j, name, c != nil); err != nil {
				return err
			}
		}
		done += n
	}
	return nil
}

func findCell(row table.Row, qualifier []byte) *table.Cell {
	for i := range row.Cells {
		if bytes.Equal(row.Cells[i].Qualifier, qualifier) {
			return &row.Cells[i]
		}
	}
	return nil
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
