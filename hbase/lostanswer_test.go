package hbase

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/prom-hbase/prom-hbase/hbase/hrpc"
	"github.com/prom-hbase/prom-hbase/hbase/pb"
)

// lossyProxy relays connections to a server, except that it loses the
// first answer of the first drops connections: the request reaches the
// server and is carried out, then the connection closes before the client
// hears back. That is what a network cut or a server crash right after a
// write does, and what makes a client retry a write that was applied.
type lossyProxy struct {
	ln      net.Listener
	target  string
	drops   atomic.Int32 // answers still to lose
	dropped atomic.Int32
	// onDrop, when set, runs once an answer has reached the proxy and
	// before the proxy drops it: what other writers do meanwhile.
	onDrop func()
	// garble, when set, makes the proxy relay the answers it would drop
	// with the lengths of the first cell of their cell block overwritten,
	// as HBase 2.6.4 was seen to answer an increment while the region
	// moved.
	garble bool
	wg     sync.WaitGroup

	mu   sync.Mutex
	open []net.Conn // closed at cleanup: a relayed connection stays up until then

	// table and row name the counter a test's onDrop increments.
	table string
	row   []byte
}

// newLossyProxy starts a proxy to target that loses drops answers; set
// changes its fields before it serves.
func newLossyProxy(t *testing.T, target string, drops int32, set ...func(*lossyProxy)) *lossyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{ln: ln, target: target}
	p.drops.Store(drops)
	for _, f := range set {
		f(p)
	}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.open {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *lossyProxy) addr() string { return p.ln.Addr().String() }

func (p *lossyProxy) serve() {
	defer p.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			p.relay(client)
		}()
	}
}

func (p *lossyProxy) relay(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	p.mu.Lock()
	p.open = append(p.open, client, server)
	p.mu.Unlock()
	go func() {
		_, _ = io.Copy(server, client)
		server.Close()
	}()
	// The first bytes from the server are the first answer: HBase answers
	// a connection header with silence.
	buf := make([]byte, 64<<10)
	n, err := server.Read(buf)
	if err != nil {
		return
	}
	if p.drops.Add(-1) >= 0 {
		if p.onDrop != nil {
			p.onDrop()
		}
		p.dropped.Add(1)
		if !p.garble {
			return // closes both sides: the answer is lost
		}
		garbleCellBlock(buf[:n])
	}
	if _, err := client.Write(buf[:n]); err != nil {
		return
	}
	_, _ = io.Copy(client, server)
}

// garbleCellBlock overwrites the key and value lengths of the first cell
// in the cell block of the response frame at the start of b (one whole
// frame: the answer to a small call) with the bytes seen in the garbled
// answer.
func garbleCellBlock(b []byte) {
	frame := b[4 : 4+binary.BigEndian.Uint32(b)]
	hb, n := protowire.ConsumeBytes(frame)
	var h pb.ResponseHeader
	if n < 0 || proto.Unmarshal(hb, &h) != nil || h.GetCellBlockMeta().GetLength() < 12 {
		return
	}
	cells := frame[len(frame)-int(h.GetCellBlockMeta().GetLength()):]
	copy(cells[4:12], []byte{0x10, 0x02, 0x40, 0x01, 0x1a, 0x0e, 0x08, 0x0d})
}

// routeThrough makes the client reach the region holding row through addr,
// as if the region had moved there.
func routeThrough(t *testing.T, c *Client, table string, row []byte, addr string) *RegionInfo {
	t.Helper()
	r, err := c.locate(testCtx(t), table, row)
	if err != nil {
		t.Fatal(err)
	}
	moved := *r
	moved.Addr = addr
	c.cache.add(&moved)
	return r
}

