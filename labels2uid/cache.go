package labels2uid

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

const cacheShards = 32

// cache is a bounded map sharded to keep lock contention low on the write
// path. A full shard evicts an arbitrary entry (Go's randomised map iteration
// order makes it random eviction), which costs no bookkeeping per hit: hot
// entries are re-inserted by the next miss, and UID mappings never change, so
// a stale entry cannot exist.
type cache[K comparable, V any] struct {
	hash        func(K) uint64
	maxPerShard int
	shards      [cacheShards]cacheShard[K, V]
}

type cacheShard[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
	// Counted per shard so that cores do not contend on one cache line.
	hits, misses atomic.Uint64
	_            [24]byte // keep shards on separate cache lines
}

// newCache returns a cache of at most size entries; hash picks the shard.
func newCache[K comparable, V any](size int, hash func(K) uint64) *cache[K, V] {
	c := &cache[K, V]{hash: hash, maxPerShard: max(1, size/cacheShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[K]V)
	}
	return c
}

func (c *cache[K, V]) shard(k K) *cacheShard[K, V] {
	return &c.shards[c.hash(k)%cacheShards]
}

func (c *cache[K, V]) get(k K) (V, bool) {
	s := c.shard(k)
	s.mu.RLock()
	v, ok := s.m[k]
	s.mu.RUnlock()
	if ok {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
	return v, ok
}

// peek is get without counting a hit or a miss: for re-checks whose first
// look was counted already.
func (c *cache[K, V]) peek(k K) (V, bool) {
	s := c.shard(k)
	s.mu.RLock()
	v, ok := s.m[k]
	s.mu.RUnlock()
	return v, ok
}

// capacity is the most entries the cache holds.
func (c *cache[K, V]) capacity() int { return c.maxPerShard * cacheShards }

func (c *cache[K, V]) put(k K, v V) {
	s := c.shard(k)
	s.mu.Lock()
	if _, ok := s.m[k]; !ok && len(s.m) >= c.maxPerShard {
		for old := range s.m {
			delete(s.m, old)
			break
		}
	}
	s.m[k] = v
	s.mu.Unlock()
}

// stats returns the hit and miss counts.
func (c *cache[K, V]) stats() (hits, misses uint64) {
	for i := range c.shards {
		hits += c.shards[i].hits.Load()
		misses += c.shards[i].misses.Load()
	}
	return hits, misses
}

func (c *cache[K, V]) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

var seed = maphash.MakeSeed()

// maphash.Comparable is generic over any key and several times slower than
// these: the shard choice is on the write path's hot loop.
func hashString(s string) uint64 { return maphash.String(seed, s) }

func hashUID(u uint64) uint64 {
	u ^= u >> 33
	u *= 0xff51afd7ed558ccd
	u ^= u >> 33
	return u
}
