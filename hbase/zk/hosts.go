package zk

import (
	"errors"
	"math/rand/v2"
	"sync"
)

// nameHosts is the ZooKeeper library's host provider, handing out the
// quorum's servers as they were named (host:port), for the dialer to
// resolve at each dial. The library's own provider resolves every name
// once, at the session's start, and fails whole when one name does not
// resolve (a retired node, a ZooKeeper pod down behind a headless
// service), although the others answer; and a quorum that came back on
// new addresses under the same names (pods restarted) was dialled at the
// old ones until the process restarted. ZooKeeper's own client skips a
// name it cannot resolve and resolves again on reconnection.
type nameHosts struct {
	mu         sync.Mutex
	servers    []string
	curr, last int
}

func (h *nameHosts) Init(servers []string) error {
	if len(servers) == 0 {
		return errors.New("zookeeper: no servers given")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = append([]string(nil), servers...)
	// Spread the sessions of a fleet over the quorum, as the library does.
	rand.Shuffle(len(h.servers), func(i, j int) { h.servers[i], h.servers[j] = h.servers[j], h.servers[i] })
	h.curr, h.last = -1, -1
	return nil
}

func (h *nameHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Next returns the next server; retryStart is true once every server was
// tried since the last connection (the library then backs off).
func (h *nameHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart := h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *nameHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}
