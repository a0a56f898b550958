package remote

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// inFlight counts the bytes that the write requests being served hold or
// are about to allocate, and refuses what would take the count past its
// limit. It never waits: a request that does not fit is answered 429 and
// retried by the sender, which is cheaper than holding its body while
// others finish, and keeps memory bounded whatever the number of senders.
type inFlight struct {
	mu    sync.Mutex
	limit int64
	used  int64
	peak  int64 // highest used ever, for tests
	gauge prometheus.Gauge
}

func newInFlight(limit int64, gauge prometheus.Gauge) *inFlight {
	return &inFlight{limit: limit, gauge: gauge}
}

// tryAcquire takes n bytes if they fit under the limit.
func (f *inFlight) tryAcquire(n int64) bool {
	if n <= 0 {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.used+n > f.limit {
		return false
	}
	f.used += n
	f.peak = max(f.peak, f.used)
	f.gauge.Set(float64(f.used))
	return true
}

func (f *inFlight) release(n int64) {
	if n <= 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.used -= n
	f.gauge.Set(float64(f.used))
}

// reservation is what one request holds of an inFlight.
type reservation struct {
	f    *inFlight
	held int64
}

// add takes n more bytes for the request; false: they do not fit.
func (r *reservation) add(n int64) bool {
	if !r.f.tryAcquire(n) {
		return false
	}
	r.held += n
	return true
}

// shrink gives back what the request reserved beyond n bytes.
func (r *reservation) shrink(n int64) {
	if r.held > n {
		r.f.release(r.held - n)
		r.held = n
	}
}

func (r *reservation) releaseAll() { r.shrink(0) }

// DefaultMaxBytesInFlight sizes the write path's in-flight limit for this
// machine: a quarter of the memory the process may use (the Go memory
// limit, the cgroup limit or physical memory, whichever is smallest),
// between 64 MiB and 4 GiB. The rest is left to the storage client, the
// caches and the garbage collector's headroom.
func DefaultMaxBytesInFlight() int64 {
	avail := int64(math.MaxInt64)
	if l := debug.SetMemoryLimit(-1); l > 0 {
		avail = min(avail, l)
	}
	if l, ok := cgroupMemoryLimit(); ok {
		avail = min(avail, l)
	}
	if l, ok := physicalMemory(); ok {
		avail = min(avail, l)
	}
	return min(max(avail/4, 64<<20), 4<<30)
}

// cgroupMemoryLimit reads the cgroup v2 memory limit of this process.
func cgroupMemoryLimit() (int64, bool) {
	b, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v, err == nil && v > 0
}

// physicalMemory reads MemTotal from /proc/meminfo (Linux; elsewhere the
// other bounds apply).
func physicalMemory() (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err == nil && kb > 0
		}
	}
	return 0, false
}