// TestIncrementLostAnswerOwnRange: an increment whose answer is lost while
// another writer increments the same counter is retried with the same
// nonce; HBase applies it once and answers the retry with the counter as it
// stood right after the first attempt (it reads at that operation's write
// point, not the current value, which includes the other writer's
// increment). So the delta values below the answer are the caller's alone,
// as a range of UIDs reserved by it must be (labels2uid).
func TestIncrementLostAnswerOwnRange(t *testing.T) {
	other := testClient(t)
	var otherHi int64
	c, table, row, p := counterBehindProxy(t, func(p *lossyProxy) {
		p.onDrop = func() {
			var err error
			if otherHi, err = other.Increment(testCtx(t), p.table, p.row, []byte("f"), []byte("n"), 7); err != nil {
				t.Error(err)
			}
		}
	})
	ctx := testCtx(t)
	n, err := c.Increment(ctx, table, row, []byte("f"), []byte("n"), 5)
	if err != nil {
		t.Fatalf("increment with a lost answer: %v", err)
	}
	if p.dropped.Load() != 1 {
		t.Fatalf("the proxy lost %d answers, want 1: the retry was not provoked", p.dropped.Load())
	}
	// The other writer's range is (otherHi-7, otherHi]; ours (n-5, n].
	if n-5 < otherHi && otherHi-7 < n {
		t.Fatalf("the increment returned %d: its range (%d, %d] overlaps the other writer's (%d, %d]", n, n-5, n, otherHi-7, otherHi)
	}
	cells, err := c.Get(ctx, table, &hrpc.Get{Row: row})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 1 || len(cells[0].Value) != 8 {
		t.Fatalf("counter cell: %+v", cells)
	}
	if v := int64(binary.BigEndian.Uint64(cells[0].Value)); v != 22 || n != 15 || otherHi != 22 {
		t.Fatalf("counter %d, increment returned %d, the other writer's %d; want 22, 15 and 22 (10, 5 applied once, 7)", v, n, otherHi)
	}
}

// TestIncrementGarbledAnswer: an increment answered with a cell block that
// does not decode (HBase 2.6.4 did so once while the counter's region moved,
// a cell of the right length holding other bytes) is retried with the same
// nonce and applied once: the answer it returns is its own.
func TestIncrementGarbledAnswer(t *testing.T) {
	c, table, row, p := counterBehindProxy(t, func(p *lossyProxy) { p.garble = true })
	n, err := c.Increment(testCtx(t), table, row, []byte("f"), []byte("n"), 5)
	if err != nil {
		t.Fatalf("increment with a garbled answer: %v", err)
	}
	if p.dropped.Load() != 1 {
		t.Fatalf("the proxy garbled %d answers, want 1", p.dropped.Load())
	}
	if n != 15 {
		t.Fatalf("increment returned %d, want 15 (10 + 5 applied once)", n)
	}
}

// counterBehindProxy makes a counter cell (row "counter", f:n) of 10 in a
// table of its own, and a client that reaches its region only through a
// lossy proxy that loses (or garbles) one answer, set up by set.
func counterBehindProxy(t *testing.T, set func(*lossyProxy)) (*Client, string, []byte, *lossyProxy) {
	t.Helper()
	c := testClient(t)
	table := testTable(t, c)
	ctx := testCtx(t)
	row := []byte("counter")
	if _, err := c.Increment(ctx, table, row, []byte("f"), []byte("n"), 10); err != nil {
		t.Fatal(err)
	}
	r, _ := c.locate(ctx, table, row)
	p := newLossyProxy(t, r.Addr, 1, func(p *lossyProxy) { p.table, p.row = table, row }, set)
	routeThrough(t, c, table, row, p.addr())
	return c, table, row, p
}

// TestCheckAndPutBatchLostAnswer: the conditional puts of a Multi whose
// answer is lost are retried; the retry finds the cells as the first
// attempt left them and reports false, while the puts of the other region,
// answered the first time, are not sent again and report true.
func TestCheckAndPutBatchLostAnswer(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c, "m")
	ctx := testCtx(t)
	// Both regions cached first: a lookup of the second would bring the
	// first back from meta, undoing the detour.
	if _, err := c.locate(ctx, table, []byte("n")); err != nil {
		t.Fatal(err)
	}
	r, _ := c.locate(ctx, table, []byte("a"))
	p := newLossyProxy(t, r.Addr, 1)
	routeThrough(t, c, table, []byte("a"), p.addr())
	rows := []string{"a1", "n1", "a2", "n2", "a3"}
	puts := make([]CondMutation, len(rows))
	for i, row := range rows {
		puts[i] = CondMutation{Mutation: put(row, "f", "id", "v-"+row), Family: []byte("f"), Qualifier: []byte("id")}
	}
	written, err := c.CheckAndMutateBatch(ctx, table, puts)
	if err != nil {
		t.Fatal(err)
	}
	if p.dropped.Load() != 1 {
		t.Fatalf("the proxy lost %d answers, want 1", p.dropped.Load())
	}
	for i, row := range rows {
		if want := row[0] == 'n'; written[i] != want {
			t.Errorf("put %s: written %v, want %v", row, written[i], want)
		}
		cells, err := c.Get(ctx, table, &hrpc.Get{Row: []byte(row)})
		if err != nil {
			t.Fatal(err)
		}
		if len(cells) != 1 || string(cells[0].Value) != "v-"+row {
			t.Errorf("row %s holds %+v, want the value put", row, cells)
		}
	}
}

