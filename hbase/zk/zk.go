// Package zk finds an HBase cluster's entry points in ZooKeeper: the server
// holding hbase:meta and the active master. It owns the znode format only;
// it must not know the RPC protocol spoken to those servers.
package zk

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// Znodes under the root.
const (
	MetaZnode   = "meta-region-server"
	MasterZnode = "master"
	// RSZnode has a child per live region server, named as HBase's
	// ServerName prints: host,port,startcode.
	RSZnode = "rs"
)

// DefaultRoot is HBase's zookeeper.znode.parent default.
const DefaultRoot = "/hbase"

// Server is an HBase server as ZooKeeper names it.
type Server struct {
	Host      string
	Port      int
	StartCode uint64
}

// Addr is host:port, to dial.
func (s Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// ErrZnode reports znode content that is not what HBase writes.
var ErrZnode = errors.New("malformed znode")

// ErrUnavailable marks the errors of a read that may succeed if asked
// again: no ZooKeeper server reachable, the session lost, or the znode not
// written yet (a master starting, meta being reassigned).
var ErrUnavailable = errors.New("zookeeper unavailable")

// transient reports whether a ZooKeeper error may pass.
func transient(err error) bool {
	return errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrConnectionClosed) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrNoNode)
}

var pbufMagic = []byte("PBUF")

// ParseZnode decodes an HBase znode: 0xFF, u32 length of the writer's id,
// the id, "PBUF", then the protobuf message.
func ParseZnode(data []byte, m proto.Message) error {
	if len(data) < 5 || data[0] != 0xFF {
		return fmt.Errorf("%w: no 0xFF marker", ErrZnode)
	}
	idLen := binary.BigEndian.Uint32(data[1:])
	if uint64(idLen) > uint64(len(data)-5) {
		return fmt.Errorf("%w: id of %d bytes in %d", ErrZnode, idLen, len(data))
	}
	rest := data[5+idLen:]
	if !bytes.HasPrefix(rest, pbufMagic) {
		return fmt.Errorf("%w: no PBUF magic", ErrZnode)
	}
	if err := proto.Unmarshal(rest[len(pbufMagic):], m); err != nil {
		return fmt.Errorf("%w: %v", ErrZnode, err)
	}
	return nil
}

func serverOf(s *pb.ServerName) (Server, error) {
	// The field is a uint32: a port past 65535 is a corrupt znode, which
	// would otherwise surface as a dial error on every retry.
	if s.GetHostName() == "" || s.GetPort() == 0 || s.GetPort() > 65535 {
		return Server{}, fmt.Errorf("%w: server %q port %d", ErrZnode, s.GetHostName(), s.GetPort())
	}
	return Server{Host: s.GetHostName(), Port: int(s.GetPort()), StartCode: s.GetStartCode()}, nil
}

// ParseMeta decodes the meta-region-server znode.
func ParseMeta(data []byte) (Server, error) {
	var m pb.MetaRegionServer
	if err := ParseZnode(data, &m); err != nil {
		return Server{}, err
	}
	return serverOf(m.GetServer())
}

// ParseMaster decodes the master znode.
func ParseMaster(data []byte) (Server, error) {
	var m pb.Master
	if err := ParseZnode(data, &m); err != nil {
		return Server{}, err
	}
	return serverOf(m.GetMaster())
}

// Client reads HBase's znodes over one ZooKeeper session, opened on first
// use and reopened after it expires.
type Client struct {
	servers []string
	root    string

	mu   sync.Mutex
	conn *zk.Conn
}

// New returns a client for a comma-separated ZooKeeper quorum and a root
// znode ("" means /hbase).
func New(quorum, root string) *Client {
	if root == "" {
		root = DefaultRoot
	}
	var servers []string
	for _, s := range strings.Split(quorum, ",") {
		if s = strings.TrimSpace(s); s != "" {
			if _, _, err := net.SplitHostPort(s); err != nil {
				s = net.JoinHostPort(s, "2181")
			}
			servers = append(servers, s)
		}
	}
	return &Client{servers: servers, root: strings.TrimSuffix(root, "/")}
}

type slogger struct{}

func (slogger) Printf(format string, args ...any) {
	slog.Debug(fmt.Sprintf(format, args...), "component", "zookeeper")
}

func (c *Client) session() (*zk.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil && c.conn.State() != zk.StateExpired {
		return c.conn, nil
	}
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	if len(c.servers) == 0 {
		return nil, errors.New("zookeeper: no servers given")
	}
	conn, _, err := zk.Connect(c.servers, 30*time.Second, zk.WithLogger(slogger{}), zk.WithLogInfo(false), zk.WithHostProvider(&nameHosts{}))
	if err != nil {
		return nil, fmt.Errorf("zookeeper %v: %w", c.servers, err)
	}
	c.conn = conn
	return conn, nil
}

// get reads a znode.
func (c *Client) get(ctx context.Context, name string) ([]byte, error) {
	return call(ctx, c, "get", name, func(conn *zk.Conn, path string) ([]byte, error) {
		data, _, err := conn.Get(path)
		return data, err
	})
}

// call runs op on the znode name, giving up when ctx ends (the ZooKeeper
// library waits for a session without a deadline of its own).
func call[T any](ctx context.Context, c *Client, verb, name string, op func(*zk.Conn, string) (T, error)) (T, error) {
	var zero T
	conn, err := c.session()
	if err != nil {
		return zero, err
	}
	path := c.root + "/" + name
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := op(conn, path)
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil && transient(r.err) {
			return zero, fmt.Errorf("zookeeper %v: %s %s: %w: %w", c.servers, verb, path, ErrUnavailable, r.err)
		}
		if r.err != nil {
			return zero, fmt.Errorf("zookeeper %v: %s %s: %w", c.servers, verb, path, r.err)
		}
		return r.v, nil
	case <-ctx.Done():
		return zero, fmt.Errorf("zookeeper %v: %s %s: %w", c.servers, verb, path, ctx.Err())
	}
}

// RegionServers returns the live region servers, with their start codes.
func (c *Client) RegionServers(ctx context.Context) ([]Server, error) {
	names, err := call(ctx, c, "list", RSZnode, func(conn *zk.Conn, path string) ([]string, error) {
		names, _, err := conn.Children(path)
		return names, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Server, 0, len(names))
	for _, n := range names {
		s, err := ParseServerName(n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ParseServerName decodes a server as HBase prints it: host,port,startcode.
func ParseServerName(name string) (Server, error) {
	parts := strings.Split(name, ",")
	if len(parts) != 3 || parts[0] == "" {
		return Server{}, fmt.Errorf("%w: server name %q is not host,port,startcode", ErrZnode, name)
	}
	port, err := strconv.ParseUint(parts[1], 10, 16)
	if err != nil || port == 0 {
		return Server{}, fmt.Errorf("%w: server name %q: port", ErrZnode, name)
	}
	code, err := strconv.ParseUint(parts[2], 10, 64)
	if err != nil {
		return Server{}, fmt.Errorf("%w: server name %q: start code", ErrZnode, name)
	}
	return Server{Host: parts[0], Port: int(port), StartCode: code}, nil
}

// Meta returns the server holding hbase:meta.
func (c *Client) Meta(ctx context.Context) (Server, error) {
	data, err := c.get(ctx, MetaZnode)
	if err != nil {
		return Server{}, err
	}
	return ParseMeta(data)
}

// Master returns the active master.
func (c *Client) Master(ctx context.Context) (Server, error) {
	data, err := c.get(ctx, MasterZnode)
	if err != nil {
		return Server{}, err
	}
	return ParseMaster(data)
}

// Close ends the session.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}
