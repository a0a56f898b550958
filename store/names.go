package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/prom-hbase/prom-hbase/labels2uid"
)

// nameCache keeps the metric names and tag keys that have UIDs, for the
// queries that name no single metric (DESIGN.md section 4): scanning the UID
// table on each of them costs what the table holds, on every query.
//
// It is loaded with one scan of the forward mappings on first use. After
// that, each use reads the UID counters (one row, one Get) and, when they
// moved, fetches the reverse mappings of the new UIDs by their exact keys: a
// metric is visible to the next query once its UID is assigned, whichever
// adapter assigned it. UIDs are never reused nor renamed, so nothing else can
// go stale. A UID counted but without a reverse mapping yet (an assignment in
// flight) is looked at again by the next uses, for pendingFor; after that it
// is taken for a leaked UID (a writer that died or lost the race).
//
// It reads the UID table only through labels2uid's Resolver (Counters, Each,
// NamesOf), which owns its layout.
type nameCache struct {
	uids *labels2uid.Resolver
	now  func() time.Time

	mu      sync.Mutex
	loaded  bool
	metrics []metricRef // sorted by name, then UID
	// early counts the tag keys that sort before __name__: a series with one
	// does not sort by its metric name first.
	early   int
	counted [2]uint64 // highest UID looked at, per kind (Metric, TagK)
	pending [2]map[uint64]time.Time
	// ahead are the UIDs above the counters read before the first scan
	// that the scan found (assigned while it ran): update, which looks up
	// the UIDs counted since, must not add them again.
	ahead [2]map[uint64]bool
}

// pendingFor is how long a counted UID without a reverse mapping is looked
// for again. Assignment writes the reverse mapping right after the counter.
const pendingFor = time.Minute

// cachedKinds are the kinds the cache keeps.
var cachedKinds = [2]labels2uid.Kind{labels2uid.Metric, labels2uid.TagK}

// snapshot is what a query gets: the metrics by name and whether any tag key
// sorts before __name__. Callers must not modify metrics.
type nameSnapshot struct {
	metrics []metricRef
	early   bool
}

func newNameCache(uids *labels2uid.Resolver) *nameCache {
	return &nameCache{uids: uids, now: time.Now}
}

// get brings the cache up to date with the UID counters and returns it.
func (nc *nameCache) get(ctx context.Context) (nameSnapshot, error) {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	counters, err := nc.readCounters(ctx)
	if err != nil {
		return nameSnapshot{}, err
	}
	if !nc.loaded {
		if err := nc.load(ctx, counters); err != nil {
			return nameSnapshot{}, err
		}
	} else if err := nc.update(ctx, counters); err != nil {
		return nameSnapshot{}, err
	}
	return nameSnapshot{metrics: nc.metrics, early: nc.early > 0}, nil
}

// readCounters reads the counter of each cached kind.
func (nc *nameCache) readCounters(ctx context.Context) ([2]uint64, error) {
	all, err := nc.uids.Counters(ctx)
	var out [2]uint64
	for i, k := range cachedKinds {
		out[i] = all[k]
	}
	return out, err
}

// load scans the forward mappings once. UIDs up to the counters read before
// the scan that it did not find are pending: their assignment was in flight.
func (nc *nameCache) load(ctx context.Context, counters [2]uint64) error {
	seen := [2]map[uint64]bool{{}, {}}
	// The empty name is metric UID 0, without a row: series without __name__.
	nc.metrics = append(nc.metrics[:0], metricRef{})
	err := nc.uids.Each(ctx, func(k labels2uid.Kind, name string, uid uint64) error {
		for i, ck := range cachedKinds {
			if k == ck {
				seen[i][uid] = true
				nc.add(k, name, uid)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list metric names and tag keys: %w", err)
	}
	now := nc.now()
	for i := range cachedKinds {
		nc.pending[i] = map[uint64]time.Time{}
		for uid := uint64(1); uid <= counters[i]; uid++ {
			if !seen[i][uid] {
				nc.pending[i][uid] = now
			}
		}
		nc.ahead[i] = map[uint64]bool{}
		for uid := range seen[i] {
			if uid > counters[i] {
				nc.ahead[i][uid] = true
			}
		}
		nc.counted[i] = max(counters[i], nc.counted[i])
	}
	nc.sortMetrics()
	nc.loaded = true
	return nil
}

// update fetches the reverse mappings of the UIDs counted since the last use
// and of those still pending.
func (nc *nameCache) update(ctx context.Context, counters [2]uint64) error {
	now := nc.now()
	changed := false
	for i, k := range cachedKinds {
		for uid := nc.counted[i] + 1; uid <= counters[i]; uid++ {
			if nc.ahead[i][uid] {
				delete(nc.ahead[i], uid)
				continue
			}
			nc.pending[i][uid] = now
		}
		nc.counted[i] = max(counters[i], nc.counted[i])
		if len(nc.pending[i]) == 0 {
			continue
		}
		uids := make([]uint64, 0, len(nc.pending[i]))
		for uid, since := range nc.pending[i] {
			if now.Sub(since) > pendingFor {
				delete(nc.pending[i], uid)
				continue
			}
			uids = append(uids, uid)
		}
		found, err := nc.uids.NamesOf(ctx, k, uids)
		if err != nil {
			return err
		}
		for uid, name := range found {
			if !changed {
				// Snapshots handed out keep the array they were given.
				nc.metrics = slices.Clone(nc.metrics)
			}
			delete(nc.pending[i], uid)
			nc.add(k, name, uid)
			changed = true
		}
	}
	if changed {
		nc.sortMetrics()
	}
	return nil
}

func (nc *nameCache) add(k labels2uid.Kind, name string, uid uint64) {
	switch k {
	case labels2uid.Metric:
		nc.metrics = append(nc.metrics, metricRef{uid: uid, name: name})
	case labels2uid.TagK:
		if sortsBeforeName(name) {
			nc.early++
		}
	}
}

func (nc *nameCache) sortMetrics() {
	slices.SortFunc(nc.metrics, func(a, b metricRef) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return compareUint64(a.uid, b.uid)
	})
}

// sortsBeforeName reports whether a label name sorts before __name__, so
// that a series carrying it is ordered by it before its metric name.
func sortsBeforeName(name string) bool { return name < model.MetricNameLabel }

func compareUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