// TestCheckAndPutBatchStaleRegions: a batch sent with the locations of a
// region that has split since is told so, relocates, and retries only
// what the stale region refused.
func TestCheckAndPutBatchStaleRegions(t *testing.T) {
	c := testClient(t)
	table := testTable(t, c)
	ctx := testCtx(t)
	const n = 400
	var setup []*hrpc.Mutation
	for i := 0; i < n; i += 2 {
		setup = append(setup, put(rowKey(i), "f", "lock", "held"))
	}
	if err := c.MutateBatch(ctx, table, setup); err != nil {
		t.Fatal(err)
	}
	// Another client splits the region; this one still has it cached whole.
	other := testClient(t)
	if err := other.SplitRegion(ctx, table, []byte(rowKey(n/2))); err != nil {
		t.Fatal(err)
	}
	before := c.Stats().Relocations
	puts := make([]CondMutation, n)
	for i := range puts {
		puts[i] = CondMutation{Mutation: put(rowKey(i), "f", "lock", "mine"), Family: []byte("f"), Qualifier: []byte("lock")}
		if i%4 == 0 {
			puts[i].Expected = []byte("held")
		}
	}
	written, err := c.CheckAndMutateBatch(ctx, table, puts)
	if err != nil {
		t.Fatal(err)
	}
	if c.Stats().Relocations == before {
		t.Errorf("no relocation: the batch did not meet the split region")
	}
	for i, w := range written {
		// Absent expected on even rows (present) loses; "held" expected on
		// rows divisible by 4 wins; absent expected on odd rows wins.
		want := i%2 == 1 || i%4 == 0
		if w != want {
			t.Fatalf("put %d: written %v, want %v", i, w, want)
		}
	}
}

