package store

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/prom-hbase/prom-hbase/table"
)

// rowRecorder records the row keys of every Put to the table it wraps.
type rowRecorder struct {
	table.Table
	mu   sync.Mutex
	puts [][][]byte
}

func (r *rowRecorder) Put(ctx context.Context, cells []table.Cell) error {
	rows := make([][]byte, len(cells))
	for i, c := range cells {
		rows[i] = bytes.Clone(c.Row)
	}
	r.mu.Lock()
	r.puts = append(r.puts, rows)
	r.mu.Unlock()
	return r.Table.Put(ctx, cells)
}

// TestWritePutsCellsInRowOrder: a write hands the data table its cells in
// row key order, whatever the order of the series (salted, they fall in
// every bucket), keeping the order of equal cells, so that the last of two
// samples at one timestamp still wins.
func TestWritePutsCellsInRowOrder(t *testing.T) {
	db, prefix := openPebble(t)
	ctx := context.Background()
	s := openStore(t, db, Config{TablePrefix: prefix})
	rec := &rowRecorder{Table: s.data}
	s.data = rec
	base := 1_700_000_000_000 / hour * hour
	var batch []SeriesIn
	for i := range 200 {
		batch = append(batch, SeriesIn{
			Labels:  lbls("__name__", fmt.Sprintf("m%d", i%3), "pod", fmt.Sprintf("p%03d", i)),
			Samples: []Sample{{T: base + int64(i), V: float64(i)}, {T: base + hour, V: 1}},
		})
	}
	// The same sample twice in one write, the second value last.
	dup := lbls("__name__", "m0", "pod", "p000")
	batch = append(batch, SeriesIn{Labels: dup, Samples: []Sample{{T: base, V: 7}}})
	if err := s.Write(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if len(rec.puts) != 1 {
		t.Fatalf("%d puts, want 1", len(rec.puts))
	}
	rows := rec.puts[0]
	if len(rows) != 2*200+1 {
		t.Fatalf("%d cells, want %d", len(rows), 2*200+1)
	}
	buckets := map[byte]bool{}
	for i, r := range rows {
		buckets[r[0]] = true
		if i > 0 && bytes.Compare(rows[i-1], r) > 0 {
			t.Fatalf("cell %d: row %x after %x", i, r, rows[i-1])
		}
	}
	if len(buckets) < 2 {
		t.Fatalf("the series fell in %d salt bucket(s): the test needs them spread", len(buckets))
	}

	got := collect(t, s.Select(ctx, Query{
		Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "pod", "p000")},
		Start:    base, End: base,
	}))
	if want := fmt.Sprintf("{__name__=\"m0\", pod=\"p000\"} %d:401c000000000000\n", base); got != want {
		t.Errorf("read back %q, want %q: the last value written, 7", got, want)
	}
}

// TestWriteDuplicateSampleLastWins: on both backends, a sample written twice
// in one write, among other series that the sort moves around it, reads back
// as its last value. HBase applies a Multi's puts of one cell in the order
// sent; the sort must keep that order.
func TestWriteDuplicateSampleLastWins(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db table.DB, prefix string) {
		ctx := context.Background()
		s := openStore(t, db, Config{TablePrefix: prefix})
		base := 1_700_000_000_000 / hour * hour
		dup := lbls("__name__", "m0", "pod", "p000")
		batch := []SeriesIn{{Labels: dup, Samples: []Sample{{T: base, V: 1}, {T: base + 1, V: 2}}}}
		for i := 1; i < 100; i++ {
			batch = append(batch, SeriesIn{
				Labels:  lbls("__name__", "m0", "pod", fmt.Sprintf("p%03d", i)),
				Samples: []Sample{{T: base, V: float64(i)}},
			})
		}
		batch = append(batch, SeriesIn{Labels: dup, Samples: []Sample{{T: base + 1, V: 8}, {T: base, V: 7}}})
		if err := s.Write(ctx, batch); err != nil {
			t.Fatal(err)
		}
		got := collect(t, s.Select(ctx, Query{
			Matchers: []*labels.Matcher{mustMatcher(t, labels.MatchEqual, "pod", "p000")},
			Start:    base, End: base + 1,
		}))
		want := fmt.Sprintf("{__name__=\"m0\", pod=\"p000\"} %d:401c000000000000 %d:4020000000000000\n", base, base+1)
		if got != want {
			t.Errorf("read back %q, want %q: the last values written, 7 and 8", got, want)
		}
	})
}

// TestKeyPrefixOrder: ordering by keyPrefix, then by compareRest where
// the prefixes are equal, is bytes.Compare's order, for keys shorter and
// longer than the prefix and with zero bytes where a short key's padding
// is.
func TestKeyPrefixOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []byte
	key := func() ([]byte, rowRun) {
		n := rng.IntN(40)
		if rng.IntN(2) == 0 {
			n = rng.IntN(26) // more pairs about the prefix's length
		}
		start := len(buf)
		for range n {
			buf = append(buf, []byte{0, 1, 0x7f, 0x80, 0xff}[rng.IntN(5)])
		}
		k := buf[start:]
		var r rowRun
		r.k0, r.k1, r.k2 = keyPrefix(k)
		return k, r
	}
	for range 100000 {
		buf = buf[:0]
		a, ra := key()
		b, rb := key()
		if rng.IntN(4) == 0 {
			// Equal keys, and keys that differ past the prefix only.
			b, rb = a, ra
			if len(a) > 24 && rng.IntN(2) == 0 {
				start := len(buf)
				buf = append(buf, a...)
				buf[start+24+rng.IntN(len(a)-24)] ^= 0x80
				b = buf[start:]
				rb.k0, rb.k1, rb.k2 = keyPrefix(b)
			}
		}
		got := cmp.Or(cmp.Compare(ra.k0, rb.k0), cmp.Compare(ra.k1, rb.k1), cmp.Compare(ra.k2, rb.k2), compareRest(a, b))
		if want := bytes.Compare(a, b); got != want {
			t.Fatalf("%x against %x: %d by prefix, %d by bytes.Compare", a, b, got, want)
		}
	}
}
