package zk

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"
)

// nameHosts is the ZooKeeper library's host provider. The library's own
// resolves every name once, at the session's start, and fails whole when
// one name does not resolve (a retired node, a ZooKeeper pod down behind a
// headless service), although the others answer; and a quorum that came
// back on new addresses under the same names (pods restarted) was dialled
// at the old ones until the process restarted. This one resolves the names
// at the start and again after every round of servers that all failed,
// leaves out a name that does not resolve (ZooKeeper's own client does the
// same), and hands out each address of a name, shuffled, as the library
// does, so that a fleet's sessions spread over the quorum and a name with
// a dead address still reaches its live ones.
type nameHosts struct {
	mu         sync.Mutex
	names      []string // host:port as given
	servers    []string // their addresses, shuffled
	curr, last int
	// lookup resolves a host (net.DefaultResolver.LookupHost; tests set it).
	lookup func(ctx context.Context, host string) ([]string, error)
}

// lookupTimeout bounds one round of name lookups.
const lookupTimeout = 3 * time.Second

func (h *nameHosts) Init(servers []string) error {
	if len(servers) == 0 {
		return errors.New("zookeeper: no servers given")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lookup == nil {
		h.lookup = net.DefaultResolver.LookupHost
	}
	h.names = slices.Clone(servers)
	h.servers = h.resolve()
	h.curr, h.last = -1, -1
	return nil
}

// resolve returns the addresses of the names. When none resolves, the
// names themselves: each dial then fails, the library waits a second
// between rounds, and the next round resolves them again.
func (h *nameHosts) resolve() []string {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	var out []string
	for _, s := range h.names {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			out = append(out, s) // the dialer says what is wrong with it
			continue
		}
		if net.ParseIP(host) != nil {
			out = append(out, s)
			continue
		}
		addrs, err := h.lookup(ctx, host)
		if err != nil {
			slog.Debug("zookeeper: a server's name does not resolve; trying the others", "server", s, "err", err)
			continue
		}
		for _, a := range addrs {
			out = append(out, net.JoinHostPort(a, port))
		}
	}
	if len(out) == 0 {
		out = slices.Clone(h.names)
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func (h *nameHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Next returns the next server; retryStart is true once every server was
// tried since the last connection (the library then waits a second), and
// the names are resolved again for the round that starts.
func (h *nameHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart := h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	if retryStart {
		h.servers = h.resolve()
		h.curr, h.last = 0, 0
	}
	return h.servers[h.curr], retryStart
}

func (h *nameHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}