// TestDeleteOneVersion: a delete of one version (cell type Delete with a
// timestamp) removes that version alone, as hbasetable's DeleteVersions
// relies on.
func TestDeleteOneVersion(t *testing.T) {
	c := testClient(t)
	ctx := testCtx(t)
	table := testTable(t, c)
	if err := c.ModifyFamily(ctx, table, hrpc.Family{Name: "g", MaxVersions: 3, NewVersionBehavior: true}); err != nil {
		t.Fatal(err)
	}
	var muts []*hrpc.Mutation
	for ts := int64(1000); ts <= 3000; ts += 1000 {
		m := put("r", "g", "q", "v")
		m.Cells[0].Timestamp = ts
		muts = append(muts, m)
	}
	if err := c.MutateBatch(ctx, table, muts); err != nil {
		t.Fatal(err)
	}
	del := &hrpc.Mutation{Type: hrpc.MutationDelete, Row: []byte("r"), Cells: []hrpc.MutationCell{{
		Family: []byte("g"), Qualifier: []byte("q"), Timestamp: 2000, Type: hrpc.TypeDelete}}}
	if err := c.MutateBatch(ctx, table, []*hrpc.Mutation{del}); err != nil {
		t.Fatal(err)
	}
	cells, err := c.Get(ctx, table, &hrpc.Get{Row: []byte("r"), MaxVersions: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, cl := range cells {
		got = append(got, cl.Timestamp)
	}
	if len(got) != 2 || got[0] != 3000 || got[1] != 1000 {
		t.Fatalf("versions after deleting 2000: %v, want [3000 1000]", got)
	}
}

// TestModifyFamily: the descriptor read back has what ModifyFamily set,
// and the other family is untouched.
func TestModifyFamily(t *testing.T) {
	c := testClient(t)
	ctx := testCtx(t)
	table := testTable(t, c)
	want := hrpc.Family{Name: "f", MaxVersions: 2, TTL: 3600e9, BloomFilter: "ROWCOL", DataBlockEncoding: "PREFIX",
		Compression: "NONE", InMemory: true, NewVersionBehavior: true}
	if err := c.ModifyFamily(ctx, table, want); err != nil {
		t.Fatal(err)
	}
	fams, err := c.TableFamilies(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 2 || fams[0] != want || fams[1].Name != "g" || fams[1].TTL != 0 || fams[1].InMemory {
		t.Fatalf("families after ModifyFamily: %+v, want f as %+v and g untouched", fams, want)
	}
	err = c.ModifyFamily(ctx, table, hrpc.Family{Name: "nosuch"})
	var x *Exception
	if !errors.As(err, &x) {
		t.Fatalf("ModifyFamily of an absent family: %v, want an HBase exception", err)
	}
	if err := c.ModifyFamily(context.Background(), "no_such_table_xyz", want); !IsTableNotFound(err) {
		t.Fatalf("ModifyFamily of an absent table: %v", err)
	}
}

// TestAddFamily: the added family has the attributes asked and takes
// writes; an add of a family the table has is refused with
// InvalidFamilyOperationException, also to the losers of a race (which
// the master first refuses with ConcurrentTableModificationException).
func TestAddFamily(t *testing.T) {
	c := testClient(t)
	ctx := testCtx(t)
	table := testTable(t, c)
	if err := c.Mutate(ctx, table, put("r1", "f", "q", "old")); err != nil {
		t.Fatal(err)
	}
	want := hrpc.Family{Name: "h", MaxVersions: 1, TTL: 3600e9, BloomFilter: "ROW", DataBlockEncoding: "ROW_INDEX_V1",
		Compression: "NONE", NewVersionBehavior: true}
	if err := c.AddFamily(ctx, table, want); err != nil {
		t.Fatal(err)
	}
	fams, err := c.TableFamilies(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != 3 || fams[0].Name != "f" || fams[1].Name != "g" || fams[2] != want {
		t.Fatalf("families after AddFamily: %+v, want f, g and h as %+v", fams, want)
	}
	if err := c.Mutate(ctx, table, put("r1", "h", "q", "new")); err != nil {
		t.Fatal(err)
	}
	cells, err := c.Get(ctx, table, &hrpc.Get{Row: []byte("r1")})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2 || string(cells[0].Family) != "f" || string(cells[0].Value) != "old" ||
		string(cells[1].Family) != "h" || string(cells[1].Value) != "new" {
		t.Fatalf("row after AddFamily: %v", cells)
	}

	isExists := func(err error) bool {
		var x *Exception
		return errors.As(err, &x) && x.Class == hrpc.InvalidFamilyOperation
	}
	if err := c.AddFamily(ctx, table, want); !isExists(err) {
		t.Fatalf("AddFamily of a family the table has: %v, want InvalidFamilyOperationException", err)
	}
	const racers = 3
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = c.AddFamily(ctx, table, hrpc.Family{Name: "x", MaxVersions: 1}) })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !isExists(err):
			t.Errorf("racer %d: %v, want nil or InvalidFamilyOperationException", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d racers added the family, want 1: %v", won, errs)
	}
	if err := c.AddFamily(ctx, "no_such_table_xyz", want); !IsTableNotFound(err) {
		t.Fatalf("AddFamily to an absent table: %v", err)
	}
}

// TestModifyFamilyRacingAddFamily: an alter of one family and an add of
// another, sent at once to the same table, as two adapters starting
// together do, both succeed: the master refuses the one whose descriptor
// the other replaced with ConcurrentTableModificationException, and the
// client retries it. Every round must pass.
func TestModifyFamilyRacingAddFamily(t *testing.T) {
	c := testClient(t)
	ctx := testCtx(t)
	table := testTable(t, c)
	const rounds = 4
	for round := range rounds {
		added := hrpc.Family{Name: fmt.Sprintf("r%d", round), MaxVersions: 1}
		ttl := time.Duration(round+1) * time.Hour
		start := make(chan struct{})
		var addErr, modErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			addErr = c.AddFamily(ctx, table, added)
		})
		wg.Go(func() {
			<-start
			modErr = c.ModifyFamily(ctx, table, hrpc.Family{Name: "f", MaxVersions: 1, TTL: ttl})
		})
		close(start)
		wg.Wait()
		if addErr != nil || modErr != nil {
			t.Fatalf("round %d: AddFamily: %v; ModifyFamily: %v", round, addErr, modErr)
		}
		fams, err := c.TableFamilies(ctx, table)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]hrpc.Family{}
		for _, f := range fams {
			have[f.Name] = f
		}
		if _, ok := have[added.Name]; !ok || have["f"].TTL != ttl || len(fams) != 3+round {
			t.Fatalf("round %d: families %+v, want f with TTL %v and %s added", round, fams, ttl, added.Name)
		}
	}
}
