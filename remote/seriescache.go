package remote

import (
	"hash/maphash"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"google.golang.org/protobuf/encoding/protowire"
)

// seriesCache remembers what the write path made of a remote-write series
// before: keyed by the bytes of a 1.0 TimeSeries message's label fields, it
// holds the decoded labels and the store's series ID (store.SeriesIn.ID).
// Prometheus sends every series again at every scrape with the same bytes,
// and a 1.0 series found here is neither decoded label by label, nor
// interned, nor checked against the label rules, nor resolved UID by UID:
// at 200 samples a request that was a third of the adapter's CPU
// (BENCHMARKS.md, "Ingest: the series cache"). A 1.0 series is looked up
// by its label fields exactly as sent; a 2.0 series, whose labels are
// references into its request's symbols, by its labels written as
// Prometheus writes 1.0 label fields (appendLabelFields), so a series sent
// both ways shares one entry; a 2.0 hit saves the checks, the UID lookups
// and the strings of its symbols.
//
// The same bytes always decode to the same labels, which pass the same
// rules under the same limits, and a series ID never changes once its UIDs
// are assigned; so an entry never goes stale while the tables live. Only
// series that were checked and resolved are put in.
//
// Memory is bounded by maxBytes, counted per entry from its key, labels
// and ID: each shard keeps two generations, and when the newer one holds
// half the shard's share the older one is dropped. A hit in the older
// generation moves the entry to the newer, so a series stays while it is
// sent again within half the cache's worth of new entries (every scrape,
// for a cache that holds twice the series of a scrape interval), and one
// gone stops taking room after two turns.
type seriesCache struct {
	seed   maphash.Seed
	share  int // bytes per shard
	shards [seriesCacheShards]seriesCacheShard
}

// seriesCacheShards spreads the concurrent requests' lookups over locks.
const seriesCacheShards = 16

type seriesCacheShard struct {
	mu        sync.Mutex
	cur, prev map[string]cachedSeries
	curBytes  int
}

type cachedSeries struct {
	labels []labels.Label // shared by every request that hits: read only
	id     []byte
}

// cachedSeriesOverhead is what an entry costs beside its bytes: the map
// slot, the string and slice headers.
const cachedSeriesOverhead = 96

// newSeriesCache returns a cache of at most maxBytes, or nil (no cache) for
// maxBytes <= 0.
func newSeriesCache(maxBytes int64) *seriesCache {
	if maxBytes <= 0 {
		return nil
	}
	c := &seriesCache{seed: maphash.MakeSeed(), share: int(maxBytes / seriesCacheShards)}
	for i := range c.shards {
		c.shards[i].cur = map[string]cachedSeries{}
	}
	return c
}

func (c *seriesCache) shard(key []byte) *seriesCacheShard {
	return &c.shards[maphash.Bytes(c.seed, key)%seriesCacheShards]
}

// get returns the entry of key, if any.
func (c *seriesCache) get(key []byte) (cachedSeries, bool) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e, ok := sh.cur[string(key)]; ok {
		return e, true
	}
	if e, ok := sh.prev[string(key)]; ok {
		delete(sh.prev, string(key))
		sh.add(string(key), e, c.share)
		return e, true
	}
	return cachedSeries{}, false
}

// put remembers that key stands for ls, whose store series ID is id. It
// copies key and ls (not the label strings, which are immutable) and keeps
// id as it is.
func (c *seriesCache) put(key []byte, ls []labels.Label, id []byte) {
	sh := c.shard(key)
	e := cachedSeries{labels: append([]labels.Label(nil), ls...), id: id}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.cur[string(key)]; ok {
		return // a concurrent request put it first
	}
	sh.add(string(key), e, c.share)
}

// add puts e under key in the newer generation, first turning the
// generations when the newer one is full.
func (sh *seriesCacheShard) add(key string, e cachedSeries, share int) {
	size := entrySize(key, e)
	if sh.curBytes+size > share/2 && len(sh.cur) > 0 {
		sh.prev, sh.cur, sh.curBytes = sh.cur, make(map[string]cachedSeries, len(sh.cur)), 0
	}
	sh.cur[key] = e
	sh.curBytes += size
}

func entrySize(key string, e cachedSeries) int {
	n := len(key) + len(e.id) + cachedSeriesOverhead
	for _, l := range e.labels {
		n += 32 + len(l.Name) + len(l.Value) // header and strings: counted even where the interner shares them
	}
	return n
}

// appendLabelFields appends ls as the label fields (1) of a 1.0 TimeSeries
// message, as Prometheus's 1.0 sender writes them: each Label message with
// its name (1) and value (2), an empty string's field left out. Decoded as
// 1.0 label fields these bytes give ls back, label for label, so they name
// ls in the cache as the bytes of a 1.0 series do: one key, one label set.
func appendLabelFields(dst []byte, ls []labels.Label) []byte {
	for _, l := range ls {
		dst = appendLabelField(dst, l.Name, l.Value)
	}
	return dst
}

// appendLabelField appends one label field of appendLabelFields.
func appendLabelField[T string | []byte](dst []byte, name, value T) []byte {
	n := 0
	if len(name) > 0 {
		n += 1 + protowire.SizeBytes(len(name))
	}
	if len(value) > 0 {
		n += 1 + protowire.SizeBytes(len(value))
	}
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendVarint(dst, uint64(n))
	if len(name) > 0 {
		dst = protowire.AppendTag(dst, 1, protowire.BytesType)
		dst = append(protowire.AppendVarint(dst, uint64(len(name))), name...)
	}
	if len(value) > 0 {
		dst = protowire.AppendTag(dst, 2, protowire.BytesType)
		dst = append(protowire.AppendVarint(dst, uint64(len(value))), value...)
	}
	return dst
}
